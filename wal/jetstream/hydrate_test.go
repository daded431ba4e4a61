package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestHydrate(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	root := id(1)
	child := id(2)
	k := l.PartitionOf(root)
	mustAppend(t, l, open(root, 1))
	mustAppend(t, l, more(root, 2, 1), openChild(child, root, 1))
	mustAppend(t, l, more(child, 2, 2))
	mustAppend(t, l, more(root, 3, 1))
	mustAppend(t, l, open(idIn(t, 3, (k+1)%4, 4), 1)) // another partition
	var got []string
	st, err := l.Hydrate(ctx, k, Visitor{
		Meta: func(s [16]byte, meta []byte) error {
			got = append(got, fmt.Sprintf("meta %d", s[0]))
			return nil
		},
		Record: func(s [16]byte, seq uint64, data []byte) error {
			got = append(got, fmt.Sprintf("%d/%d:%s", s[0], seq, data))
			return nil
		},
	})
	want := []string{"meta 1", "1/1:r-1", "1/2:r-2", "meta 2", "2/1:r-1", "2/2:r-2", "2/3:r-3", "1/3:r-3"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Hydrate = %v, %v; want %v", got, err, want)
	}
	if st.Sessions != 2 || st.Records != 6 || st.Broken != 0 {
		t.Errorf("stats %+v", st)
	}
	// A fresh log that hydrated appends without reading tails, fenced.
	fresh := openLog(t, l.nc, Options{})
	if _, err := fresh.Hydrate(ctx, k, Visitor{}); err != nil {
		t.Fatal(err)
	}
	fresh.Own(k)
	mustAppend(t, fresh, more(root, 4, 1), more(child, 4, 1))
	wantErr(t, l.Append(ctx, more(root, 4, 1)), ErrFenced) // l's tail of root is stale
	wantDense(t, l, root, 4)
	mustAppend(t, l, more(root, 5, 1))           // l has read the tail again
	st, err = l.Hydrate(ctx, (k+2)%4, Visitor{}) // an empty partition
	if err != nil || st != (HydrateStats{}) {
		t.Fatalf("Hydrate of an empty partition = %+v, %v", st, err)
	}
}

// rawPublish stores a message as another program could, bypassing Append.
func rawPublish(t *testing.T, l *Log, subj, msgID string, payload []byte) {
	t.Helper()
	m := &nats.Msg{Subject: subj, Header: nats.Header{}, Data: payload}
	if msgID != "" {
		m.Header.Set(hdrMsgID, msgID)
	}
	resp, err := l.nc.RequestMsg(m, 5e9)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("raw publish %s: %s", subj, resp.Data)
}

func TestCorruption(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	k := 1
	a, b, gap, orphan := idIn(t, 1, k, 4), idIn(t, 2, k, 4), idIn(t, 3, k, 4), idIn(t, 4, k, 4)
	mustAppend(t, l, open(a, 2))
	mustAppend(t, l, open(b, 2))
	mustAppend(t, l, open(gap, 1))
	bad := frame(a, 3, kindRecord, []byte("r-3"))
	bad[len(bad)-1] ^= 1
	rawPublish(t, l, l.y.subject(k, kindRecord, a), msgID(a, 3), bad)
	rawPublish(t, l, l.y.subject(k, kindRecord, gap), msgID(gap, 3), frame(gap, 3, kindRecord, []byte("r-3")))
	rawPublish(t, l, l.y.subject(k, kindRecord, orphan), msgID(orphan, 1), frame(orphan, 1, kindRecord, []byte("r-1")))
	moved := frame(b, 1, kindRecord, []byte("r-1")) // b's seq 1 stored as seq 3
	rawPublish(t, l, l.y.subject(k, kindRecord, b), msgID(b, 3), moved)

	for s, want := range map[[16]byte]error{a: ErrCorrupt, b: ErrCorrupt, gap: ErrGap} {
		err := l.Scan(ctx, s, 1, func(uint64, []byte) error { return nil })
		if !errors.Is(err, want) {
			t.Errorf("Scan of %d = %v, want %v", s[0], err, want)
		}
	}
	if _, err := l.Hydrate(ctx, k, Visitor{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Hydrate without Broken = %v, want ErrCorrupt", err)
	}
	broken := map[byte]error{}
	records := map[byte]uint64{}
	_, err := l.Hydrate(ctx, k, Visitor{
		Record: func(s [16]byte, seq uint64, _ []byte) error { records[s[0]] = seq; return nil },
		Broken: func(s [16]byte, err error) { broken[s[0]] = err },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) != 4 || !errors.Is(broken[1], ErrCorrupt) || !errors.Is(broken[2], ErrCorrupt) ||
		!errors.Is(broken[3], ErrGap) || !errors.Is(broken[4], ErrCorrupt) {
		t.Errorf("broken sessions %v", broken)
	}
	if records[1] != 2 || records[2] != 2 || records[3] != 1 {
		t.Errorf("records before the damage %v", records)
	}
	rawPublish(t, l, fmt.Sprintf("hub.p%d.x.y", k), "", []byte("?"))
	if _, err := l.Hydrate(ctx, k, Visitor{Broken: func([16]byte, error) {}}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Hydrate over a foreign subject without Foreign = %v, want ErrCorrupt", err)
	}
}

// TestHydrateForeign: messages whose subjects name no session of the
// partition (anything another program publishes into hub.p<k>.>) are
// skipped and reported to Foreign, with their subjects and stream seqs,
// and the partition's sessions load around them, those written after them
// included.
func TestHydrateForeign(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	k := 2
	a, b := idIn(t, 1, k, 4), idIn(t, 2, k, 4)
	mustAppend(t, l, open(a, 2))
	foreign := []string{
		fmt.Sprintf("hub.p%d.junk", k),
		fmt.Sprintf("hub.p%d.s.not-a-session", k),
		fmt.Sprintf("hub.p%d.m.%s.extra", k, formatUUID(b)),
		fmt.Sprintf("hub.p%d.s.ABCDEF01-0000-0000-0000-000000000000", k), // not the canonical form
	}
	for _, subj := range foreign {
		rawPublish(t, l, subj, "", []byte("junk"))
	}
	mustAppend(t, l, open(b, 1))
	mustAppend(t, l, more(a, 3, 1))
	var got []string
	records := map[byte]uint64{}
	st, err := l.Hydrate(ctx, k, Visitor{
		Record: func(s [16]byte, seq uint64, _ []byte) error { records[s[0]] = seq; return nil },
		Broken: func(s [16]byte, err error) { t.Errorf("session %d reported broken: %v", s[0], err) },
		Foreign: func(subj string, sseq uint64, err error) {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), subj) {
				t.Errorf("foreign %s: %v, want ErrCorrupt naming the subject", subj, err)
			}
			got = append(got, fmt.Sprintf("%s@%d", subj, sseq))
		},
	})
	if err != nil {
		t.Fatalf("Hydrate over foreign subjects: %v", err)
	}
	var want []string
	for i, subj := range foreign {
		want = append(want, fmt.Sprintf("%s@%d", subj, 4+i)) // after a's metadata and three records
	}
	if !slices.Equal(got, want) {
		t.Errorf("foreign messages reported %v, want %v", got, want)
	}
	if records[1] != 3 || records[2] != 1 || st.Sessions != 2 || st.Foreign != len(foreign) || st.Broken != 0 {
		t.Errorf("records %v, stats %+v", records, st)
	}
	// The log appends to both sessions after the load.
	mustAppend(t, l, more(a, 4, 1), more(b, 2, 1))
}
