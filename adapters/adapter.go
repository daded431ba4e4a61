package adapters

import (
	"encoding/json"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Adapter is a session type: it checks a session's metadata and starts its
// state. Implementations are stateless and safe for concurrent use.
type Adapter interface {
	// Type returns the session type this adapter implements.
	Type() session.Type
	// Start checks the session's participants and knobs and returns its
	// initial state. Errors wrap session.ErrMalformed or, for a workflow
	// graph, transition.ErrInvalid, and name what was wrong.
	Start(meta *hubpb.SessionMeta) (State, error)
	// Expectations returns the type's default expectations, used when the
	// opener gives none.
	Expectations() []*hubpb.Expectation
}

// KnobDefaulter is an Adapter with default knobs: the hub adds them to a
// new session's metadata (so they are logged, and a session replays with
// the knobs it was opened with) when the opener did not set them.
type KnobDefaulter interface {
	// DefaultKnobs returns the knobs to add to new metadata meta; nil for
	// none. Errors are left to Start.
	DefaultKnobs(meta *hubpb.SessionMeta) map[string]*structpb.Value
}

// State is one session's adapter state. It is owned by one goroutine at a
// time; Fold changes it in place.
type State interface {
	// Validate reports whether env may be accepted now. The hub has already
	// checked the envelope's shape, that the session is open and that the
	// sender is a participant. Errors wrap the sentinels of this package or
	// of package session and say what was expected.
	Validate(env *hubpb.Envelope) error
	// Fold applies an envelope the hub accepted and returns what it
	// decided. Fold must not fail for an envelope Validate accepted.
	Fold(env *hubpb.Envelope) Outcome
	// Aside folds a turn taken outside the session type's order (a turn a
	// background result granted): its usage and context updates count,
	// nothing else changes. Base implements it.
	Aside(env *hubpb.Envelope)
	// Expected returns who is expected to speak next, in session order;
	// empty when nobody is (the session is closing).
	Expected() []string
	// Summary returns the parts of the state every session type has.
	Summary() Summary
	// MarshalJSON returns the whole state as deterministic JSON, for audits
	// and for checking that a replay equals the live state.
	MarshalJSON() ([]byte, error)
}

// Outcome is what a fold decided. The hub acts on it after the commit.
type Outcome struct {
	// Close, when not empty, ends the session with this reason; the hub
	// writes the closing envelope in the same atomic batch as the envelope
	// that caused it.
	Close string
	// Rule says in words which rule decided the turn, for audits:
	// "transitions[1] from_speaker(alice) → agent(bob)", "handoff → bob",
	// "finish", "max_turns", ... Empty for envelopes that are not turns.
	Rule string
	// Begins: the envelope begins a turn (a turn itself, the open, or the
	// envelope that released a hold or granted a turn): whoever may speak
	// next is told, with it as the trigger. Machine sets it.
	Begins bool
	// Trigger, from Machine.Apply, is the last envelope written (the one
	// applied or a follow-up) that began a turn; nil when none did.
	Trigger *hubpb.Envelope
}

// Router is implemented by session types that route turns between agents
// (workflow): what they say of it, for SessionInfo.
type Router interface {
	// Routing returns the active agent, the handoffs honoured and who
	// escalations go to.
	Routing() (active string, handoffs int, supervisor string)
}

// Summary is the common part of every session type's state.
type Summary struct {
	Turn        int                        `json:"turn"`
	LastSpeaker string                     `json:"last_speaker,omitempty"`
	Context     map[string]json.RawMessage `json:"context"`
	// ContextReaders: who may read the context variables not everyone may
	// (Base.ContextReaders).
	ContextReaders map[string][]string `json:"context_readers,omitempty"`
	Usage          *hubpb.Usage        `json:"usage"`
	// Closing is set once a fold has decided the session ends.
	Closing string `json:"closing,omitempty"`
}

// MayRead reports whether name may read context variable k: every
// variable is everyone's but one set by an envelope with an audience.
func (s Summary) MayRead(k, name string) bool {
	readers, ok := s.ContextReaders[k]
	return !ok || slices.Contains(readers, name)
}
