package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/test/bufconn"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// verifyOptions say how verifyLog checks a data directory.
type verifyOptions struct {
	policy  wal.DamagePolicy // the --on-damage of the start it judges
	inPlace bool             // the directory is verify's own (a restore's, a live backup's): no copy
}

// verifyLog is "hubd log verify --data DIR". It judges the directory as
// the hub's start does by running that start: the same server.StartOn
// (the log's checks, its journal replay and damage policy, the hub's
// hydrate) on a copy of DIR, with a clock whose timers never fire, and
// says what a start would do: refuse (and why, and what a start with
// --on-damage quarantine would do then), or move files aside, replay
// commits from the journal, quarantine sessions, and serve. A start
// writes (it replays the journal, moves files aside, marks damage), which
// a read-only open cannot do and so would judge otherwise; the copy keeps
// DIR as it was. It then reads everything a start does not (every table
// block, every session's records and metadata, every session re-folded
// through its adapter) and reports each damaged table and session: those
// a hub quarantines when it reads them. It fails if a start would not
// serve every session.
func verifyLog(ctx context.Context, dir string, o verifyOptions, stdout io.Writer) error {
	work, cleanup, err := verifyDir(dir, o.inPlace)
	if err != nil {
		return err
	}
	defer cleanup()
	out := pathWriter{w: stdout, from: work, to: dir}
	st, err := judgeStart(ctx, work, o.policy, out)
	if err != nil {
		return fmt.Errorf("log verify: %w", err)
	}
	if !st.served {
		return exitcode.New(1, fmt.Errorf("log verify: a start on %s would refuse", dir))
	}
	n, err := readAll(ctx, work, st, out)
	if err != nil {
		return fmt.Errorf("log verify: %s: %w", dir, err)
	}
	if n > 0 || len(st.quarantined) > 0 || st.refused {
		return exitcode.New(1, fmt.Errorf("log verify: %s is damaged: %d findings", dir, n))
	}
	return nil
}

