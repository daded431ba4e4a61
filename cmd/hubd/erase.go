package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
)

// eraseFlags registers "sessions erase [ID ...] [--thread KEY --creator
// NAME] [--participant NAME] --reason R": an operator erases sessions for
// good; a line per session erased.
func eraseFlags(fs *flag.FlagSet) *clientCommand {
	thread := fs.String("thread", "", "erase every session of this thread `KEY` (with --creator)")
	creator := fs.String("creator", "", "the thread's creator (`agent`)")
	participant := fs.String("participant", "", "erase every session this `agent` takes part in")
	reason := fs.String("reason", "", "why, kept in each tombstone (required)")
	out := outputFlags(fs, "the output `format`: text (\"erased ID at TIME by OPERATOR: REASON\") or json (one ErasedSession per line)", formatText, formatJSON)
	return &clientCommand{nargs: -1,
		check: func(fs *flag.FlagSet) error {
			switch {
			case *reason == "":
				return exitcode.Usage("sessions erase: want --reason R (each tombstone keeps it)")
			case fs.NArg() == 0 && *thread == "" && *participant == "":
				return exitcode.Usage("sessions erase: want session IDs, --thread KEY --creator NAME, or --participant NAME")
			case (*thread == "") != (*creator == ""):
				return exitcode.Usage("sessions erase: --thread and --creator go together (a thread is its creator's)")
			}
			return nil
		},
		run: func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
			erased, err := c.Erase(ctx, agentsdk.EraseOptions{SessionIDs: fs.Args(), ThreadKey: *thread, Creator: *creator,
				Participant: *participant, Reason: *reason})
			if err != nil {
				return err
			}
			for _, e := range erased {
				if out.json() {
					if err := writeJSON(w, &hubpb.ErasedSession{SessionId: e.SessionID, ErasedAt: timestamppb.New(e.At),
						ErasedBy: e.By, Reason: e.Reason}); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(w, "erased %s at %s by %s: %s\n", e.SessionID, e.At.UTC().Format(time.RFC3339), e.By, e.Reason)
			}
			return nil
		}}
}
