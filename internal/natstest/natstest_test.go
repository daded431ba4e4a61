package natstest

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hubd/hubd/internal/cluster/bus"
)

// TestStartAllNewPorts: a port taken between its pick and the server's
// listen costs one more attempt on new ports, not the test.
func TestStartAllNewPorts(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().(*net.TCPAddr).Port

	c := &Cluster{t: t}
	dir := tempDir(t)
	attempts := 0
	c.startAll(func() []bus.NATSConfig {
		attempts++
		port := busy
		if attempts > 1 {
			port = FreePorts(t, 1)[0]
		}
		return []bus.NATSConfig{{Name: "n0", StoreDir: filepath.Join(dir, "n0"), Port: port}}
	}, nil)
	if attempts != 2 {
		t.Fatalf("started after %d attempts, want 2", attempts)
	}
	if c.configs[0].Port == busy {
		t.Fatalf("started on the taken port %d", busy)
	}
	c.Connect(t).Close()
}

// TestFreePorts: the ports are distinct, free, and below the ephemeral
// range when there is room there.
func TestFreePorts(t *testing.T) {
	ports := FreePorts(t, 20)
	seen := map[int]bool{}
	low := ephemeralLow()
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice in %v", p, ports)
		}
		seen[p] = true
		if low > 11000 && (p < 10000 || p >= low) {
			t.Errorf("port %d outside [10000, %d)", p, low)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		l.Close()
	}
}
