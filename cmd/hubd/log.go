package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/logv1"
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
	case "archive":
		return runArchive(ctx, args[1:], stdout)
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
	var sum *string
	if args[0] == "restore" {
		sum = fs.String("sha256", "", "check FILE against this `digest` (hex, as log backup printed it) before writing anything")
	}
	var onDamage *string
	if args[0] == "verify" {
		hubFlag := fs.Lookup("hub")
		hubFlag.Usage, hubFlag.DefValue = "verify a backup of the hub running at this `address` instead of --data (with the client flags)", ""
		onDamage = fs.String("on-damage", "refuse", "judge the directory as a start with this `policy` would: refuse or quarantine (as hubd serve --on-damage)")
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
		return restoreLog(ctx, *data, fs.Arg(0), *sum, stdout)
	}
	o := verifyOptions{}
	switch *onDamage {
	case "refuse":
	case "quarantine":
		o.policy = wal.MarkDamaged
	default:
		return exitcode.Usage("%s: --on-damage %q: want refuse or quarantine", info.name, *onDamage)
	}
	if flagSet(fs, "hub") {
		if flagSet(fs, "data") {
			return exitcode.Usage("%s: --hub and --data name two stores: give one", info.name)
		}
		return verifyLive(ctx, &c, o, stdout)
	}
	return verifyLog(ctx, *data, o, stdout)
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
