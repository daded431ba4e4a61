package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// sessionsImportFlags registers "sessions import ARCHIVE [--session ID
// ...]": an operator writes purged sessions back into the running hub's
// log from a file of its archive directory; a line per session imported.
func sessionsImportFlags(fs *flag.FlagSet) *clientCommand {
	var ids multiFlag
	fs.Var(&ids, "session", "import only this session `ID` (repeatable; default: every session of ARCHIVE)")
	out := outputFlags(fs, "the output `format`: text (\"imported ID (N envelopes)\") or json (one ImportedSession per line)", formatText, formatJSON)
	return &clientCommand{nargs: 1, run: func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		done, err := c.Import(ctx, fs.Arg(0), ids...)
		if err != nil {
			return err
		}
		for _, s := range done {
			if out.json() {
				if err := writeJSON(w, &hubpb.ImportedSession{SessionId: s.SessionID, Envelopes: uint64(s.Envelopes), Archive: s.Archive}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(w, "imported %s (%d envelopes)\n", s.SessionID, s.Envelopes)
		}
		return nil
	}}
}
