package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
)

// sid is a deterministic session id for test index i.
func sid(i int) [16]byte {
	var s [16]byte
	binary.BigEndian.PutUint64(s[:8], 0x5e55_0000_0000_0000|uint64(i))
	binary.BigEndian.PutUint64(s[8:], uint64(i)*0x9e3779b97f4a7c15)
	return s
}

// recData is the data of record seq of session s: derivable, so a reader
// can check every record it finds. Length varies from 20 to ~100 bytes.
func recData(s [16]byte, seq uint64) []byte {
	b := fmt.Appendf(nil, "%x/%d/", s, seq)
	for i := uint64(0); i < (seq*7+uint64(s[15]))%64; i++ {
		b = append(b, byte('a'+(seq+i)%26))
	}
	return b
}

// metaData is the metadata of session s.
func metaData(s [16]byte) []byte { return fmt.Appendf(nil, "meta:%x", s) }

// mkWrite builds the write of records first..first+n-1 of s, with metadata
// when first == 1.
func mkWrite(s [16]byte, first uint64, n int) Write {
	w := Write{Session: s}
	if first == 1 {
		w.Meta = metaData(s)
	}
	for i := range n {
		seq := first + uint64(i)
		w.Records = append(w.Records, Record{Seq: seq, Data: recData(s, seq)})
	}
	return w
}

// openMem opens an in-memory log closed at the end of the test.
func openMem(t testing.TB) *Log {
	t.Helper()
	l, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// mustAppend appends and fails the test on error.
func mustAppend(t testing.TB, l *Log, writes ...Write) {
	t.Helper()
	if err := l.Append(context.Background(), writes...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// verifyLog checks the whole log: every session from Sessions has its
// metadata and dense records 1..last with derivable data, ScanAll agrees
// with Scan and LastSeq, and no record belongs to a session without
// metadata. It returns the last seq of each session.
func verifyLog(t testing.TB, l *Log) map[[16]byte]uint64 {
	t.Helper()
	ctx := context.Background()
	lasts := map[[16]byte]uint64{}
	err := l.Sessions(ctx, func(s [16]byte, meta []byte, last uint64) error {
		if !bytes.Equal(meta, metaData(s)) {
			return fmt.Errorf("session %x: meta %q", s, meta)
		}
		lasts[s] = last
		return nil
	})
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	seen := map[[16]byte]uint64{}
	err = l.ScanAll(ctx, func(s [16]byte, seq uint64, data []byte) error {
		if seq != seen[s]+1 {
			return fmt.Errorf("session %x: seq %d after %d", s, seq, seen[s])
		}
		if !bytes.Equal(data, recData(s, seq)) {
			return fmt.Errorf("session %x seq %d: data %q", s, seq, data)
		}
		seen[s] = seq
		return nil
	})
	if err != nil {
		t.Fatalf("ScanAll: %v", err)
	}
	for s, last := range seen {
		if lasts[s] != last {
			t.Fatalf("session %x: ScanAll last %d, Sessions last %d (meta present: %v)", s, last, lasts[s], lasts[s] != 0)
		}
	}
	for s, last := range lasts {
		verifySession(t, l, s, last)
	}
	return lasts
}

// verifySession checks LastSeq and Scan of one session against last.
func verifySession(t testing.TB, l *Log, s [16]byte, last uint64) {
	t.Helper()
	ctx := context.Background()
	got, err := l.LastSeq(ctx, s)
	if err != nil || got != last {
		t.Fatalf("LastSeq(%x) = %d, %v; want %d", s, got, err, last)
	}
	want := uint64(1)
	err = l.Scan(ctx, s, 0, func(seq uint64, data []byte) error {
		if seq != want || !bytes.Equal(data, recData(s, seq)) {
			return fmt.Errorf("seq %d (want %d) data %q", seq, want, data)
		}
		want++
		return nil
	})
	if err != nil || want != last+1 {
		t.Fatalf("Scan(%x): %v, ended at %d, want last %d", s, err, want-1, last)
	}
}
