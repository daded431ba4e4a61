package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

func TestAssign(t *testing.T) {
	for _, c := range [][2]int{{2, 1}, {16, 8}, {128, 64}, {3, 1}, {3, 4}, {5, 2}, {7, 3}, {4, 10}, {1000, 1}} {
		agents, sessions := c[0], c[1]
		plan := assign(agents, sessions)
		if len(plan) != sessions {
			t.Fatalf("%v: %d sessions", c, len(plan))
		}
		seen := make([]bool, agents)
		for j, members := range plan {
			if len(members) < 2 {
				t.Errorf("%v: session %d has %v", c, j, members)
			}
			sorted := slices.Sorted(slices.Values(members))
			if len(slices.Compact(sorted)) != len(members) {
				t.Errorf("%v: session %d repeats an agent: %v", c, j, members)
			}
			for _, i := range members {
				seen[i] = true
			}
		}
		if slices.Contains(seen, false) {
			t.Errorf("%v: an agent is in no session: %v", c, plan)
		}
	}
}

func TestGraph(t *testing.T) {
	want := `{"version":1,"initial_speaker":"a0","transitions":[{"when":{"name":"always","args":{}},"then":{"name":"round_robin","args":{}},"priority":0}],"default_target":{"name":"terminate","args":{"reason":"after_work"}},"max_turns":1073741824}`
	if got, err := graph([]string{"a0", "a1"}, 0).JSON(); err != nil || got != want {
		t.Errorf("graph: %v\n got %s\nwant %s", err, got, want)
	}
	js, err := graph([]string{"a0", "a1"}, 7).JSON()
	var g struct {
		MaxTurns int `json:"max_turns"`
	}
	if err != nil || json.Unmarshal([]byte(js), &g) != nil || g.MaxTurns != 7 {
		t.Errorf("max_turns: %v %s", err, js)
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := q * 100000 * float64(time.Microsecond)
		if got := float64(h.quantile(q)); math.Abs(got-want)/want > 0.01 {
			t.Errorf("q%v = %v, want %v within 1%%", q, time.Duration(got), time.Duration(want))
		}
	}
	if h.quantile(1) != 100*time.Millisecond || h.count() != 100000 {
		t.Errorf("max %v count %d", h.quantile(1), h.count())
	}
	if m := h.mean(); m < 49*time.Millisecond || m > 51*time.Millisecond {
		t.Errorf("mean %v", m)
	}
	var empty histogram
	if empty.quantile(0.5) != 0 || empty.mean() != 0 {
		t.Error("an empty histogram reports a value")
	}
}

func TestBuckets(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 255, 256, 257, 258, 511, 512, 513, 1 << 20, 1<<40 + 12345, math.MaxInt64} {
		i := bucketOf(v)
		if i < prev || i >= histBuckets {
			t.Errorf("bucket of %d is %d (previous %d)", v, i, prev)
		}
		prev = i
		if mid := bucketMid(i); math.Abs(float64(mid-v)) > float64(v)/128+1 {
			t.Errorf("bucket %d of %d has middle %d", i, v, mid)
		}
	}
}

func TestCorrelator(t *testing.T) {
	var c correlator
	t0 := time.Now()
	if _, ok := c.sent(5, t0); ok {
		t.Error("told before anyone was told")
	}
	if start, d, ok := c.toldAt(5, t0.Add(time.Millisecond)); !ok || d != time.Millisecond || !start.Equal(t0) {
		t.Errorf("ack then told: %v %v", d, ok)
	}
	if _, _, ok := c.toldAt(6, t0.Add(3*time.Millisecond)); ok {
		t.Error("matched a send not acknowledged")
	}
	if d, ok := c.sent(6, t0.Add(time.Millisecond)); !ok || d != 2*time.Millisecond {
		t.Errorf("told then ack: %v %v", d, ok)
	}
	for seq := uint64(10); seq < 100; seq++ {
		c.sent(seq, t0)
	}
	if len(c.start) > 20 {
		t.Errorf("the correlator keeps %d old sends", len(c.start))
	}
}

