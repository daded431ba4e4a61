package adapters

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Calls is the part of a session's state that waits on others, the same
// for every session type: the turns held (a blocking delegation waits for
// its children, a question for its answer), the questions pending, the
// children still open, the turns granted by background results, and who
// answers the session's caller. It is folded from the log like the rest:
// a delegation or a question begins a hold, the envelope that answers it
// (the children's delegation_results, the answer, a question_closed)
// releases it and begins the holder's turn again.
type Calls struct {
	Holds     []*Hold    `json:"holds,omitempty"`
	Questions []*Pending `json:"questions,omitempty"`
	Children  []*Child   `json:"children,omitempty"`
	// Granted are the delegators a background result gave a turn, out of
	// the session type's order, once each.
	Granted []string `json:"granted,omitempty"`
	// Responder is who answers the session's caller (a child): its
	// delegate, or whom the duty was passed to.
	Responder string `json:"responder,omitempty"`
	// Result is what the session says to its caller so far: the
	// responder's last turn's words, or its finish summary.
	Result string `json:"result,omitempty"`
	// ChildUsage sums the usage of the children's trees, as their results
	// reported it.
	ChildUsage *hubpb.Usage `json:"child_usage,omitempty"`
}

// Hold is a turn that waits.
type Hold struct {
	Holder   string    `json:"holder"`
	Kind     string    `json:"kind"`     // HoldChildren or HoldQuestion
	Envelope string    `json:"envelope"` // the delegation's or the question's envelope id
	Children []string  `json:"children,omitempty"`
	Await    string    `json:"await,omitempty"`
	Done     []string  `json:"done,omitempty"`
	Question string    `json:"question,omitempty"`
	Answerer string    `json:"answerer,omitempty"`
	Since    time.Time `json:"since"`
}

// The kinds of hold.
const (
	HoldChildren = "children"
	HoldQuestion = "question"
)

// released reports whether the hold's children are done as it awaits.
func (h *Hold) released() bool {
	if h.Await == session.AwaitAny {
		return len(h.Done) > 0
	}
	return len(h.Done) == len(h.Children)
}

// waitsFor says in words what the hold waits for.
func (h *Hold) waitsFor() string {
	if h.Kind == HoldQuestion {
		return fmt.Sprintf("the answer to question %q from %q", h.Question, h.Answerer)
	}
	if len(h.Children) == 1 {
		return "child session " + h.Children[0]
	}
	return fmt.Sprintf("%s of child sessions %s (%d done)", h.Await, strings.Join(h.Children, ", "), len(h.Done))
}

// Pending is a question waiting for its answer.
type Pending struct {
	Asker    string          `json:"asker"`
	Envelope string          `json:"envelope"`
	Seq      uint64          `json:"seq"`
	Asked    time.Time       `json:"asked"`
	Fired    bool            `json:"fired,omitempty"` // its deadline warned or notified
	Question *hubpb.Question `json:"-"`
}

// MarshalJSON writes the question in its one JSON form beside the rest.
func (p *Pending) MarshalJSON() ([]byte, error) {
	q, err := hubpb.MarshalJSON(p.Question)
	if err != nil {
		return nil, err
	}
	type plain Pending
	return json.Marshal(struct {
		*plain
		Question json.RawMessage `json:"question"`
	}{(*plain)(p), q})
}

// Child is an open child session.
type Child struct {
	ID         string `json:"id"`
	Delegator  string `json:"delegator"`
	Mode       string `json:"mode"`
	Notify     string `json:"notify,omitempty"`
	Delegation string `json:"delegation"`
}

// held returns the hold on the session's turn, nil when there is none.
func (c *Calls) held() *Hold {
	if len(c.Holds) == 0 {
		return nil
	}
	return c.Holds[0]
}

// Pending returns the pending question with id, nil when there is none.
func (c *Calls) Pending(id string) *Pending {
	for _, p := range c.Questions {
		if p.Question.GetQuestionId() == id {
			return p
		}
	}
	return nil
}

// PendingIDs returns the ids of the pending questions, oldest first.
func (c *Calls) PendingIDs() []string {
	ids := make([]string, len(c.Questions))
	for i, p := range c.Questions {
		ids[i] = p.Question.GetQuestionId()
	}
	return ids
}

