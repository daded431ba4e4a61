package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
)

// logPage is how many envelopes one ReadLog of --check asks for.
const logPage = 2000

// maxListed is how many missing sends --check prints.
const maxListed = 100

// checkResult is the outcome of --check; --json prints it as is.
type checkResult struct {
	Acked    int      `json:"acked"`
	Found    int      `json:"found"`
	Missing  []string `json:"missing,omitempty"`  // "SESSION SEQ CLIENT_MSG_ID (why)", the first maxListed
	Gaps     []string `json:"gaps,omitempty"`     // "SESSION: seq A follows seq B"
	Reopened []string `json:"reopened,omitempty"` // "SESSION: seq A follows the session's end at seq B"
	Partial  bool     `json:"partial_last_line,omitempty"`
}

// runCheck checks a verify file against the hub's logs (see the package
// doc for the contract).
func runCheck(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	recs, partial, err := loadVerify(cfg.Check)
	if err != nil {
		return err
	}
	p, err := dial(ctx, cfg.Hub, []string{cfg.Operator}, 1)
	if err != nil {
		return err
	}
	defer p.close()
	res := checkResult{Acked: len(recs), Partial: partial}
	bySession := map[string][]ackRecord{}
	for _, r := range recs {
		bySession[r.session] = append(bySession[r.session], r)
	}
	for _, sid := range slices.Sorted(maps.Keys(bySession)) {
		lg, err := readSessionLog(ctx, p.client(0), sid)
		if err != nil {
			return err
		}
		res.Gaps = append(res.Gaps, lg.gaps...)
		res.Reopened = append(res.Reopened, lg.reopened...)
		res.compare(bySession[sid], lg)
	}
	if partial {
		fmt.Fprintf(stderr, "hubload: %s: ignored a last line without a newline\n", cfg.Check)
	}
	if err := res.print(stdout, cfg.JSON); err != nil {
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
	id       string
	ids      map[uint64]string // client_msg_id by seq
	last     uint64            // the highest seq read
	end      uint64            // the seq of the envelope that ended the session; 0: none
	unknown  bool              // the hub does not know the session
	gaps     []string
	reopened []string
}

// readSessionLog reads a whole session's log and checks its seqs are
// dense from 1 and that nothing follows the envelope that ended it.
func readSessionLog(ctx context.Context, c *agentsdk.Client, sid string) (sessionLog, error) {
	lg := sessionLog{id: sid, ids: map[uint64]string{}}
	for {
		envs, err := c.ReadLog(ctx, sid, lg.last+1, logPage)
		if errors.Is(err, agentsdk.ErrUnknownSession) {
			lg.unknown = true
			return lg, nil
		}
		if err != nil {
			return lg, fmt.Errorf("reading session %s from seq %d: %w", sid, lg.last+1, err)
		}
		if len(envs) == 0 {
			return lg, nil
		}
		for _, e := range envs {
			if err := lg.add(e); err != nil {
				return lg, err
			}
		}
	}
}

// add checks and records the next envelope read.
func (lg *sessionLog) add(e *hubpb.Envelope) error {
	seq := e.GetSeq()
	if seq != lg.last+1 {
		lg.gaps = append(lg.gaps, fmt.Sprintf("%s: seq %d follows seq %d", lg.id, seq, lg.last))
	}
	if seq <= lg.last {
		return fmt.Errorf("session %s: ReadLog from seq %d went back to seq %d", lg.id, lg.last+1, seq)
	}
	if lg.end != 0 {
		lg.reopened = append(lg.reopened, fmt.Sprintf("%s: seq %d follows the session's end at seq %d", lg.id, seq, lg.end))
	} else if agentsdk.Ends(e) {
		lg.end = seq
	}
	lg.last = seq
	lg.ids[seq] = e.GetClientMsgId()
	return nil
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
	for _, r := range res.Reopened {
		fmt.Fprintf(w, "reopened %s\n", r)
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
	case len(res.Reopened) > 0:
		return exitcode.New(1, fmt.Errorf("%d envelopes follow their session's end", len(res.Reopened)))
	}
	return nil
}
