package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// The named views of a session for building a prompt.
const (
	// ViewFull is the whole transcript the participant may see.
	ViewFull = "full"
	// ViewWindowed is the last Window items in full, the older ones
	// counted per speaker.
	ViewWindowed = "windowed"
	// ViewDefault is the session type's default: windowed over the last
	// two rounds (2 × participants) for workflow and discussion, full for
	// conversation and consulting.
	ViewDefault = "default"
	// ViewLast is the latest item only.
	ViewLast = "last"
)

// The histories a view may include.
const (
	HistoryThread   = "thread"
	HistoryDelegate = "delegate"
)

// maxHistory bounds the earlier sessions a view includes.
const maxHistory = 16

// View returns agent's view of a session.
func (f *Feed) View(ctx context.Context, agent string, id session.ID, opts ViewOptions) (*hubpb.View, error) {
	s, err := f.readable(ctx, agent, false, id)
	if err != nil {
		return nil, err
	}
	name, window, err := resolveView(s.Meta(), opts)
	if err != nil {
		return nil, err
	}
	earlier, err := f.history(ctx, agent, s, opts.History)
	if err != nil {
		return nil, err
	}
	keep := MaxReadItems
	if window > 0 {
		keep = min(window, MaxReadItems)
	}
	buf := viewBuf{keep: keep, older: map[string]int32{}}
	if c := cacheOf(s); len(earlier) > 0 || opts.scan || c == nil || !c.view(agent, s.Meta().GetSessionId(), &buf) {
		buf = viewBuf{keep: keep, older: map[string]int32{}}
		if err := f.scanView(ctx, agent, append(earlier, s), &buf); err != nil {
			return nil, err
		}
	}
	v := &hubpb.View{SessionId: s.Meta().GetSessionId(), Name: name, Items: buf.items, OlderTotal: buf.total}
	for _, n := range session.Names(s.Meta()) {
		if c := buf.older[n]; c > 0 {
			v.Older = append(v.Older, &hubpb.SpeakerCount{Speaker: n, Count: c})
		}
	}
	return v, nil
}

// scanView reads agent's items of sessions ss, in order, into b: from
// the newest back, stopping once b is full, when the log reads newest
// first; otherwise from the start, b keeping the newest.
func (f *Feed) scanView(ctx context.Context, agent string, ss []*hub.Session, b *viewBuf) error {
	if back, ok := f.h.Log().(hub.BackScanner); ok && !slices.ContainsFunc(ss, func(s *hub.Session) bool { return cacheOf(s) == nil }) {
		return f.scanViewBack(ctx, back, agent, ss, b)
	}
	for _, e := range ss {
		if err := f.viewItems(ctx, agent, e, b); err != nil {
			return err
		}
	}
	return nil
}

// scanViewBack fills b from the newest item of sessions ss (oldest
// session first) back, reading each session newest first and stopping at
// the first item that does not fit b: no more is read or built than b
// keeps (and the first item that does not fit). The older items are
// counted per speaker from each session's view cache.
func (f *Feed) scanViewBack(ctx context.Context, back hub.BackScanner, agent string, ss []*hub.Session, b *viewBuf) error {
	var newest []*hubpb.ViewItem // newest first
	full := false
	for i := len(ss) - 1; i >= 0; i-- {
		x := ss[i]
		last, seen := cacheOf(x).counts(agent)
		taken := map[string]int32{}
		if !full && last > 0 {
			var err error
			if newest, full, err = backItems(ctx, back, agent, x, last, b, newest, taken); err != nil {
				return err
			}
		}
		for sp, k := range seen { //hubd:orderless counts per speaker
			if o := k - taken[sp]; o > 0 {
				b.older[sp] += o
				b.total += o
			}
		}
	}
	slices.Reverse(newest)
	b.items = newest
	return nil
}

