package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

func protoJSON(m proto.Message) ([]byte, error) {
	return protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
}

func runLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return exitcode.Usage("log: want verify")
	}
	fs := newFlags("log verify", stderr)
	data := fs.String("data", "./hubd-data", "the data directory to check (the hub must not be running on it)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	return verifyLog(ctx, *data, stdout)
}

// verifyLog checks a data directory offline: the format version, every
// record's checksum and seq density, every session's metadata, and that
// every session re-folds through its adapter. It reports each bad session
// and fails if there is one.
func verifyLog(ctx context.Context, dir string, stdout io.Writer) error {
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer l.Close()
	records, sessions := 0, 0
	if err := l.Sessions(ctx, func([16]byte, []byte, uint64) error { sessions++; return nil }); err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	scanErr := l.ScanAll(ctx, func([16]byte, uint64, []byte) error { records++; return nil })
	h, err := hub.New(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		return err
	}
	defer h.Close()
	bad := h.Quarantined()
	ids := make([]session.ID, 0, len(bad))
	for id := range bad { //hubd:sorted below
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b session.ID) int { return slices.Compare(a[:], b[:]) })
	for _, id := range ids {
		fmt.Fprintf(stdout, "BAD %v: %v\n", id, bad[id])
	}
	if scanErr != nil {
		fmt.Fprintf(stdout, "scan stopped: %v\n", scanErr)
	}
	fmt.Fprintf(stdout, "%d sessions, %d records, %d bad\n", sessions, records, len(bad))
	if len(bad) > 0 || scanErr != nil {
		return exitcode.New(1, fmt.Errorf("log verify: %d bad sessions in %s", len(bad), dir))
	}
	return nil
}
