package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
)

// logPage is how many envelopes one ReadLog of --check asks for.
const logPage = 2000

// readyTimeout is how long --check waits for the hub to accept
// connections (it may have just been restarted).
const readyTimeout = 10 * time.Second

// maxListed is how many missing sends --check prints.
const maxListed = 100

// checkResult is the outcome of --check; --json prints it as is.
type checkResult struct {
	Acked   int      `json:"acked"`
	Found   int      `json:"found"`
	Missing []string `json:"missing,omitempty"` // "SESSION SEQ CLIENT_MSG_ID (why)", the first maxListed
	Gaps    []string `json:"gaps,omitempty"`    // "SESSION: seq A follows seq B"
	Partial bool     `json:"partial_last_line,omitempty"`
}

// runCheck checks a verify file against the hub's logs (see the package
// doc for the contract).
func runCheck(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	recs, partial, err := loadVerify(cfg.check)
	if err != nil {
		return err
	}
	p, err := dial(cfg.hub, 1)
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.waitReady(ctx, readyTimeout); err != nil {
		return err
	}
	res := checkResult{Acked: len(recs), Partial: partial}
	bySession := map[string][]ackRecord{}
	for _, r := range recs {
		bySession[r.session] = append(bySession[r.session], r)
	}
	calls := as(ctx, cfg.operator)
	for _, sid := range slices.Sorted(maps.Keys(bySession)) {
		lg, err := readSessionLog(calls, p.client(0), sid)
		if err != nil {
			return err
		}
		res.Gaps = append(res.Gaps, lg.gaps...)
		res.compare(bySession[sid], lg)
	}
	if partial {
		fmt.Fprintf(stderr, "hubload: %s: ignored a last line without a newline\n", cfg.check)
	}
	if err := res.print(stdout, cfg.json); err != nil {
		return err
	}
	return res.verdict()
}

// loadVerify reads a verify file; a missing or malformed file is a usage
// error.
func loadVerify(path string) ([]ackRecord, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, exitcode.Usage("--check: %v", err)
	}
	defer f.Close()
	recs, partial, err := readVerify(f)
	if err != nil {
		return nil, false, exitcode.Usage("--check %s: %v", path, err)
	}
	return recs, partial, nil
}

// sessionLog is what --check learnt of one session's log.
type sessionLog struct {
	ids     map[uint64]string // client_msg_id by seq
	unknown bool              // the hub does not know the session
	gaps    []string
}

// readSessionLog reads a whole session's log and checks its seqs are
// dense from 1.
func readSessionLog(ctx context.Context, c hubpb.HubClient, sid string) (sessionLog, error) {
	lg := sessionLog{ids: map[uint64]string{}}
	var last uint64
	for {
		resp, err := c.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: sid, FromSeq: last + 1, Limit: logPage})
		if reasonOf(err) == hubgrpc.ReasonUnknownSession {
			lg.unknown = true
			return lg, nil
		}
		if err != nil {
			return lg, fmt.Errorf("reading session %s from seq %d: %w", sid, last+1, err)
		}
		envs := resp.GetEnvelopes()
		if len(envs) == 0 {
			return lg, nil
		}
		for _, e := range envs {
			if e.GetSeq() != last+1 {
				lg.gaps = append(lg.gaps, fmt.Sprintf("%s: seq %d follows seq %d", sid, e.GetSeq(), last))
			}
			if e.GetSeq() <= last {
				return lg, fmt.Errorf("session %s: ReadLog from seq %d went back to seq %d", sid, last+1, e.GetSeq())
			}
			last = e.GetSeq()
			lg.ids[last] = e.GetClientMsgId()
		}
	}
}

// compare counts the records of one session found in its log.
func (res *checkResult) compare(recs []ackRecord, lg sessionLog) {
	for _, r := range recs {
		id, ok := lg.ids[r.seq]
		var why string
		switch {
		case lg.unknown:
			why = "the hub does not know the session"
		case !ok:
			why = "no such seq in the log"
		case id != r.msgID:
			why = fmt.Sprintf("the log has client_msg_id %q there", id)
		default:
			res.Found++
			continue
		}
		if len(res.Missing) < maxListed {
			res.Missing = append(res.Missing, fmt.Sprintf("%s %d %s (%s)", r.session, r.seq, r.msgID, why))
		}
	}
}

// print writes the result, as JSON or as text.
func (res *checkResult) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(w, "acked %d, found %d\n", res.Acked, res.Found)
	for _, m := range res.Missing {
		fmt.Fprintf(w, "missing %s\n", m)
	}
	if n := res.Acked - res.Found - len(res.Missing); n > 0 {
		fmt.Fprintf(w, "... and %d more missing\n", n)
	}
	for _, g := range res.Gaps {
		fmt.Fprintf(w, "gap %s\n", g)
	}
	return nil
}

// verdict is nil when every record was found and no log has a gap.
func (res *checkResult) verdict() error {
	switch {
	case res.Found < res.Acked:
		return exitcode.New(1, fmt.Errorf("%d of %d acknowledged sends are missing", res.Acked-res.Found, res.Acked))
	case len(res.Gaps) > 0:
		return exitcode.New(1, fmt.Errorf("%d gaps in the sessions' seqs", len(res.Gaps)))
	}
	return nil
}