// verifyDir returns the directory verify starts a hub on: a copy of dir
// in a temporary directory (removed by cleanup), or dir itself in place.
func verifyDir(dir string, inPlace bool) (string, func(), error) {
	if ents, err := os.ReadDir(dir); err != nil {
		return "", nil, fmt.Errorf("log verify: opening %s: %w", dir, err)
	} else if len(ents) == 0 {
		return "", nil, fmt.Errorf("log verify: no store in %s: the directory is empty", dir)
	}
	if inPlace {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "hubd-verify-")
	if err != nil {
		return "", nil, fmt.Errorf("log verify: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	work := filepath.Join(tmp, "data")
	if err := wal.CopyStore(dir, work); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("log verify: %w", err)
	}
	return work, cleanup, nil
}

// started is what a start did.
type started struct {
	served      bool // a start served (with --on-damage quarantine, if refused)
	refused     bool // the start with the asked policy refused
	opened      wal.Opened
	quarantined map[session.ID]error
}

// judgeStart starts a hub on dir as `hubd serve --on-damage` policy would
// and prints what it did. A start refused for damage that quarantining
// sessions would get past is tried again with --on-damage quarantine, on
// the same directory, as an operator would next.
func judgeStart(ctx context.Context, dir string, policy wal.DamagePolicy, out io.Writer) (started, error) {
	st, err := tryStart(ctx, dir, policy)
	if err == nil {
		fmt.Fprintf(out, "a start would %s\n", describeStart(st))
		return st, nil
	}
	var refusal *startRefusal
	if !errors.As(err, &refusal) {
		return st, err
	}
	fmt.Fprintf(out, "a start would refuse: %s\n", refusal.err)
	var de *wal.DamageError
	if policy != wal.RefuseDamaged || !errors.As(refusal.err, &de) || de.RestoreOnly {
		return started{refused: true}, nil
	}
	st, err = tryStart(ctx, dir, wal.MarkDamaged)
	if errors.As(err, &refusal) {
		fmt.Fprintf(out, "with --on-damage quarantine, a start would refuse too: %s\n", refusal.err)
		return started{refused: true}, nil
	}
	if err != nil {
		return st, err
	}
	st.refused = true
	fmt.Fprintf(out, "with --on-damage quarantine, a start would %s\n", describeStart(st))
	return st, nil
}

// startRefusal is a start's error: what `hubd serve` would say.
type startRefusal struct{ err error }

func (r *startRefusal) Error() string { return r.err.Error() }

// tryStart runs a hub's start on dir, on an in-process listener, and
// stops it.
func tryStart(ctx context.Context, dir string, policy wal.DamagePolicy) (started, error) {
	cfg := server.Config{DataDir: dir, OnDamage: policy, MinFreeBytes: -1, Hub: hub.Config{Clock: stillClock{time.Now()}}}
	srv, err := server.StartOn(ctx, cfg, bufconn.Listen(1<<16))
	if err != nil {
		return started{}, &startRefusal{err}
	}
	st := started{served: true, opened: srv.WAL().Opened(), quarantined: srv.Hub().Quarantined()}
	if err := srv.Shutdown(ctx); err != nil {
		return st, fmt.Errorf("stopping the hub verify started: %w", err)
	}
	return st, nil
}

// describeStart says what a start that served did, after "a start would".
func describeStart(st started) string {
	var did []string
	if m := st.opened.MovedAside; len(m) > 0 {
		did = append(did, fmt.Sprintf("move %d files into orphans/ (%s)", len(m), firstFew(m)))
	}
	if n := st.opened.Replayed; n > 0 {
		did = append(did, fmt.Sprintf("replay %d commits from the journal", n))
	}
	serve := "serve"
	if q := sortedIDs(st.quarantined); len(q) > 0 {
		ids := make([]string, len(q))
		for i, id := range q {
			ids[i] = id.String()
		}
		did = append(did, fmt.Sprintf("quarantine %d sessions (%s)", len(q), firstFew(ids)))
		serve = "serve the rest"
	}
	if len(did) == 0 {
		return serve
	}
	return strings.Join(did, ", ") + " and " + serve
}

// readAll reads everything in dir, as the start left it: the log's own
// checks (damaged table blocks, sessions whose records and head differ,
// marked sessions), every metadata and record decoded, every session
// re-folded through its adapter. It prints each finding and a summary
// and returns how many findings it printed.
func readAll(ctx context.Context, dir string, st started, out io.Writer) (int, error) {
	l, err := wal.Open(wal.Options{Dir: dir, OnDamage: wal.MarkDamaged, MinFreeBytes: -1})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	dmg, _, err := l.Verify(ctx)
	if err != nil {
		return 0, err
	}
	bad := map[session.ID]error{}
	for _, d := range dmg.Sessions {
		bad[session.ID(d.Session)] = fmt.Errorf("from seq %d: %s", d.From, d.Cause)
	}
	sessions, records, scanErr := decodeAll(ctx, l, bad)
	if err := refold(ctx, l, bad); err != nil {
		return 0, err
	}
	later := 0
	for id := range bad { //hubd:orderless counting
		if st.quarantined[id] == nil {
			later++
		}
	}
	if later > 0 {
		fmt.Fprintf(out, "%d sessions a start does not read are damaged: a hub quarantines each when it reads it\n", later)
	}
	for _, p := range dmg.Store {
		fmt.Fprintf(out, "STORE: %s\n", p)
	}
	for _, id := range sortedIDs(bad) {
		fmt.Fprintf(out, "BAD %v: %v\n", id, bad[id])
	}
	n := len(bad) + len(dmg.Store)
	if scanErr != nil {
		fmt.Fprintf(out, "scan stopped: %v\n", scanErr)
		n++
	}
	fmt.Fprintf(out, "%d sessions, %d records, %d bad\n", sessions, records, len(bad))
	return n, nil
}

// sortedIDs returns m's keys in id order.
func sortedIDs(m map[session.ID]error) []session.ID {
	return slices.SortedFunc(maps.Keys(m), func(a, b session.ID) int { return slices.Compare(a[:], b[:]) })
}

// firstFew lists the first five of s, and an ellipsis for the rest.
func firstFew(s []string) string {
	if len(s) > 5 {
		return strings.Join(s[:5], ", ") + ", …"
	}
	return strings.Join(s, ", ")
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

// stillClock is the clock of the start verify runs: the time verify
// began, and timers that never fire (a due timer would write; verify
// judges the store as a start finds it).
type stillClock struct{ now time.Time }

func (c stillClock) Now() time.Time { return c.now }

func (stillClock) AfterFunc(time.Duration, func()) func() bool { return func() bool { return false } }

// pathWriter writes to w with the path from replaced by to: what a start
// on verify's copy says, said of the directory verified.
type pathWriter struct {
	w        io.Writer
	from, to string
}

func (p pathWriter) Write(b []byte) (int, error) {
	if p.from == p.to {
		return p.w.Write(b)
	}
	if _, err := io.WriteString(p.w, strings.ReplaceAll(string(b), p.from, p.to)); err != nil {
		return 0, err
	}
	return len(b), nil
}
