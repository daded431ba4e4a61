package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/logv1"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// runLog is "hubd log verify|migrate|backup|restore": work on a data
// directory whose hub is stopped, and backups of a running hub.
func runLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return wantGroupCommand("log", stderr)
	}
	if isHelp(args[0]) {
		groupHelp(stdout, "log")
		return nil
	}
	switch args[0] {
	case "verify", "migrate", "backup", "restore":
	default:
		return unknownGroupCommand("log", args[0])
	}
	info := lookup("log " + args[0])
	fs := newCommand(info.name, info.args, info.summary, stdout)
	var data *string
	if args[0] != "backup" {
		data = fs.String("data", "./hubd-data", "the data directory (the hub must not be running on it)")
	}
	var c clientFlags
	if args[0] == "backup" || args[0] == "verify" {
		c.register(fs)
	}
	if args[0] == "verify" {
		hubFlag := fs.Lookup("hub")
		hubFlag.Usage, hubFlag.DefValue = "verify a backup of the hub running at this `address` instead of --data (with the client flags)", ""
		// Only the command line chooses a running hub over --data:
		// $HUBD_HUB does not.
		c.env = slices.DeleteFunc(c.env, func(n string) bool { return n == "hub" })
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	npos := 0
	if args[0] == "backup" || args[0] == "restore" {
		npos = 1
	}
	if fs.NArg() > npos {
		return exitcode.Usage("%s: unexpected argument %q (see hubd %s --help)", info.name, fs.Arg(npos), info.name)
	}
	if fs.NArg() < npos {
		return exitcode.Usage("%s: want %s (see hubd %s --help)", info.name, info.args, info.name)
	}
	switch args[0] {
	case "migrate":
		return migrateLog(ctx, *data, stdout)
	case "backup":
		return backupLog(ctx, &c, fs.Arg(0), stdout, stderr)
	case "restore":
		return restoreLog(ctx, *data, fs.Arg(0), stdout)
	}
	if flagSet(fs, "hub") {
		if flagSet(fs, "data") {
			return exitcode.Usage("%s: --hub and --data name two stores: give one", info.name)
		}
		return verifyLive(ctx, &c, stdout)
	}
	return verifyLog(ctx, *data, stdout)
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// verifyLog checks a data directory without changing it: it opens the
// store read-only (a stopped hub's; a running hub holds the directory and
// is refused), and a store whose hub crashed, which badger can only read
// after replaying it, through a copy in a temporary directory. It reports
// what the log itself finds damaged (lost acknowledged records from the
// journal, damaged table blocks, sessions whose records and head differ,
// marked sessions), then that every metadata and record decodes and that
// every session re-folds through its adapter. It fails if anything is bad.
// A directory of an older format fails with the migrate command to run.
func verifyLog(ctx context.Context, dir string, stdout io.Writer) error {
	l, cleanup, err := openForVerify(dir, stdout)
	if err != nil {
		var de *wal.DamageError
		if errors.As(err, &de) {
			fmt.Fprint(stdout, de.Damage)
			return exitcode.New(1, fmt.Errorf("log verify: %s is damaged: %w", dir, wal.ErrDamaged))
		}
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer cleanup()
	defer l.Close()
	dmg, _, err := l.Verify(ctx)
	if err != nil {
		return fmt.Errorf("verifying %s: %w", dir, err)
	}
	bad := map[session.ID]error{}
	for _, d := range dmg.Sessions {
		bad[session.ID(d.Session)] = fmt.Errorf("from seq %d: %s", d.From, d.Cause)
	}
	sessions, records, scanErr := decodeAll(ctx, l, bad)
	if err := refold(ctx, l, bad); err != nil {
		return err
	}
	for _, p := range dmg.Store {
		fmt.Fprintf(stdout, "STORE: %s\n", p)
	}
	for _, id := range slices.SortedFunc(maps.Keys(bad), func(a, b session.ID) int { return slices.Compare(a[:], b[:]) }) {
		fmt.Fprintf(stdout, "BAD %v: %v\n", id, bad[id])
	}
	if scanErr != nil {
		fmt.Fprintf(stdout, "scan stopped: %v\n", scanErr)
	}
	fmt.Fprintf(stdout, "%d sessions, %d records, %d bad\n", sessions, records, len(bad))
	if len(bad) > 0 || len(dmg.Store) > 0 || scanErr != nil {
		return exitcode.New(1, fmt.Errorf("log verify: %d bad sessions, %d store problems in %s", len(bad), len(dmg.Store), dir))
	}
	return nil
}

// openForVerify opens dir read-only, with damage found at open reported
// (not refused), or, if its hub crashed, a copy of it read-write; cleanup
// removes the copy.
func openForVerify(dir string, stdout io.Writer) (*wal.Log, func(), error) {
	opts := wal.Options{Dir: dir, ReadOnly: true, OnDamage: wal.MarkDamaged}
	l, err := wal.Open(opts)
	if !errors.Is(err, wal.ErrUnclean) {
		return l, func() {}, err
	}
	tmp, err := os.MkdirTemp("", "hubd-verify-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	cp := filepath.Join(tmp, "data")
	fmt.Fprintf(stdout, "note: %s was not closed cleanly (its hub crashed or was killed); verifying a copy in %s\n", dir, cp)
	if err := copyTree(dir, cp); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("copying %s: %w", dir, err)
	}
	l, err = wal.Open(wal.Options{Dir: cp, OnDamage: wal.MarkDamaged, MinFreeBytes: -1})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return l, cleanup, nil
}

// copyTree copies the directory src to dst, keeping files' holes (badger's
// memtable and value log files are large and mostly holes).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		return copySparse(p, out)
	})
}

