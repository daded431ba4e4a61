package agentsdk

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hubd/hubd/hubpb"
)

// Delegation modes, awaits and notices (hubpb.DelegateRequest).
const (
	// ModeBlocking holds the delegator's turn until the children are done.
	ModeBlocking = "blocking"
	// ModeBackground leaves the turn as it is; the children run behind
	// task handles.
	ModeBackground = "background"
	// AwaitAllChildren releases a blocking delegation's turn when every
	// child is done; AwaitAnyChild when the first one is.
	AwaitAllChildren = "all"
	AwaitAnyChild    = "any"
	// NotifyTurn makes a background child's result give the delegator a
	// turn (by default it is a notice only).
	NotifyTurn = "turn"
)

// Task states ([TaskStatus].State).
const (
	TaskRunning   = "running"
	TaskClosed    = "closed"
	TaskExpired   = "expired"
	TaskCancelled = "cancelled"
)

// CancelReason is the close reason of a cancelled task.
const CancelReason = "cancelled"

type (
	// Result is what a child session came to, as posted into its parent:
	// its close reason, finish summary (or last turn's words), usage and
	// responder (hubpb.DelegationResult).
	Result = hubpb.DelegationResult
	// Question is a question to a person or an agent (hubpb.Question).
	Question = hubpb.Question
	// Answer is the answer to a question (hubpb.Answer).
	Answer = hubpb.Answer
	// Option is one choice of a question (hubpb.Option).
	Option = hubpb.Option
)

// DelegateOptions describe a delegation from a session where it is the
// caller's turn.
type DelegateOptions struct {
	// Children are the sessions to open, each with the caller as creator
	// (their Parent is set to the delegating session); a child's Task is
	// its first input.
	Children []OpenOptions
	// Mode is ModeBlocking (default) or ModeBackground.
	Mode string
	// Await is AwaitAllChildren (default) or AwaitAnyChild, for a blocking
	// delegation.
	Await string
	// Notify is "" or NotifyTurn, for a background delegation.
	Notify string
	// ClientMsgID makes the delegation idempotent: a retry returns the
	// first one's tasks. Generated when empty.
	ClientMsgID string
}

