package wal

import (
	"bytes"
	"testing"
)

// FuzzDecodeEntry feeds journal entry bodies to the decoder: it must
// never panic, and whatever it accepts as a commit with data must encode
// back to the same body.
func FuzzDecodeEntry(f *testing.F) {
	j := &journal{}
	spans := []span{{session: sid(1), first: 1, last: 2}, {session: sid(2), first: 7, last: 7}}
	kvs := []kv{{key: []byte("k1"), val: []byte("v1")}, {key: []byte("key two"), val: nil}}
	f.Add(bytes.Clone(j.encodeCommit(3, spans, kvs)[entryHeaderLen:]))
	f.Add(bytes.Clone(j.encodeCommit(4, spans, nil)[entryHeaderLen:]))
	f.Add(bytes.Clone(encodeMarker(entryAcked, 9)[entryHeaderLen:]))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil || e.kvs == nil {
			return
		}
		again := (&journal{}).encodeCommit(e.commit, e.spans, e.kvs)[entryHeaderLen:]
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded %x, encodes back to %x", b, again)
		}
	})
}

// TestJournalEntryRoundTrip: a commit's entry with its data decodes to its
// spans and badger entries, and one without data to its spans alone.
func TestJournalEntryRoundTrip(t *testing.T) {
	j := &journal{}
	spans := []span{{session: sid(1), first: 1, last: 2}}
	kvs := []kv{{key: []byte("a"), val: []byte("value a")}, {key: []byte("b"), val: []byte{}}}
	for _, data := range [][]kv{kvs, nil} {
		e, err := decodeEntry(j.encodeCommit(5, spans, data)[entryHeaderLen:])
		if err != nil {
			t.Fatal(err)
		}
		if e.typ != entryCommit || e.commit != 5 || len(e.spans) != 1 || e.spans[0] != spans[0] || len(e.kvs) != len(data) {
			t.Fatalf("decoded %+v", e)
		}
		for i := range data {
			if !bytes.Equal(e.kvs[i].key, data[i].key) || !bytes.Equal(e.kvs[i].val, data[i].val) {
				t.Errorf("entry %d: %q=%q, want %q=%q", i, e.kvs[i].key, e.kvs[i].val, data[i].key, data[i].val)
			}
		}
	}
}