// Child returns the open child with id, nil when there is none.
func (c *Calls) Child(id string) *Child {
	for _, ch := range c.Children {
		if ch.ID == id {
			return ch
		}
	}
	return nil
}

// checkHeld refuses a turn while one is held.
func (c *Calls) checkHeld() error {
	if h := c.held(); h != nil {
		return fmt.Errorf("the turn of %q is held waiting for %s: %w", h.Holder, h.waitsFor(), ErrTurnHeld)
	}
	return nil
}

// noQuestionFor refuses the answer of someone who takes no part in
// session id to a question not pending for it: it is told of its own
// questions there (mine), and nothing else of the session.
func noQuestionFor(from, question, id string, mine []string) error {
	if len(mine) == 0 {
		return fmt.Errorf("%q has no question %q to answer in session %s: %w", from, question, id, ErrBadAnswer)
	}
	return fmt.Errorf("%q has no question %q to answer in session %s (its questions there: %s): %w",
		from, question, id, strings.Join(mine, ", "), ErrBadAnswer)
}

// pendingFor returns the ids of the questions pending for answerer,
// oldest first.
func (c *Calls) pendingFor(answerer string) []string {
	var ids []string
	for _, p := range c.Questions {
		if p.Question.GetAnswerer() == answerer {
			ids = append(ids, p.Question.GetQuestionId())
		}
	}
	return ids
}

// checkAnswer checks an answer against its pending question: answered by
// its answerer (or written by the hub), options that exist (one unless
// multiple), text that meets the schema. An answerer who is not a
// participant (insider false) is told of its own questions only.
func (c *Calls) checkAnswer(from, sessionID string, insider bool, a *hubpb.Answer) error {
	p := c.Pending(a.GetQuestionId())
	if !insider && (p == nil || p.Question.GetAnswerer() != from) {
		return noQuestionFor(from, a.GetQuestionId(), sessionID, c.pendingFor(from))
	}
	if p == nil {
		return fmt.Errorf("no question %q is pending (pending: %s): %w", a.GetQuestionId(), listOrNone(c.PendingIDs()), ErrBadAnswer)
	}
	q := p.Question
	if from != "" && from != q.GetAnswerer() {
		return fmt.Errorf("question %q is for %q to answer, not %q: %w", q.GetQuestionId(), q.GetAnswerer(), from, ErrBadAnswer)
	}
	if len(q.GetOptions()) == 0 {
		return checkFreeAnswer(q, a)
	}
	return checkOptionAnswer(q, a)
}

func checkOptionAnswer(q *hubpb.Question, a *hubpb.Answer) error {
	var valid []string
	for _, o := range q.GetOptions() {
		valid = append(valid, o.GetId())
	}
	got := a.GetOptionIds()
	switch {
	case len(got) == 0:
		return fmt.Errorf("question %q needs option_ids (options: %s): %w", q.GetQuestionId(), strings.Join(valid, ", "), ErrBadAnswer)
	case len(got) > 1 && !q.GetMultiple():
		return fmt.Errorf("question %q takes one option, got %d (options: %s): %w", q.GetQuestionId(), len(got), strings.Join(valid, ", "), ErrBadAnswer)
	}
	for i, id := range got {
		if !slices.Contains(valid, id) {
			return fmt.Errorf("question %q has no option %q (options: %s): %w", q.GetQuestionId(), id, strings.Join(valid, ", "), ErrBadAnswer)
		}
		if slices.Contains(got[:i], id) {
			return fmt.Errorf("question %q: option %q chosen twice: %w", q.GetQuestionId(), id, ErrBadAnswer)
		}
	}
	return nil
}