// Delegate opens children of a session on the caller's turn there, the
// delegation logged in the parent in the same write, and returns a task
// per child, in order. A blocking delegation holds the caller's turn until
// the children are done (wait with [AwaitAll] or [AwaitAny]); the hub then
// appends their results to the parent and gives the caller its turn back.
// A handler given a [Turn] uses [Turn.Delegate], [Turn.DelegateAll] or
// [Turn.Spawn] instead. Refusals: ErrOutOfTurn, ErrTurnHeld,
// ErrSessionClosed, ErrDepthExceeded, ErrDelegateNotAllowed.
func (c *Client) Delegate(ctx context.Context, sessionID string, o DelegateOptions) ([]*Task, error) {
	req := &hubpb.DelegateRequest{SessionId: sessionID, Mode: o.Mode, Await: o.Await, Notify: o.Notify, ClientMsgId: o.ClientMsgID}
	if req.ClientMsgId == "" {
		req.ClientMsgId = newMsgID()
	}
	for i, ch := range o.Children {
		r, err := ch.Proto()
		if err != nil {
			return nil, fmt.Errorf("agentsdk: child %d: %w", i, err)
		}
		req.Children = append(req.Children, r)
	}
	var resp *hubpb.DelegateResponse
	err := c.retryUnavailable(ctx, "delegate", func() (err error) {
		resp, err = c.rpc.Delegate(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	mode := req.GetMode()
	if mode == "" {
		mode = ModeBlocking
	}
	tasks := make([]*Task, 0, len(resp.GetChildren()))
	for _, ch := range resp.GetChildren() {
		tasks = append(tasks, &Task{ID: ch.GetMeta().GetSessionId(), Parent: sessionID, Mode: mode,
			DelegationID: ch.GetMeta().GetDelegationId(), c: c, from: resp.GetDelegation().GetSeq()})
	}
	return tasks, nil
}

// Task is the handle of a delegated child session: its id, its parent and
// the delegation that opened it. It works the same in both modes and after
// a restart ([Client.Task] rebuilds one from the child's id).
type Task struct {
	// ID is the child session's id.
	ID string
	// Parent is the delegating session.
	Parent string
	// DelegationID is the id of the delegation envelope in the parent.
	DelegationID string
	// Mode is ModeBlocking or ModeBackground.
	Mode string

	c       *Client
	from    uint64       // the parent's seq to look for results from
	consume func(uint64) // tells Serve a turn begun at seq was taken
}

// Task returns the handle of the delegated child session id (the caller
// must take part in it, as its delegator does).
func (c *Client) Task(ctx context.Context, id string) (*Task, error) {
	s, err := c.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	m := s.GetMeta()
	if m.GetParentSessionId() == "" || m.GetDelegationId() == "" {
		return nil, fmt.Errorf("agentsdk: session %s was not delegated: %w", id, ErrMalformed)
	}
	return &Task{ID: id, Parent: m.GetParentSessionId(), DelegationID: m.GetDelegationId(), Mode: ModeBackground, c: c, from: 1}, nil
}

// TaskStatus is what [Task.Poll] saw.
type TaskStatus struct {
	// State is TaskRunning, TaskClosed, TaskExpired or TaskCancelled.
	State string
	// Session is the child's state as the hub answered.
	Session *Session
	// Progress is the child's task_progress reports, oldest first.
	Progress []*hubpb.TaskProgress
	// Result is the result posted into the parent, once done.
	Result *Result
}

// Done reports whether the task is over.
func (s *TaskStatus) Done() bool { return s.State != TaskRunning }

// Poll reads the task's state, progress reports and result: reads only,
// no turn is used.
func (t *Task) Poll(ctx context.Context) (*TaskStatus, error) {
	s, err := t.c.GetSession(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	st := &TaskStatus{State: TaskRunning, Session: s}
	err = t.c.scanLog(ctx, t.ID, 1, func(e *hubpb.Envelope) bool {
		if p := e.GetTaskProgress(); p != nil {
			st.Progress = append(st.Progress, p)
		}
		return true
	})
	if err != nil || !s.Ended() {
		return st, err
	}
	switch {
	case s.GetState() == StateExpired:
		st.State = TaskExpired
	case s.GetCloseReason() == CancelReason:
		st.State = TaskCancelled
	default:
		st.State = TaskClosed
	}
	// The result is written with the child's close: it is in the log now.
	err = t.c.scanLog(ctx, t.Parent, t.from, func(e *hubpb.Envelope) bool {
		if r := e.GetDelegationResult(); r != nil && r.GetChildSessionId() == t.ID {
			st.Result = r
			return false
		}
		return true
	})
	return st, err
}

// scanLog calls fn with the caller's envelopes of a session from seq
// from, page by page, until fn returns false or the log ends.
func (c *Client) scanLog(ctx context.Context, id string, from uint64, fn func(*hubpb.Envelope) bool) error {
	const page = 1000
	for {
		envs, err := c.ReadLog(ctx, id, from, page)
		if err != nil {
			return err
		}
		for _, e := range envs {
			if !fn(e) {
				return nil
			}
			from = e.GetSeq() + 1
		}
		if len(envs) < page {
			return nil
		}
	}
}

// Message sends text into the task's session for its next speaker: as the
// caller's turn when the session expects the caller to speak (a
// conversation with the delegate), else as a message (not a turn) that its
// next speaker sees in its view.
func (t *Task) Message(ctx context.Context, text string, opts ...SendOption) (Ack, error) {
	ack, _, err := t.message(ctx, text, opts...)
	return ack, err
}

// message sends text into the task as Message does; it also returns the
// child's seq when the kind of envelope was chosen.
func (t *Task) message(ctx context.Context, text string, opts ...SendOption) (Ack, uint64, error) {
	s, err := t.c.GetSession(ctx, t.ID)
	if err != nil {
		return Ack{}, 0, err
	}
	e := &hubpb.Envelope{Type: EventMessage, Payload: &hubpb.Envelope_Message{Message: &hubpb.Text{Text: text}}}
	if slices.Contains(s.GetExpected(), t.c.name) {
		e = &hubpb.Envelope{Type: EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}
	}
	ack, err := t.c.sendOwned(ctx, t.ID, e, opts...)
	return ack, s.GetSeq(), err
}

// MessageAndWait sends text into the task's session (as [Task.Message])
// and returns the next turn taken there by another agent: after the
// message, or while it was being sent (then the message waits for the
// child's next speaker's next turn). If the session ends
// first, it returns the error ErrSessionClosed.
func (t *Task) MessageAndWait(ctx context.Context, text string, opts ...SendOption) (*hubpb.Envelope, error) {
	ack, checked, err := t.message(ctx, text, opts...)
	if err != nil {
		return nil, err
	}
	// A turn of the child's that landed between the look at whose turn it
	// was and the message answers it: the child spoke and now waits for the
	// caller, so no later turn would come (the message still reaches the
	// child's next speaker at its next turn).
	from := ack.GetSeq() + 1
	if checked < ack.GetSeq() {
		from = checked + 1
	}
	var turn *hubpb.Envelope
	end, err := t.c.Follow(ctx, t.ID, from, func(e *hubpb.Envelope) error {
		if IsTurn(e) && e.GetFrom() != t.c.name {
			turn = e
			return errFound
		}
		return nil
	})
	switch {
	case turn != nil:
		return turn, nil
	case end != nil:
		return nil, fmt.Errorf("agentsdk: task %s ended (%s) before its next turn: %w", t.ID, CloseReason(end), ErrSessionClosed)
	}
	return nil, err
}

// Cancel closes the task's session with reason "cancelled"; its result
// (state CLOSED, reason cancelled) is posted into the parent. Only the
// delegator (the child's creator) or an operator may cancel. Cancelling a
// task that is already over is not an error.
func (t *Task) Cancel(ctx context.Context) error {
	_, err := t.c.CloseSession(ctx, t.ID, CancelReason)
	if errors.Is(err, ErrSessionClosed) {
		return nil
	}
	return err
}

// Wait returns the task's result once it is posted into the parent: it
// reads the parent's log, so a hub restart or a broken connection does
// not lose it. It fails with ErrSessionClosed if the parent ends first.
func (t *Task) Wait(ctx context.Context) (*Result, error) {
	rs, err := awaitResults(ctx, t.c, t.Parent, t.from, []*Task{t}, 1, t.consume)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// AwaitAll returns the results of every task, in the order they closed.
// Blocking tasks of one delegation release the delegator's turn when the
// last is done; for background tasks it only waits.
func AwaitAll(ctx context.Context, tasks ...*Task) ([]*Result, error) {
	return awaitTasks(ctx, tasks, len(tasks))
}

// AwaitAny returns the first result among the tasks; the others go on.
func AwaitAny(ctx context.Context, tasks ...*Task) (*Result, error) {
	rs, err := awaitTasks(ctx, tasks, 1)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// awaitTasks waits for n results of tasks, watching their parent once
// when they share one.
func awaitTasks(ctx context.Context, tasks []*Task, n int) ([]*Result, error) {
	if len(tasks) == 0 {
		return nil, fmt.Errorf("agentsdk: await of no task: %w", ErrMalformed)
	}
	first := tasks[0]
	from := first.from
	for _, t := range tasks[1:] {
		if t.Parent != first.Parent || t.c != first.c {
			return nil, fmt.Errorf("agentsdk: await of tasks of different sessions (%s, %s): wait for each: %w", first.Parent, t.Parent, ErrMalformed)
		}
		from = min(from, t.from)
	}
	return awaitResults(ctx, first.c, first.Parent, from, tasks, n, first.consume)
}

// errFound stops a Follow once what it looks for is found.
var errFound = errors.New("found")

// awaitResults follows parent from seq from until n results of the tasks'
// children are in, and tells consume the seq of the last one (the
// envelope that gives the delegator its turn back, if any).
func awaitResults(ctx context.Context, c *Client, parent string, from uint64, tasks []*Task, n int, consume func(uint64)) ([]*Result, error) {
	var out []*Result
	var last uint64
	end, err := c.Follow(ctx, parent, from, func(e *hubpb.Envelope) error {
		r := e.GetDelegationResult()
		if r == nil || !slices.ContainsFunc(tasks, func(t *Task) bool { return t.ID == r.GetChildSessionId() }) {
			return nil
		}
		out, last = append(out, r), e.GetSeq()
		if len(out) == n {
			return errFound
		}
		return nil
	})
	if len(out) == n {
		if consume != nil {
			consume(last)
		}
		return out, nil
	}
	if end != nil {
		return nil, fmt.Errorf("agentsdk: session %s ended (%s) before the results: %w", parent, CloseReason(end), ErrSessionClosed)
	}
	return nil, err
}

// awaitAnswer follows a session from seq from until the question is
// answered (or withdrawn: ErrWithdrawn).
func awaitAnswer(ctx context.Context, c *Client, id string, from uint64, questionID string, consume func(uint64)) (*Answer, error) {
	var ans *Answer
	var closed *hubpb.QuestionClosed
	end, err := c.Follow(ctx, id, from, func(e *hubpb.Envelope) error {
		switch {
		case e.GetAnswer().GetQuestionId() == questionID:
			ans = e.GetAnswer()
			if consume != nil {
				consume(e.GetSeq())
			}
			return errFound
		case e.GetQuestionClosed().GetQuestionId() == questionID:
			closed = e.GetQuestionClosed()
			return errFound
		}
		return nil
	})
	switch {
	case ans != nil:
		return ans, nil
	case closed != nil:
		return nil, fmt.Errorf("agentsdk: question %q withdrawn (%s): %w", questionID, closed.GetReason(), ErrWithdrawn)
	case end != nil:
		return nil, fmt.Errorf("agentsdk: session %s ended (%s) before the answer: %w", id, CloseReason(end), ErrSessionClosed)
	}
	return nil, err
}

// AnswerQuestion answers a pending question of a session: as its answerer,
// or as an operator on someone's behalf. ErrBadAnswer names what would be
// valid (the pending questions, the options, the schema).
func (c *Client) AnswerQuestion(ctx context.Context, sessionID string, a *Answer, opts ...SendOption) (Ack, error) {
	e := &hubpb.Envelope{}
	for _, o := range opts {
		o(e)
	}
	if e.ClientMsgId == "" {
		e.ClientMsgId = newMsgID()
	}
	req := &hubpb.AnswerRequest{SessionId: sessionID, Answer: a, ClientMsgId: e.GetClientMsgId()}
	var resp *hubpb.SendResponse
	err := c.retryUnavailable(ctx, "answer", func() (err error) {
		resp, err = c.rpc.Answer(ctx, req)
		return err
	})
	if err != nil {
		return Ack{}, err
	}
	return Ack{SendResponse: resp, ClientMsgID: req.GetClientMsgId()}, nil
}

// ListQuestions returns the pending questions the caller must answer (an
// operator: everyone's, or answerer's), oldest first; with root, only
// those of root's tree.
func (c *Client) ListQuestions(ctx context.Context, answerer, root string) ([]*hubpb.PendingQuestion, error) {
	resp, err := c.rpc.ListQuestions(ctx, &hubpb.ListQuestionsRequest{Answerer: answerer, RootSessionId: root})
	if err != nil {
		return nil, wrapErr("list questions", err)
	}
	return resp.GetQuestions(), nil
}

// Tree returns a session's call tree from it down: state, close reason,
// turns, usage and duration per node.
func (c *Client) Tree(ctx context.Context, sessionID string) (*hubpb.TreeNode, error) {
	resp, err := c.rpc.GetTree(ctx, &hubpb.GetTreeRequest{SessionId: sessionID})
	if err != nil {
		return nil, wrapErr("tree", err)
	}
	return resp, nil
}

// Replay re-folds a session from its log with no agent called and says
// whether the result equals the live state (operators).
func (c *Client) Replay(ctx context.Context, sessionID string) (*hubpb.ReplayResponse, error) {
	resp, err := c.rpc.Replay(ctx, &hubpb.ReplayRequest{SessionId: sessionID})
	if err != nil {
		return nil, wrapErr("replay", err)
	}
	return resp, nil
}

// Delegate hands a task to a child session and waits for its result, as a
// handler waits for a tool call: the child opens with the caller as its
// creator, the turn is held (nobody speaks in this session meanwhile), and
// when the child ends its result is posted here and the turn comes back.
// The wait reads the log: it survives a restarting hub and a broken
// connection. If the agent process restarts while waiting, the turn comes
// back to a new handler with the result as its trigger
// (Turn.Trigger.GetDelegationResult()).
func (t *Turn) Delegate(ctx context.Context, child OpenOptions) (*Result, error) {
	rs, err := t.DelegateAll(ctx, child)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// DelegateAll delegates to several children at once (fan-out), the turn
// held until every one is done, and returns their results in the order
// they closed.
func (t *Turn) DelegateAll(ctx context.Context, children ...OpenOptions) ([]*Result, error) {
	tasks, err := t.delegate(ctx, DelegateOptions{Children: children, Mode: ModeBlocking, Await: AwaitAllChildren})
	if err != nil {
		return nil, err
	}
	return AwaitAll(ctx, tasks...)
}

// DelegateAny delegates to several children at once, the turn held until
// the first is done, and returns that one's result; the others go on and
// their results are posted as notices.
func (t *Turn) DelegateAny(ctx context.Context, children ...OpenOptions) (*Result, error) {
	tasks, err := t.delegate(ctx, DelegateOptions{Children: children, Mode: ModeBlocking, Await: AwaitAnyChild})
	if err != nil {
		return nil, err
	}
	return AwaitAny(ctx, tasks...)
}

// SpawnOption tunes Spawn.
type SpawnOption func(*DelegateOptions)

// WithTurnOnResult makes the task's result give the delegator a turn in
// this session (by default the result is a notice only).
func WithTurnOnResult() SpawnOption { return func(o *DelegateOptions) { o.Notify = NotifyTurn } }

// Spawn starts a child session in the background and returns its task at
// once; the turn stays the agent's (it still replies). Poll, message,
// cancel or wait for the task later, from this turn or another.
func (t *Turn) Spawn(ctx context.Context, child OpenOptions, opts ...SpawnOption) (*Task, error) {
	o := DelegateOptions{Children: []OpenOptions{child}, Mode: ModeBackground}
	for _, f := range opts {
		f(&o)
	}
	tasks, err := t.delegate(ctx, o)
	if err != nil {
		return nil, err
	}
	return tasks[0], nil
}

// delegate delegates from the turn's session under a client message id
// derived from the turn, so a handler run again for the same turn (after a
// restart) gets the same children.
func (t *Turn) delegate(ctx context.Context, o DelegateOptions) ([]*Task, error) {
	o.ClientMsgID = t.opID("delegate")
	tasks, err := t.Client.Delegate(ctx, t.SessionID, o)
	for _, k := range tasks {
		k.consume = t.consume
	}
	return tasks, err
}

// Ask asks a question on the turn and waits for its answer: the turn is
// held until the answerer (q.Answerer; by default the root session's
// creator) answers, and the answer is returned. An empty q.QuestionId is
// given one derived from the turn. The wait reads the log, as Delegate's
// does. ErrWithdrawn: the question was withdrawn (its session ended).
func (t *Turn) Ask(ctx context.Context, q *Question) (*Answer, error) {
	q = protoClone(q)
	if q.GetQuestionId() == "" {
		q.QuestionId = t.opID("q")
	}
	e := &hubpb.Envelope{Type: EventQuestion, ClientMsgId: t.opID("ask"), CausationId: t.Trigger.GetId(),
		Payload: &hubpb.Envelope_Question{Question: q}}
	ack, err := t.Client.send(ctx, t.SessionID, e, t.Client.attempts)
	if err != nil {
		return nil, err
	}
	return awaitAnswer(ctx, t.Client, t.SessionID, ack.GetSeq()+1, q.GetQuestionId(), t.consume)
}

// PassCaller is the reply that hands the turn, and the duty to answer
// this child session's caller, to another participant: its finish closes
// the session and answers the parent.
func (t *Turn) PassCaller(agent string) Reply {
	return ReplyPacket(NewPacket("").PassCaller(agent))
}

// opID returns the client message id of the turn's next operation of
// kind: the same sequence of ids for every run of a handler on one turn.
func (t *Turn) opID(kind string) string {
	t.ops++
	return fmt.Sprintf("%s/%s%d", TurnMsgID(t.SessionID, t.Trigger.GetSeq()), kind, t.ops)
}
