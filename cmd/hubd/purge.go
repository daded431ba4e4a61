package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// purgeFlags registers the flags of "sessions purge" and returns it: an
// operator archives and purges ended sessions at once.
func purgeFlags(fs *flag.FlagSet) *clientCommand {
	out := outputFlags(fs, "the output `format`: text (\"purged ID at TIME, archived in FILE\") or json (one PurgeResponse per line)", formatText, formatJSON)
	return &clientCommand{nargs: -2, run: func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		for _, id := range fs.Args() {
			p, err := c.Purge(ctx, id)
			if err != nil {
				return err
			}
			if out.json() {
				if err := writeJSON(w, &hubpb.PurgeResponse{SessionId: p.SessionID, PurgedAt: timestamppb.New(p.At), Archive: p.Archive}); err != nil {
					return err
				}
				continue
			}
			archived := "without an archive"
			if p.Archive != "" {
				archived = "archived in " + p.Archive
			}
			fmt.Fprintf(w, "purged %s at %s, %s\n", p.SessionID, p.At.UTC().Format(time.RFC3339), archived)
		}
		return nil
	}}
}

// runArchive is "hubd log archive read FILE": print an archive file's
// sessions and envelopes, and check its checksums; and "hubd log archive
// import --data DIR FILE": bring sessions back into a stopped hub's log.
func runArchive(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "read" && args[0] != "import") {
		return exitcode.Usage("log archive: want \"read FILE\" or \"import --data DIR FILE\" (see hubd log --help)")
	}
	info := lookup("log archive " + args[0])
	fs := newCommand(info.name, info.args, info.summary, stdout)
	var out *outputFlag
	var data, only *string
	if args[0] == "read" {
		out = outputFlags(fs, "the output `format`: text (a line per session, then one per envelope) or json (each ArchiveRecord's session or envelope, one per line)", formatText, formatJSON)
	} else {
		data = fs.String("data", "./hubd-data", "the data directory (the hub must not be running on it)")
		only = fs.String("session", "", "import only this session `ID` (default: every session of FILE)")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Usage("%s: want FILE (see hubd %s --help)", info.name, info.name)
	}
	if args[0] == "import" {
		return importArchive(ctx, *data, fs.Arg(0), *only, stdout)
	}
	f, err := archive.Read(fs.Arg(0))
	if f == nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	werr := printArchive(w, f, out.json())
	return errors.Join(err, werr, w.Flush())
}

// printArchive writes what f holds.
func printArchive(w io.Writer, f *archive.File, asJSON bool) error {
	for _, s := range f.Sessions {
		if asJSON {
			if err := writeJSON(w, &hubpb.ArchiveRecord{Record: &hubpb.ArchiveRecord_Session{Session: s.ArchivedSession}}); err != nil {
				return err
			}
		} else {
			m := s.GetMeta()
			fmt.Fprintf(w, "session %s %s creator %s ended %s archived %s, %d envelopes\n", m.GetSessionId(), m.GetType(), m.GetCreator(),
				s.GetEndedAt().AsTime().UTC().Format(time.RFC3339), s.GetArchivedAt().AsTime().UTC().Format(time.RFC3339), len(s.Envelopes))
		}
		for _, e := range s.Envelopes {
			if asJSON {
				if err := writeJSON(w, &hubpb.ArchiveRecord{Record: &hubpb.ArchiveRecord_Envelope{Envelope: e}}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(w, "  %4d %s %-12s %s\n", e.GetSeq(), e.GetAcceptedAt().AsTime().UTC().Format(time.RFC3339), e.GetFrom(), e.GetType())
		}
	}
	return nil
}

// importArchive is "hubd log archive import --data DIR FILE [--session
// ID]": write purged sessions back into a stopped hub's log from an
// archive file, each labelled imported_from=FILE (read-only in effect: it
// ended; the retention sweep leaves it alone).
func importArchive(ctx context.Context, data, file, only string, stdout io.Writer) error {
	const cmd = "log archive import"
	f, err := archive.Read(file)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	l, err := wal.Open(wal.Options{Dir: data, MinFreeBytes: -1})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", cmd, data, err)
	}
	defer l.Close()
	// A file may hold a session twice (purged, imported and purged again
	// the same day): its last copy is the one imported.
	last := map[string]int{}
	for i, s := range f.Sessions {
		last[s.GetMeta().GetSessionId()] = i
	}
	n := 0
	for i, s := range f.Sessions {
		m := proto.CloneOf(s.GetMeta())
		if (only != "" && m.GetSessionId() != only) || last[m.GetSessionId()] != i {
			continue
		}
		if err := importOne(ctx, l, m, s.Envelopes, filepath.Base(file)); err != nil {
			return fmt.Errorf("%s: session %s: %w", cmd, m.GetSessionId(), err)
		}
		fmt.Fprintf(stdout, "imported %s (%d envelopes)\n", m.GetSessionId(), len(s.Envelopes))
		n++
	}
	if n == 0 && only != "" {
		return exitcode.Usage("%s: %s holds no session %s", cmd, file, only)
	}
	return l.Close()
}

// importOne writes one archived session back.
func importOne(ctx context.Context, l *wal.Log, m *hubpb.SessionMeta, envs []*hubpb.Envelope, file string) error {
	id, err := session.ParseID(m.GetSessionId())
	if err != nil {
		return err
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[hub.LabelImportedFrom] = file
	meta, err := session.MarshalMeta(m)
	if err != nil {
		return err
	}
	recs := make([]wal.Record, len(envs))
	for i, e := range envs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			return err
		}
		recs[i] = wal.Record{Seq: e.GetSeq(), Data: b}
	}
	var index []wal.IndexEntry
	for _, x := range hub.ImportIndex(m) {
		index = append(index, wal.IndexEntry{Key: x.Key, Value: x.Value})
	}
	return l.RestoreSession(ctx, id, meta, recs, index)
}