// copySparse copies the file src to dst, skipping its holes.
func copySparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if err := f.Truncate(fi.Size()); err != nil {
		_ = f.Close()
		return err
	}
	const seekData, seekHole = 3, 4 // lseek's SEEK_DATA and SEEK_HOLE
	for off := int64(0); off < fi.Size(); {
		start, err := in.Seek(off, seekData)
		switch {
		case errors.Is(err, syscall.ENXIO): // no data past off
			return f.Close()
		case err != nil: // no SEEK_DATA here: copy the rest
			start = off
		}
		end, err := in.Seek(start, seekHole)
		if err != nil || end <= start {
			end = fi.Size()
		}
		if _, err := io.Copy(io.NewOffsetWriter(f, start), io.NewSectionReader(in, start, end-start)); err != nil {
			_ = f.Close()
			return err
		}
		off = end
	}
	return f.Close()
}

// decodeAll checks that every metadata and record decodes, reading each
// session on its own (a damaged one does not stop the rest), adds the
// sessions that do not decode, or cannot be read, to bad, and counts them.
func decodeAll(ctx context.Context, l *wal.Log, bad map[session.ID]error) (sessions, records int, err error) {
	var ids []session.ID
	err = l.Metas(ctx, func(raw [16]byte, meta []byte) error {
		sessions++
		ids = append(ids, session.ID(raw))
		if _, err := session.UnmarshalMeta(meta); err != nil && bad[session.ID(raw)] == nil {
			bad[session.ID(raw)] = err
		}
		return nil
	})
	if err != nil {
		return sessions, records, fmt.Errorf("listing sessions: %w", err)
	}
	for _, id := range ids {
		err := l.Scan(ctx, id, 1, func(seq uint64, data []byte) error {
			records++
			if _, err := session.UnmarshalEnvelope(data); err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			return nil
		})
		if err != nil && bad[id] == nil {
			bad[id] = err
		}
	}
	return sessions, records, ctx.Err()
}

// refold hydrates a hub from l, which replays every session through its
// adapter, and adds the sessions it quarantines to bad.
func refold(ctx context.Context, l *wal.Log, bad map[session.ID]error) error {
	h, err := hub.New(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil), FoldAll: true})
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
