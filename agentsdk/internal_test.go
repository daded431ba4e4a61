package agentsdk

import (
	"testing"
	"time"
)

func TestIsLoopback(t *testing.T) {
	for target, want := range map[string]bool{
		"127.0.0.1:7420":             true,
		"localhost:7420":             true,
		"[::1]:7420":                 true,
		"dns:///localhost:7420":      true,
		"passthrough:///127.0.0.2:1": true,
		"unix:///run/hubd.sock":      true,
		"10.0.0.1:7420":              false,
		"hub.example.com:443":        false,
		"dns:///hub.example.com":     false,
	} {
		if got := isLoopback(target); got != want {
			t.Errorf("isLoopback(%q) = %v", target, got)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	for n := 1; n < 40; n++ {
		d := backoffDelay(n, base, max)
		ceil := min(base<<min(n-1, 20), max)
		if d < ceil/2 || d > ceil {
			t.Errorf("attempt %d: %v outside [%v, %v]", n, d, ceil/2, ceil)
		}
	}
}
