package wal_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/hubd/hubd/wal"
)

func Example() {
	l, err := wal.Open(wal.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	ctx := context.Background()
	session := [16]byte{0x01, 15: 0x2a}

	// The first append of a session carries its metadata.
	err = l.Append(ctx, wal.Write{
		Session: session,
		Meta:    []byte(`{"name":"demo"}`),
		Records: []wal.Record{{Seq: 1, Data: []byte("hello")}, {Seq: 2, Data: []byte("world")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Later appends continue at last + 1.
	if err := l.Append(ctx, wal.Write{Session: session, Records: []wal.Record{{Seq: 3, Data: []byte("!")}}}); err != nil {
		log.Fatal(err)
	}
	// Anything else is rejected, and nothing of it is written.
	err = l.Append(ctx, wal.Write{Session: session, Records: []wal.Record{{Seq: 5, Data: []byte("?")}}})
	fmt.Println("seq 5:", errors.Is(err, wal.ErrGap))

	err = l.Scan(ctx, session, 2, func(seq uint64, data []byte) error {
		fmt.Printf("%d %s\n", seq, data)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	last, _ := l.LastSeq(ctx, session)
	meta, _ := l.Meta(ctx, session)
	fmt.Printf("last %d meta %s\n", last, meta)
	// Output:
	// seq 5: true
	// 2 world
	// 3 !
	// last 3 meta {"name":"demo"}
}

func ExampleLog_ScanAll() {
	l, err := wal.Open(wal.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	ctx := context.Background()
	a, b := [16]byte{0xa}, [16]byte{0xb}
	// One Append can write several sessions, atomically.
	err = l.Append(ctx,
		wal.Write{Session: b, Meta: []byte("b"), Records: []wal.Record{{Seq: 1, Data: []byte("b1")}}},
		wal.Write{Session: a, Meta: []byte("a"), Records: []wal.Record{{Seq: 1, Data: []byte("a1")}, {Seq: 2, Data: []byte("a2")}}},
	)
	if err != nil {
		log.Fatal(err)
	}
	// ScanAll goes session by session in key order, seqs ascending.
	err = l.ScanAll(ctx, func(s [16]byte, seq uint64, data []byte) error {
		fmt.Printf("%x %d %s\n", s[0], seq, data)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	err = l.Sessions(ctx, func(s [16]byte, meta []byte, last uint64) error {
		fmt.Printf("session %x meta %s last %d\n", s[0], meta, last)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// a 1 a1
	// a 2 a2
	// b 1 b1
	// session a meta a last 2
	// session b meta b last 1
}
