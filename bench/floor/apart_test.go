package floor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveEnv, set, makes this test binary the floors' server apart (Serve)
// over a log under the directory it names.
const serveEnv = "FLOOR_TEST_SERVE"

// TestMain serves the floors when a test starts this binary again as
// their server apart.
func TestMain(m *testing.M) {
	if dir, ok := os.LookupEnv(serveEnv); ok {
		if err := Serve(dir, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestServe: the floors' server apart answers each "stats" line with its
// totals, refuses any other line, and ends with its input.
func TestServe(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(t.TempDir(), inR, outW)
		outW.Close()
	}()
	rd := bufio.NewReader(outR)
	addr, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("address %q, %v", addr, err)
	}
	if _, err := io.WriteString(inW, "stats\n"); err != nil {
		t.Fatal(err)
	}
	line, err := rd.ReadBytes('\n')
	var s Stats
	if err != nil || json.Unmarshal(line, &s) != nil || s.CPU <= 0 || s.Requests != 0 {
		t.Fatalf("stats %q (%+v), %v: want no request yet and the server's CPU", line, s, err)
	}
	if _, err := io.WriteString(inW, "quit\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), `not "quit"`) {
		t.Errorf("a line that is not stats: %v", err)
	}
	inW.Close()

	inR, inW = io.Pipe()
	go func() { done <- Serve(t.TempDir(), inR, io.Discard) }()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("the end of its input: %v, want a clean end", err)
	}
}

// TestApart runs the floor against a server in a process of its own (this
// test binary again): its totals count every acknowledged request and
// its own CPU, and closing it ends the process cleanly.
func TestApart(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	a, err := StartApart(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var acks atomic.Uint64
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	err = Drive(context.Background(), a.Addr(), Load{Conc: 2, Payload: 100, Record: func(time.Time, time.Time) { acks.Add(1) }}, stop)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if acks.Load() == 0 || s.Requests != acks.Load() || s.Commits == 0 || s.Syncs == 0 || s.Syncing <= 0 || s.CPU <= 0 {
		t.Errorf("%d acknowledged, totals %+v: want each request appended, synced, and the server's CPU", acks.Load(), s)
	}
	if err := a.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
