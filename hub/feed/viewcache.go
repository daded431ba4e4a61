package feed

import (
	"maps"
	"sync"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// The tail of a session's view items its view cache keeps in memory: a
// view whose window falls in it is built without reading the log.
const (
	viewTailItems = 64
	viewTailBytes = 64 << 10
)

// viewCache is what the feed keeps of a session for its views (Feed.View,
// and so every turn notice of a subscription with a turn view): the
// newest view items, and per participant how many items of each speaker
// it may see in the whole session. It is the session's hub.Tail: the hub
// tells it every envelope the session folds (from the log at load, or at
// commit), and View reads it outside the session's lock.
type viewCache struct {
	mu       sync.Mutex
	tail     []viewEntry // the newest view items, oldest first
	bytes    int         // their text
	complete bool        // the tail holds every view item of the session
	last     uint64      // the seq of the newest view item folded
	names    []string    // the session's participants
	seen     map[string]map[string]int32
}

// viewEntry is one view item of the tail with its envelope (for whom may
// see it).
type viewEntry struct {
	e  *hubpb.Envelope
	it *hubpb.ViewItem
}

func newViewCache(names []string) *viewCache { return &viewCache{complete: true, names: names} }

// Add implements hub.Tail: it folds the session's next envelope.
func (c *viewCache) Add(e *hubpb.Envelope) {
	it, ok := itemOf(e)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.names {
		if session.Visible(e, n) {
			if c.seen == nil {
				c.seen = map[string]map[string]int32{}
			}
			m := c.seen[n]
			if m == nil {
				m = map[string]int32{}
				c.seen[n] = m
			}
			m[e.GetFrom()]++
		}
	}
	c.tail = append(c.tail, viewEntry{e: e, it: it})
	c.bytes += len(it.GetText())
	c.last = e.GetSeq()
	for len(c.tail) > viewTailItems || (len(c.tail) > 1 && c.bytes > viewTailBytes) {
		c.bytes -= len(c.tail[0].it.GetText())
		c.tail[0] = viewEntry{}
		c.tail = c.tail[1:]
		c.complete = false
	}
}

// view fills b as viewItems over the whole session would (agent's items,
// at most b.keep of them and MaxReadBytes of their text, the older ones
// counted per speaker), and reports false when the tail cannot tell: the
// window reaches past it.
func (c *viewCache) view(agent, sessionID string, b *viewBuf) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, bytes, from, bounded := 0, 0, len(c.tail), false
	for i := len(c.tail) - 1; i >= 0; i-- {
		x := c.tail[i]
		if !session.Visible(x.e, agent) {
			continue
		}
		l := len(x.it.GetText())
		if n+1 > b.keep || (n > 0 && bytes+l > MaxReadBytes) {
			bounded = true
			break
		}
		n, bytes, from = n+1, bytes+l, i
	}
	if !bounded && !c.complete {
		return false
	}
	taken := map[string]int32{}
	for _, x := range c.tail[from:] {
		if !session.Visible(x.e, agent) {
			continue
		}
		it := x.it
		b.items = append(b.items, &hubpb.ViewItem{SessionId: sessionID, Seq: it.GetSeq(), From: it.GetFrom(), Type: it.GetType(), Text: it.GetText(), At: it.GetAt()})
		taken[it.GetFrom()]++
	}
	b.bytes = bytes
	for sp, k := range c.seen[agent] { //hubd:orderless counts per speaker
		if o := k - taken[sp]; o > 0 {
			b.older[sp] += o
			b.total += o
		}
	}
	return true
}

// counts returns the seq of the newest view item folded and how many items
// of each speaker agent may see up to it: what a view read from the log
// newest first counts its older items by.
func (c *viewCache) counts(agent string) (uint64, map[string]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, maps.Clone(c.seen[agent])
}

// cacheOf returns the view cache beside s, nil when it has none (a
// session of a hub without this feed).
func cacheOf(s *hub.Session) *viewCache {
	c, _ := s.Tail().(*viewCache)
	return c
}

// viewBuf keeps the newest items of a view, at most keep of them and
// MaxReadBytes of their text (the newest always), and counts the older
// ones per speaker as it drops them: a view's memory is bounded whatever
// the length of the log.
type viewBuf struct {
	items []*hubpb.ViewItem
	keep  int
	bytes int
	older map[string]int32
	total int32
}

func (b *viewBuf) add(it *hubpb.ViewItem) {
	b.items = append(b.items, it)
	b.bytes += len(it.GetText())
	for len(b.items) > b.keep || (len(b.items) > 1 && b.bytes > MaxReadBytes) {
		old := b.items[0]
		b.items[0] = nil
		b.items = b.items[1:]
		b.bytes -= len(old.GetText())
		b.older[old.GetFrom()]++
		b.total++
	}
}

// viewItem returns the view entry of e for agent, if e is one it may see.
func viewItem(e *hubpb.Envelope, agent string) (*hubpb.ViewItem, bool) {
	if !session.Visible(e, agent) {
		return nil, false
	}
	return itemOf(e)
}

// itemOf returns the view entry of e, if e is one a view shows.
func itemOf(e *hubpb.Envelope) (*hubpb.ViewItem, bool) {
	it := &hubpb.ViewItem{Seq: e.GetSeq(), From: e.GetFrom(), Type: e.GetType(), At: e.GetAcceptedAt()}
	switch p := e.GetPayload().(type) {
	case *hubpb.Envelope_Text:
		it.Text = p.Text.GetText()
	case *hubpb.Envelope_Packet:
		it.Text = p.Packet.GetBody()
	case *hubpb.Envelope_Question:
		it.Text = p.Question.GetText()
	case *hubpb.Envelope_Answer:
		it.Text = p.Answer.GetText()
	case *hubpb.Envelope_DelegationResult:
		it.Text = p.DelegationResult.GetSummary()
	case *hubpb.Envelope_Message:
		it.Text = p.Message.GetText()
	default:
		return nil, false
	}
	return it, true
}
