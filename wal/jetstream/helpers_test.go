package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/natstest"
)

// testMeta is the tests' metadata: "meta:" and the root's 16 bytes.
func testMeta(root [16]byte) []byte { return append([]byte("meta:"), root[:]...) }

// testRoot reads testMeta.
func testRoot(s [16]byte, meta []byte) ([16]byte, error) {
	rest, ok := bytes.CutPrefix(meta, []byte("meta:"))
	if !ok || len(rest) != 16 {
		return s, fmt.Errorf("not test metadata: %q", meta)
	}
	return [16]byte(rest), nil
}

// id returns a session id starting and ending with n.
func id(n byte) [16]byte {
	var s [16]byte
	s[0], s[15] = n, n
	return s
}

// idIn returns a root id in partition part of p, from n up.
func idIn(t testing.TB, n byte, part, p int) [16]byte {
	t.Helper()
	for i := range 4096 {
		s := id(n)
		s[1], s[2] = byte(i), byte(i>>8)
		if Partition(s, p) == part {
			return s
		}
	}
	t.Fatalf("no id in partition %d", part)
	return [16]byte{}
}

// openLog opens a log on nc with small settings for tests.
func openLog(t testing.TB, nc *nats.Conn, o Options) *Log {
	t.Helper()
	o.Conn = nc
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Root == nil {
		o.Root = testRoot
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// single starts one server and opens a log owning every partition.
func single(t testing.TB) (*natstest.Cluster, *Log) {
	t.Helper()
	c := natstest.RunServer(t)
	return c, openLog(t, c.Connect(t), Options{OwnAll: true})
}

// recs builds records from seq first with payloads "<tag>-<seq>".
func recs(tag string, first, n uint64) []Record {
	out := make([]Record, n)
	for i := range out {
		seq := first + uint64(i)
		out[i] = Record{Seq: seq, Data: fmt.Appendf(nil, "%s-%d", tag, seq)}
	}
	return out
}

// open is the write that starts a root session with n records.
func open(s [16]byte, n uint64) Write {
	return Write{Session: s, Meta: testMeta(s), Records: recs("r", 1, n)}
}

// openChild starts a child of root with n records.
func openChild(s, root [16]byte, n uint64) Write {
	return Write{Session: s, Meta: testMeta(root), Records: recs("r", 1, n)}
}

// more appends n records from seq first.
func more(s [16]byte, first, n uint64) Write {
	return Write{Session: s, Records: recs("r", first, n)}
}

func mustAppend(t testing.TB, l *Log, ws ...Write) {
	t.Helper()
	if err := l.Append(context.Background(), ws...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// scanAll returns a session's records from seq from as "seq:data".
func scanAll(t testing.TB, l *Log, s [16]byte, from uint64) []string {
	t.Helper()
	var out []string
	err := l.Scan(context.Background(), s, from, func(seq uint64, data []byte) error {
		out = append(out, fmt.Sprintf("%d:%s", seq, data))
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return out
}

// want checks that a session holds exactly records 1..n written by recs.
func wantDense(t testing.TB, l *Log, s [16]byte, n uint64) {
	t.Helper()
	got := scanAll(t, l, s, 1)
	if uint64(len(got)) != n {
		t.Fatalf("session %x: %d records, want %d: %v", s[:2], len(got), n, got)
	}
	for i, g := range got {
		if w := fmt.Sprintf("%d:r-%d", i+1, i+1); g != w {
			t.Fatalf("session %x record %d = %q, want %q", s[:2], i, g, w)
		}
	}
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

func natstestServer(t testing.TB) *natstest.Cluster { return natstest.RunServer(t) }
