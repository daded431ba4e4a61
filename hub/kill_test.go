package hub_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

const killDirEnv = "HUBD_KILL_TEST_DIR"

// TestKill9 runs a hub in a child process under concurrent load, kills it
// with SIGKILL at a random moment, and checks after each restart that every
// acknowledged envelope is in the log with its content, that every session
// acknowledged as closed is closed, and that nothing is quarantined (seqs
// dense, records decodable). Several rounds share one data directory.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 rounds take a few seconds")
	}
	dir := t.TempDir()
	for round := 1; round <= 4; round++ {
		acks := runUntilKilled(t, dir, round, 300+rand.IntN(1500))
		verifyAfterKill(t, dir, acks)
		t.Logf("round %d: %d acknowledged envelopes verified", round, len(acks))
	}
}

type ackRecord struct {
	id     session.ID
	seq    uint64
	cmid   string
	closed bool
}

func runUntilKilled(t *testing.T, dir string, round, after int) []ackRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir, "HUBD_KILL_ROUND="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []ackRecord
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acks) < after {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[0] != "ack" {
			continue
		}
		seq, _ := strconv.ParseUint(f[2], 10, 64)
		acks = append(acks, ackRecord{id: session.MustParseID(f[1]), seq: seq, cmid: f[3], closed: f[4] == "closed"})
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if len(acks) < after {
		t.Fatalf("round %d: child stopped after %d acks", round, len(acks))
	}
	return acks
}

func verifyAfterKill(t *testing.T, dir string, acks []ackRecord) {
	t.Helper()
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if q := h.Quarantined(); len(q) != 0 {
		t.Fatalf("quarantined after kill: %v", q)
	}
	ctx := context.Background()
	for _, a := range acks {
		es, _, err := h.ReadLog(ctx, "", true, a.id, a.seq, 1)
		if err != nil || len(es) != 1 || es[0].GetClientMsgId() != a.cmid {
			t.Fatalf("acknowledged %v seq %d (%s) missing after kill: %v %v", a.id, a.seq, a.cmid, es, err)
		}
		if a.closed {
			info, err := h.Get(ctx, "", true, a.id)
			if st, _ := session.ParseState(info.GetState()); err != nil || !st.Ended() {
				t.Fatalf("session %v acknowledged closed is %v after kill (%v)", a.id, info.GetState(), err)
			}
		}
	}
}

// TestKillHelper is the child process of TestKill9.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("only run as TestKill9's child")
	}
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	report := func(id session.ID, a *hubpb.SendResponse, cmid string) {
		mu.Lock()
		closed := "open"
		if a.GetClosed() {
			closed = "closed"
		}
		fmt.Fprintf(w, "ack %v %d %s %s\n", id, a.GetSeq(), cmid, closed)
		w.Flush()
		mu.Unlock()
	}
	round := os.Getenv("HUBD_KILL_ROUND")
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			killLoad(h, round, g, report)
		}()
	}
	wg.Wait()
}

// killLoad opens conversations and sends into them until killed; about one
// send in 20 finishes its session.
func killLoad(h *served, round string, g int, report func(session.ID, *hubpb.SendResponse, string)) {
	ctx := context.Background()
	for n := 0; ; n++ {
		o, err := h.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}, Expectations: &hubpb.Expectations{}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "open:", err)
			os.Exit(2)
		}
		id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
		for i := 0; ; i++ {
			cmid := fmt.Sprintf("r%s-g%d-s%d-%d", round, g, n, i)
			e := textEnv(strings.Repeat("x", 200))
			if rand.IntN(20) == 0 {
				e = &hubpb.Envelope{Type: session.EventPacket, Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "bye",
					Routing: &hubpb.Routing{Kind: session.RouteFinish}}}}
			}
			e.ClientMsgId = cmid
			a, err := h.Send(ctx, []string{"a", "b"}[i%2], id, e)
			if err != nil {
				fmt.Fprintln(os.Stderr, "send:", err)
				os.Exit(2)
			}
			report(id, a, cmid)
			if a.GetClosed() {
				break
			}
		}
	}
}
