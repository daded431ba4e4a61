package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/internal/exitcode"
	"google.golang.org/protobuf/types/known/timestamppb"
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
// sessions and envelopes, and check its checksums.
func runArchive(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "read" {
		return exitcode.Usage("log archive: want \"read FILE\" (see hubd log --help)")
	}
	info := lookup("log archive read")
	fs := newCommand(info.name, info.args, info.summary, stdout)
	out := outputFlags(fs, "the output `format`: text (a line per session, then one per envelope) or json (each ArchiveRecord's session or envelope, one per line)", formatText, formatJSON)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Usage("%s: want FILE (see hubd %s --help)", info.name, info.name)
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
