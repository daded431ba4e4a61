package bus

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartNATSPortTaken: a server given a port that is taken fails at
// once with ErrNATSStart naming the port, instead of waiting out its
// ReadyTimeout, and one given a free port starts.
func TestStartNATSPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port

	cases := []struct {
		name string
		cfg  NATSConfig
	}{
		{"client port", NATSConfig{Name: "c", StoreDir: t.TempDir(), Port: port}},
		{"route port", NATSConfig{Name: "r", StoreDir: t.TempDir(), ClusterPort: port,
			Routes: []string{RouteURL("127.0.0.1", port)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.ReadyTimeout = time.Minute
			start := time.Now()
			s, err := StartNATS(tc.cfg)
			if err == nil {
				s.Shutdown()
				t.Fatal("StartNATS on a taken port: no error")
			}
			if !errors.Is(err, ErrNATSStart) {
				t.Fatalf("err = %v, want ErrNATSStart", err)
			}
			if !strings.Contains(err.Error(), ":"+strconv.Itoa(port)) && !strings.Contains(err.Error(), " "+strconv.Itoa(port)) {
				t.Errorf("err = %v, want the port %d named", err, port)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("failed after %v: it waited out the ready timeout", d)
			}
		})
	}

	s, err := StartNATS(NATSConfig{Name: "free", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartNATS on a free port: %v", err)
	}
	s.Shutdown()
	s.WaitForShutdown()
}
