package transition

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hubd/hubd/session"
)

// Input is what conditions and targets see when a turn is folded: the
// session's participants and roles, the turn just accepted, and the state
// after that turn's bookkeeping (context updates applied, turn counted).
type Input struct {
	Participants   []string // in session order
	Initiator      string   // who opened the session
	Supervisor     string   // who escalations go to
	InitialSpeaker string   // the graph's initial speaker

	Speaker string // the sender of the turn just accepted
	Event   string // its event type
	Text    string // its text, or its packet body
	Tool    string // its packet's routing tool, or ""
	Mention string // the participant named by a leading @name in Text, or ""

	Turn    int                        // turns taken, this one included
	Active  string                     // the active agent (see ActiveAgent)
	Context map[string]json.RawMessage // context variables, canonical JSON; read only
}

// Var returns a context variable; a missing key is JSON null.
func (in *Input) Var(key string) json.RawMessage {
	if v, ok := in.Context[key]; ok {
		return v
	}
	return session.Null()
}

// Decision is where a turn leads: the next speaker, or the end of the
// session with a reason.
type Decision struct {
	Next      string `json:"next,omitempty"`
	Terminate bool   `json:"terminate,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Speak is the decision that name speaks next.
func Speak(name string) Decision { return Decision{Next: name} }

// End is the decision that the session terminates with reason.
func End(reason string) Decision { return Decision{Terminate: true, Reason: reason} }

// Mention returns the participant named by a leading "@name" in text, or
// "" when the text does not start with a mention of a participant. Leading
// white space is skipped; the name is compared without regard to case and
// must be followed by the end of the text, white space or one of ",.:;!?)";
// when several participants match (a name that extends another), the
// longest wins.
func Mention(text string, participants []string) string {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	rest, ok := strings.CutPrefix(t, "@")
	if !ok {
		return ""
	}
	best := ""
	for _, p := range participants {
		if len(p) <= len(best) || len(rest) < len(p) || !strings.EqualFold(rest[:len(p)], p) {
			continue
		}
		if after := rest[len(p):]; after != "" {
			r, _ := utf8.DecodeRuneInString(after)
			if !unicode.IsSpace(r) && !strings.ContainsRune(",.:;!?)", r) {
				continue
			}
		}
		best = p
	}
	return best
}
