package hub

import (
	"context"
	"fmt"
	"time"

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

// ViewOptions choose a view.
type ViewOptions struct {
	Name   string // one of the View* names; "" is ViewDefault
	Window int    // for ViewWindowed; default 10
}

// View is the transcript one participant may see, for building a prompt.
type View struct {
	Session session.ID
	Name    string
	Items   []ViewItem
	// Older counts, per speaker in session order, the items before the
	// window; OlderTotal is their sum.
	Older      []SpeakerCount
	OlderTotal int
}

// ViewItem is one entry of a view: a turn, a question, an answer or a
// delegation result.
type ViewItem struct {
	Seq  uint64
	From string
	Type session.EventType
	Text string
	At   time.Time
}

// SpeakerCount is how many items of a speaker a window left out.
type SpeakerCount struct {
	Speaker string
	Count   int
}

// View returns agent's view of a session.
func (h *Hub) View(ctx context.Context, agent string, id session.ID, opts ViewOptions) (View, error) {
	s, err := h.readable(agent, false, id)
	if err != nil {
		return View{}, err
	}
	name, window, err := resolveView(s.meta, opts)
	if err != nil {
		return View{}, err
	}
	var items []ViewItem
	err = h.log.Scan(ctx, id, 1, func(seq uint64, data []byte) error {
		e, err := session.DecodeEnvelope(data)
		if err != nil {
			return err
		}
		if it, ok := viewItem(e, agent); ok {
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return View{}, fmt.Errorf("reading session %v: %w", id, err)
	}
	v := View{Session: id, Name: name, Items: items}
	if window > 0 && len(items) > window {
		cut := len(items) - window
		v.Items, v.OlderTotal = items[cut:], cut
		for _, p := range s.meta.Participants {
			n := 0
			for _, it := range items[:cut] {
				if it.From == p.Name {
					n++
				}
			}
			if n > 0 {
				v.Older = append(v.Older, SpeakerCount{Speaker: p.Name, Count: n})
			}
		}
	}
	return v, nil
}

// resolveView turns options into a view name and a window (0: all).
func resolveView(meta *session.Meta, opts ViewOptions) (string, int, error) {
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
		switch meta.Type.Kind {
		case "workflow", "discussion":
			return ViewDefault, 2 * len(meta.Participants), nil
		}
		return ViewDefault, 0, nil
	}
	return "", 0, fmt.Errorf("unknown view %q (known: full, windowed, default, last): %w", opts.Name, session.ErrMalformed)
}

// viewItem returns the view entry of e for agent, if e is one it may see.
func viewItem(e *session.Envelope, agent string) (ViewItem, bool) {
	if e.From != agent && !e.Audience.Includes(agent, e.From) {
		return ViewItem{}, false
	}
	it := ViewItem{Seq: e.Seq, From: e.From, Type: e.Type, At: e.AcceptedAt}
	switch p := e.Payload.(type) {
	case session.Text:
		it.Text = p.Text
	case session.Packet:
		it.Text = p.Body
	case session.Question:
		it.Text = p.Text
	case session.Answer:
		it.Text = p.Text
	case session.DelegationResult:
		it.Text = p.Summary
	default:
		return ViewItem{}, false
	}
	return it, true
}