func checkFreeAnswer(q *hubpb.Question, a *hubpb.Answer) error {
	if len(a.GetOptionIds()) > 0 {
		return fmt.Errorf("question %q has no options: answer with text: %w", q.GetQuestionId(), ErrBadAnswer)
	}
	if q.GetSchema() == nil {
		return nil
	}
	v, err := session.JSONValue([]byte(a.GetText()))
	if err != nil {
		return fmt.Errorf("question %q wants JSON meeting its schema: %v: %w", q.GetQuestionId(), session.Detail(err), ErrBadAnswer)
	}
	if err := session.MeetsSchema(q.GetSchema(), v); err != nil {
		return fmt.Errorf("question %q: the answer does not meet its schema: %s: %w", q.GetQuestionId(), session.Detail(err), ErrBadAnswer)
	}
	return nil
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// fold records an envelope that begins, changes or ends a wait, and
// reports whether it begins a turn (a hold released, a turn granted).
func (c *Calls) fold(env *hubpb.Envelope) bool {
	switch env.GetType() {
	case session.EventDelegation:
		c.delegated(env)
	case session.EventDelegationResult:
		return c.result(env)
	case session.EventQuestion:
		c.asked(env)
	case session.EventAnswer:
		return c.close(env.GetAnswer().GetQuestionId())
	case session.EventQuestionClosed:
		return c.close(env.GetQuestionClosed().GetQuestionId())
	case session.EventViolation:
		if p := c.Pending(env.GetViolation().GetQuestionId()); p != nil {
			p.Fired = true
		}
	}
	return false
}

func (c *Calls) delegated(env *hubpb.Envelope) {
	d := env.GetDelegation()
	for _, id := range d.GetChildSessionIds() {
		c.Children = append(c.Children, &Child{ID: id, Delegator: d.GetDelegator(), Mode: d.GetMode(), Notify: d.GetNotify(),
			Delegation: env.GetId()})
	}
	if d.GetMode() == session.ModeBlocking {
		c.Holds = append(c.Holds, &Hold{Holder: d.GetDelegator(), Kind: HoldChildren, Envelope: env.GetId(),
			Children: slices.Clone(d.GetChildSessionIds()), Await: d.GetAwait(), Since: session.Time(env.GetAcceptedAt())})
	}
}

// result folds a child's result: the child is no longer open, its usage
// counts, and a hold or a background notice may begin its delegator's
// turn.
func (c *Calls) result(env *hubpb.Envelope) bool {
	r := env.GetDelegationResult()
	c.ChildUsage = session.AddUsage(c.ChildUsage, r.GetUsage())
	i := slices.IndexFunc(c.Children, func(ch *Child) bool { return ch.ID == r.GetChildSessionId() })
	if i < 0 {
		return false
	}
	ch := c.Children[i]
	c.Children = slices.Delete(c.Children, i, i+1)
	if ch.Mode == session.ModeBackground {
		if ch.Notify == session.NotifyTurn && !slices.Contains(c.Granted, ch.Delegator) {
			c.Granted = append(c.Granted, ch.Delegator)
			return true
		}
		return false
	}
	for j, h := range c.Holds {
		if h.Kind == HoldChildren && slices.Contains(h.Children, ch.ID) {
			h.Done = append(h.Done, ch.ID)
			if h.released() {
				c.Holds = slices.Delete(c.Holds, j, j+1)
				return true
			}
			return false
		}
	}
	return false
}

func (c *Calls) asked(env *hubpb.Envelope) {
	q := env.GetQuestion()
	c.Questions = append(c.Questions, &Pending{Asker: env.GetFrom(), Envelope: env.GetId(), Seq: env.GetSeq(),
		Asked: session.Time(env.GetAcceptedAt()), Question: q})
	c.Holds = append(c.Holds, &Hold{Holder: env.GetFrom(), Kind: HoldQuestion, Envelope: env.GetId(),
		Question: q.GetQuestionId(), Answerer: q.GetAnswerer(), Since: session.Time(env.GetAcceptedAt())})
}

// close ends a pending question (answered or withdrawn) and releases its
// hold: the asker's turn begins again.
func (c *Calls) close(id string) bool {
	c.Questions = slices.DeleteFunc(c.Questions, func(p *Pending) bool { return p.Question.GetQuestionId() == id })
	n := len(c.Holds)
	c.Holds = slices.DeleteFunc(c.Holds, func(h *Hold) bool { return h.Kind == HoldQuestion && h.Question == id })
	return len(c.Holds) < n
}

// noteTurn records what a turn says to the caller: the responder's words,
// or a finish summary.
func (c *Calls) noteTurn(env *hubpb.Envelope) {
	r := env.GetPacket().GetRouting()
	switch {
	case r.GetKind() == session.RouteFinish && r.GetSummary() != "":
		c.Result = r.GetSummary()
	case r.GetKind() == session.RoutePassCaller:
		c.Responder = r.GetTarget()
	case c.Responder == "" || env.GetFrom() == c.Responder:
		c.Result = session.TextOf(env)
	}
}
