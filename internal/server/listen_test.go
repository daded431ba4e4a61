package server

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
)

// TestListenError: a taken gRPC or HTTP address fails Start with a
// ListenError naming the side and the address.
func TestListenError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tc := range []struct {
		cfg  Config
		side string
	}{
		{Config{Listen: addr, InMemory: true, Logger: zerolog.Nop()}, "grpc"},
		{Config{Listen: "127.0.0.1:0", HTTP: addr, InMemory: true, Logger: zerolog.Nop()}, "http"},
	} {
		srv, err := Start(context.Background(), tc.cfg)
		if err == nil {
			srv.Shutdown(context.Background())
		}
		var le *ListenError
		if !errors.As(err, &le) || le.Side != tc.side || le.Addr != addr || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("%s on a taken address: %v (%#v)", tc.side, err, le)
		}
	}
}

func TestWebURL(t *testing.T) {
	for _, tc := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:7421", false, "http://127.0.0.1:7421/"},
		{"127.0.0.1:7421", true, "https://127.0.0.1:7421/"},
		{"0.0.0.0:7421", false, "http://localhost:7421/"},
		{"[::]:7421", true, "https://localhost:7421/"},
		{"[::1]:7421", false, "http://[::1]:7421/"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := webURL(a, tc.tls); got != tc.want {
			t.Errorf("webURL(%s, %v) = %q, want %q", tc.addr, tc.tls, got, tc.want)
		}
	}
}
