package wal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// killEnv switches TestKillHelper on and names its log directory.
const killEnv = "WAL_KILL_HELPER_DIR"

const (
	killAppenders   = 16
	killPerAppender = 3 // sessions per appender
)

// TestKill9 re-executes the test binary as a child that appends under
// concurrent load and prints each acknowledged record, kills it with
// SIGKILL after a random number of acknowledgements, then reopens the log
// and checks that every acknowledged record is there with its data, that
// every session is dense from 1 and has its metadata. Rounds reuse the
// directory, so later rounds append to a recovered log.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	acked := map[[16]byte]uint64{}     // greatest acknowledged seq per session
	recovered := map[[16]byte]uint64{} // last seq per session after the last reopen
	for round := range 5 {
		target := 200 + r.IntN(2800)
		n := killRound(t, dir, target, acked, recovered)
		l, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		lasts := verifyLog(t, l)
		for s, seq := range acked {
			if lasts[s] < seq {
				t.Errorf("round %d: session %x: acknowledged seq %d, log ends at %d", round, s, seq, lasts[s])
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		recovered = lasts
		t.Logf("round %d: killed after %d acks (target %d); %d sessions recovered", round, n, target, len(lasts))
	}
}

// killRound runs one child until target acks, kills it, drains the acks it
// printed before dying into acked, and returns how many it read. A
// session's acks must run on from its recovered last seq, one by one.
func killRound(t *testing.T, dir string, target int, acked, recovered map[[16]byte]uint64) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	n, killed := 0, false
	for sc.Scan() {
		if s, seq, ok := parseAck(sc.Text()); ok {
			if want := max(acked[s], recovered[s]) + 1; seq != want {
				t.Errorf("session %x: ack of seq %d, want %d", s, seq, want)
			}
			acked[s] = seq
			n++
		}
		if n >= target && !killed {
			killed = true
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if !killed || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child ended by itself after %d acks: %v\n%s", n, err, stderr.Bytes())
	}
	return n
}

// parseAck parses "ack <session hex> <seq> ok"; a torn line fails.
func parseAck(line string) ([16]byte, uint64, bool) {
	var s [16]byte
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ack" || f[3] != "ok" {
		return s, 0, false
	}
	b, err := hex.DecodeString(f[1])
	seq, err2 := strconv.ParseUint(f[2], 10, 64)
	if err != nil || err2 != nil || len(b) != 16 {
		return s, 0, false
	}
	copy(s[:], b)
	return s, seq, true
}

// TestKillHelper is the child process of TestKill9; it is skipped unless
// killEnv is set. It appends until killed, printing an ack line for each
// record after its Append returned nil.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv(killEnv)
	if dir == "" {
		t.Skip("helper process of TestKill9")
	}
	time.AfterFunc(50*time.Second, func() { os.Exit(3) }) // never outlive the parent
	l, err := Open(Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex // serialises ack writes
	for g := range killAppenders {
		go func() {
			err := killAppender(l, g, &mu)
			fmt.Fprintf(os.Stderr, "appender %d: %v\n", g, err)
			os.Exit(2)
		}()
	}
	select {}
}

// killAppender appends forever to its sessions, 1 or 2 at a time with 1-3
// records each, and prints the acks of each successful Append.
func killAppender(l *Log, g int, mu *sync.Mutex) error {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
	next := make([]uint64, killPerAppender)
	for i := range next {
		last, err := l.LastSeq(ctx, sid(g*killPerAppender+i))
		if err != nil {
			return err
		}
		next[i] = last + 1
	}
	var line []byte
	for {
		var writes []Write
		var ks []int
		first := r.IntN(killPerAppender)
		for i := range 1 + r.IntN(2) {
			k := (first + i) % killPerAppender
			writes = append(writes, mkWrite(sid(g*killPerAppender+k), next[k], 1+r.IntN(3)))
			ks = append(ks, k)
		}
		if err := l.Append(ctx, writes...); err != nil {
			return err
		}
		line = line[:0]
		for j, w := range writes {
			for _, rec := range w.Records {
				line = fmt.Appendf(line, "ack %x %d ok\n", w.Session, rec.Seq)
			}
			next[ks[j]] += uint64(len(w.Records))
		}
		mu.Lock()
		_, err := os.Stdout.Write(line)
		mu.Unlock()
		if err != nil {
			return err
		}
	}
}
