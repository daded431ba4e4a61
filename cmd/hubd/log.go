package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/logv1"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// runLog is "hubd log verify|migrate": offline work on a data directory
// whose hub is stopped.
func runLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return wantGroupCommand("log", stderr)
	}
	if isHelp(args[0]) {
		groupHelp(stdout, "log")
		return nil
	}
	if args[0] != "verify" && args[0] != "migrate" {
		return unknownGroupCommand("log", args[0])
	}
	info := lookup("log " + args[0])
	fs := newCommand(info.name, info.args, info.summary, stdout)
	data := fs.String("data", "./hubd-data", "the data directory (the hub must not be running on it)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Usage("%s: unexpected argument %q (see hubd %s --help)", info.name, fs.Arg(0), info.name)
	}
	if args[0] == "migrate" {
		return migrateLog(ctx, *data, stdout)
	}
	return verifyLog(ctx, *data, stdout)
}

// verifyLog checks a data directory offline: the format version, every
// record's checksum and seq density, that every metadata and record
// decodes, and that every session re-folds through its adapter. It reports
// each bad session and fails if there is one. A directory of an older
// format fails with the migrate command to run.
func verifyLog(ctx context.Context, dir string, stdout io.Writer) error {
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer l.Close()
	bad := map[session.ID]error{}
	sessions, records := 0, 0
	err = l.Metas(ctx, func(raw [16]byte, meta []byte) error {
		sessions++
		if _, err := session.UnmarshalMeta(meta); err != nil {
			bad[session.ID(raw)] = err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	scanErr := l.ScanAll(ctx, func(raw [16]byte, seq uint64, data []byte) error {
		records++
		if _, err := session.UnmarshalEnvelope(data); err != nil && bad[session.ID(raw)] == nil {
			bad[session.ID(raw)] = fmt.Errorf("seq %d: %w", seq, err)
		}
		return nil
	})
	if err := refold(ctx, l, bad); err != nil {
		return err
	}
	for _, id := range slices.SortedFunc(maps.Keys(bad), func(a, b session.ID) int { return slices.Compare(a[:], b[:]) }) {
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

// refold hydrates a hub from l, which replays every session through its
// adapter, and adds the sessions it quarantines to bad.
func refold(ctx context.Context, l *wal.Log, bad map[session.ID]error) error {
	h, err := hub.New(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		return err
	}
	defer h.Close()
	for id, err := range h.Quarantined() { //hubd:orderless a map into a map
		if bad[id] == nil {
			bad[id] = err
		}
	}
	return nil
}

// migrateLog converts the data directory dir to the store format this
// build reads, in place, and prints a summary line. A directory already
// converted is left alone; an interrupted migration (killed, or stopped by
// an error) leaves a directory the hub refuses, which a rerun finishes.
func migrateLog(ctx context.Context, dir string, stdout io.Writer) error {
	start := time.Now()
	st, err := wal.Migrate(ctx, wal.Options{Dir: dir}, 1, convertV1)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("log migrate: interrupted; run it again to finish: %w", err)
		}
		return fmt.Errorf("log migrate: %w", err)
	}
	if st.From == st.To {
		fmt.Fprintf(stdout, "%s already has format version %d: nothing to migrate\n", dir, st.To)
		return nil
	}
	fmt.Fprintf(stdout, "migrated %s from format version %d to %d: %d sessions, %d records (%d values rewritten), took %v\n",
		dir, st.From, st.To, st.Sessions, st.Records, st.Rewritten, time.Since(start).Round(time.Millisecond))
	return nil
}

// convertV1 is the wal.Convert of a version-1 directory: metadata in
// version 1's JSON and envelopes of codec version 1 are decoded by package
// logv1 and stored as the hub's protobuf. Any other value must be protobuf
// already (converted by an interrupted run): it is checked and kept. The
// two cannot be confused: JSON starts with '{' and a version-1 envelope
// with byte 1, and neither begins a protobuf message of the hub.
func convertV1(kind wal.MigrateKind, _ [16]byte, _ uint64, data []byte) ([]byte, error) {
	if kind == wal.MigrateMeta {
		if len(data) > 0 && data[0] == '{' {
			m, err := logv1.DecodeMeta(data)
			if err != nil {
				return nil, err
			}
			return session.MarshalMeta(m)
		}
		if _, err := session.UnmarshalMeta(data); err != nil {
			return nil, fmt.Errorf("metadata is neither version-1 JSON nor protobuf: %w", err)
		}
		return data, nil
	}
	if len(data) > 0 && data[0] == logv1.CodecVersion {
		e, err := logv1.DecodeEnvelope(data)
		if err != nil {
			return nil, err
		}
		return session.MarshalEnvelope(e)
	}
	if _, err := session.UnmarshalEnvelope(data); err != nil {
		return nil, fmt.Errorf("record is neither a version-1 envelope nor protobuf: %w", err)
	}
	return data, nil
}