// backItems adds agent's items of session x up to seq last, newest first,
// to newest (counting them per speaker in taken) while they fit b; full
// says one did not.
func backItems(ctx context.Context, back hub.BackScanner, agent string, x *hub.Session, last uint64, b *viewBuf,
	newest []*hubpb.ViewItem, taken map[string]int32) ([]*hubpb.ViewItem, bool, error) {
	full := false
	err := back.ScanBack(ctx, x.ID(), last, func(_ uint64, data []byte) error {
		e, err := x.Decode(data)
		if err != nil {
			return err
		}
		it, ok := viewItem(e, agent)
		if !ok {
			return nil
		}
		if l := len(it.GetText()); len(newest) == b.keep || (len(newest) > 0 && b.bytes+l > MaxReadBytes) {
			full = true
			return errStop
		}
		it.SessionId = x.Meta().GetSessionId()
		newest, b.bytes = append(newest, it), b.bytes+len(it.GetText())
		taken[it.GetFrom()]++
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, false, fmt.Errorf("reading session %v: %w", x.ID(), err)
	}
	return newest, full, nil
}

// viewItems adds agent's items of session s to b.
func (f *Feed) viewItems(ctx context.Context, agent string, s *hub.Session, b *viewBuf) error {
	err := f.h.Log().Scan(ctx, s.ID(), 1, func(seq uint64, data []byte) error {
		e, err := s.Decode(data)
		if err != nil {
			return err
		}
		if it, ok := viewItem(e, agent); ok {
			it.SessionId = s.Meta().GetSessionId()
			b.add(it)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading session %v: %w", s.ID(), err)
	}
	return nil
}

// history returns the earlier sessions a view of s includes, oldest first:
// those agent may read.
func (f *Feed) history(ctx context.Context, agent string, s *hub.Session, which string) ([]*hub.Session, error) {
	var out []*hub.Session
	switch which {
	case "":
	case HistoryThread:
		for p := s.Meta().GetPreviousSessionId(); p != "" && len(out) < maxHistory; {
			id, err := session.ParseID(p)
			prev, _ := f.h.Lookup(ctx, id)
			if err != nil || prev == nil {
				break
			}
			out = append(out, prev)
			p = prev.Meta().GetPreviousSessionId()
		}
		slices.Reverse(out)
	case HistoryDelegate:
		var err error
		if out, err = f.siblings(ctx, s); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown view history %q (known: thread, delegate): %w", which, session.ErrMalformed)
	}
	return slices.DeleteFunc(out, func(x *hub.Session) bool { return !session.IsParticipant(x.Meta(), agent) }), nil
}

// siblings returns s's earlier siblings with its delegator and delegate,
// live or ended, oldest first, at most maxHistory (each ended one loaded
// from the log).
func (f *Feed) siblings(ctx context.Context, s *hub.Session) ([]*hub.Session, error) {
	pid, err := session.ParseID(s.Meta().GetParentSessionId())
	if err != nil {
		return nil, nil
	}
	ids, err := f.h.ChildIDs(ctx, pid)
	if err != nil {
		return nil, err
	}
	var out []*hub.Session
	for i := len(ids) - 1; i >= 0 && len(out) < maxHistory; i-- {
		if compareIDs(ids[i], s.ID()) >= 0 {
			continue
		}
		k, err := f.h.Lookup(ctx, ids[i])
		if err != nil {
			continue
		}
		if k.Meta().GetCreator() == s.Meta().GetCreator() && k.Meta().GetResponder() == s.Meta().GetResponder() {
			out = append(out, k)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// resolveView turns options into a view name and a window (0: all).
func resolveView(meta *hubpb.SessionMeta, opts ViewOptions) (string, int, error) {
	switch opts.Name {
	case ViewFull:
		return ViewFull, 0, nil
	case ViewWindowed:
		if opts.Window <= 0 {
			return ViewWindowed, 10, nil
		}
		return ViewWindowed, opts.Window, nil
	case ViewLast:
		return ViewLast, 1, nil
	case "", ViewDefault:
		switch t, _ := session.ParseType(meta.GetType()); t.Kind {
		case "workflow", "discussion":
			return ViewDefault, 2 * len(meta.GetParticipants()), nil
		}
		return ViewDefault, 0, nil
	}
	return "", 0, fmt.Errorf("unknown view %q (known: full, windowed, default, last): %w", opts.Name, session.ErrMalformed)
}