func TestReadVerify(t *testing.T) {
	in := "0190d5a8-0000-7000-8000-000000000000 1 m-1\n0190d5a8-0000-7000-8000-000000000000 2 m-2\n0190d5a8-0000-7000-8000-00000"
	recs, partial, err := readVerify(strings.NewReader(in))
	if err != nil || !partial || len(recs) != 2 || recs[1].seq != 2 || recs[1].msgID != "m-2" {
		t.Fatalf("%v %v %+v", err, partial, recs)
	}
	line := string(recs[0].appendLine(nil))
	if line != "0190d5a8-0000-7000-8000-000000000000 1 m-1\n" {
		t.Errorf("line %q", line)
	}
	for _, bad := range []string{"a 1\n", "a 0 x\n", "a -1 x\n", "a 1 x y\n", "a  1 x\n"} {
		if _, _, err := readVerify(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:7420", "127.1.2.3:1", "[::1]:7420", "localhost:7420", "LOCALHOST:1"} {
		if err := checkLoopback("--hub", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"10.0.0.1:7420", "[::]:7420", "hubd.internal:7420", "127.0.0.1", ":7420", "127.0.0.1:"} {
		if err := checkLoopback("--hub", bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestReasonOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&agentsdk.Error{Op: "send", Code: codes.FailedPrecondition, Reason: "OUT_OF_TURN"}, "OUT_OF_TURN"},
		{fmt.Errorf("wrapped: %w", &agentsdk.Error{Op: "send", Code: codes.Unavailable}), "UNAVAILABLE"},
		{&agentsdk.Error{Op: "subscribe", Code: codes.ResourceExhausted}, "RESOURCE_EXHAUSTED"},
		{fmt.Errorf("agentsdk: send: %w", context.Canceled), "CANCELED"},
		{errors.New("boom"), "ERROR"},
	} {
		if got := reasonOf(c.err); got != c.want {
			t.Errorf("reasonOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if got := codeName(codes.FailedPrecondition.String()); got != "FAILED_PRECONDITION" {
		t.Errorf("got %s", got)
	}
}

// TestSessionLog checks what --check sees in one session's log: gaps, and
// envelopes after the one that ended the session.
func TestSessionLog(t *testing.T) {
	env := func(seq uint64, typ string) *hubpb.Envelope {
		return &hubpb.Envelope{Seq: seq, Type: typ, ClientMsgId: "m"}
	}
	for _, c := range []struct {
		log            []*hubpb.Envelope
		gaps, reopened int
	}{
		{[]*hubpb.Envelope{env(1, "session_invite"), env(2, "text"), env(3, "session_closed")}, 0, 0},
		{[]*hubpb.Envelope{env(1, "text"), env(3, "text")}, 1, 0},
		{[]*hubpb.Envelope{env(1, "text"), env(2, "session_expired"), env(3, "text"), env(4, "session_closed")}, 0, 2},
	} {
		lg := sessionLog{id: "s", ids: map[uint64]string{}}
		for _, e := range c.log {
			if err := lg.add(e); err != nil {
				t.Fatal(err)
			}
		}
		if len(lg.gaps) != c.gaps || len(lg.reopened) != c.reopened {
			t.Errorf("%v: gaps %q reopened %q, want %d and %d", c.log, lg.gaps, lg.reopened, c.gaps, c.reopened)
		}
	}
	lg := sessionLog{id: "s", ids: map[uint64]string{}}
	if lg.add(env(2, "text")) != nil || lg.add(env(1, "text")) == nil {
		t.Error("a log going back in seq is not refused")
	}
}

func TestParseProcStatus(t *testing.T) {
	p := parseProcStatus([]byte("Name:\thubd\nVmRSS:\t   51944 kB\nThreads:\t10\n"))
	if p.rssKiB != 51944 || p.threads != 10 {
		t.Errorf("%+v", p)
	}
	if readProc(0) != (procStatus{}) {
		t.Error("pid 0 read")
	}
	stat := "367 (hub d) S 1 367 0 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 10 0"
	if got := parseProcCPU([]byte(stat)); got != 3*time.Second {
		t.Errorf("utime+stime %v, want 3s", got)
	}
	busy, total := parseMachineCPU([]byte("cpu  100 0 50 800 50 0 0 0 7 0\ncpu0 1 2 3\n"))
	if busy != 1500*time.Millisecond || total != 10*time.Second {
		t.Errorf("machine busy %v total %v", busy, total)
	}
	if self := selfCPU(); self <= 0 {
		t.Errorf("own CPU time %v", self)
	}
}
