package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// Sessions looks up the sessions of a transcript (as the client following
// it), so that a line can name a child session by its agents rather than
// by its id, which changes from run to run.
type Sessions struct {
	get   func(id string) (*agentsdk.Session, error)
	tree  func() (*hubpb.TreeNode, error) // the root's call tree
	root  string
	known map[string]*agentsdk.Session // only the transcript's goroutine touches it
}

// Root returns the id of the transcript's session.
func (s *Sessions) Root() string { return s.root }

// Get returns a session's metadata and state as first read (from the
// root's call tree when the follower may not read the session itself),
// nil when it cannot be read.
func (s *Sessions) Get(id string) *agentsdk.Session {
	if x, ok := s.known[id]; ok {
		return x
	}
	x, err := s.get(id)
	if err != nil {
		x = nil
		if root, err := s.tree(); err == nil {
			var walk func(n *hubpb.TreeNode)
			walk = func(n *hubpb.TreeNode) {
				if n.GetSession().GetMeta().GetSessionId() == id {
					x = &agentsdk.Session{SessionInfo: n.GetSession()}
				}
				for _, k := range n.GetChildren() {
					walk(k)
				}
			}
			walk(root)
		}
	}
	s.known[id] = x
	return x
}

// Name names a session by its agents: a child by its participants other
// than its creator (the delegates), "agent_a, agent_b"; the root by all of
// them.
func (s *Sessions) Name(id string) string {
	x := s.Get(id)
	if x == nil {
		return "?"
	}
	return SessionName(x.SessionInfo)
}

// SessionName names a session by its agents (a child by its participants
// other than its creator, a root by all of them) and its labels but the
// run's ([Label], random): "researcher, writer (topic=etcd)".
func SessionName(info *hubpb.SessionInfo) string {
	m := info.GetMeta()
	var names []string
	for _, p := range m.GetParticipants() {
		if m.GetParentSessionId() == "" || p.GetName() != m.GetCreator() {
			names = append(names, p.GetName())
		}
	}
	name := strings.Join(names, ", ")
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(m.GetLabels())) {
		if k != Label {
			labels = append(labels, k+"="+m.GetLabels()[k])
		}
	}
	if len(labels) > 0 {
		name += " (" + strings.Join(labels, ", ") + ")"
	}
	return name
}

// Event formats an envelope of a call tree in words; "" for the lifecycle
// envelopes a reader can do without (invites, acknowledgements, opens and
// the root's own close, which Run prints last):
//
//	from: text [routing] [usage]          a turn, as Line has it, without the seq
//	from: (message) text                  a word for the next speaker, not a turn
//	from delegates (blocking) to A; B     children opened
//	result of A: reason, answered by R: summary [usage]
//	                                      a child's result, for its delegator
//	from asks answerer: text [options]    a question (the turn is held)
//	answerer answers: text or options     its answer
//	from: progress task 50% detail        a task's progress report
//	from calls tool {args}                a tool call
//	tool → result                         its result
//	closed: reason                        a child's end
func Event(e *hubpb.Envelope, s *Sessions) string {
	from := e.GetFrom()
	switch e.GetType() {
	case agentsdk.EventText, agentsdk.EventPacket:
		line := Line(e)
		return line[strings.Index(line, "] ")+2:] + usageNote(e.GetPacket().GetUsage())
	case agentsdk.EventMessage:
		return fmt.Sprintf("%s: (message) %s", from, e.GetMessage().GetText())
	case agentsdk.EventDelegation:
		d := e.GetDelegation()
		var names []string
		for _, id := range d.GetChildSessionIds() {
			names = append(names, s.Name(id))
		}
		how := d.GetMode()
		if d.GetMode() == agentsdk.ModeBlocking && len(names) > 1 {
			how += ", await " + d.GetAwait()
		}
		return fmt.Sprintf("%s delegates (%s) to %s", d.GetDelegator(), how, strings.Join(names, "; "))
	case agentsdk.EventDelegationResult:
		r := e.GetDelegationResult()
		line := fmt.Sprintf("result of %s: %s", s.Name(r.GetChildSessionId()), r.GetReason())
		if r.GetSummary() != "" {
			line += fmt.Sprintf(", answered by %s: %s", r.GetResponder(), r.GetSummary())
		}
		return line + usageNote(r.GetUsage())
	case agentsdk.EventQuestion:
		q := e.GetQuestion()
		line := fmt.Sprintf("%s asks %s: %s", from, q.GetAnswerer(), q.GetText())
		if len(q.GetOptions()) > 0 {
			var opts []string
			for _, o := range q.GetOptions() {
				opts = append(opts, o.GetId()+" = "+o.GetLabel())
			}
			line += " [" + strings.Join(opts, "; ") + "]"
		}
		return line
	case agentsdk.EventAnswer:
		a := e.GetAnswer()
		by := a.GetBy()
		if by == "" {
			by = from
		}
		if len(a.GetOptionIds()) > 0 {
			return fmt.Sprintf("%s answers: %s", by, strings.Join(a.GetOptionIds(), ", "))
		}
		return fmt.Sprintf("%s answers: %s", by, a.GetText())
	case agentsdk.EventQuestionClosed:
		return fmt.Sprintf("question %s withdrawn: %s", e.GetQuestionClosed().GetQuestionId(), e.GetQuestionClosed().GetReason())
	case agentsdk.EventTaskProgress:
		p := e.GetTaskProgress()
		return fmt.Sprintf("%s: progress %s %g%% %s", from, p.GetTask(), p.GetPercent(), p.GetDetail())
	case agentsdk.EventToolCall:
		c := e.GetToolCall()
		args, err := hubpb.MarshalJSON(c.GetArguments())
		if err != nil || c.GetArguments() == nil {
			args = []byte("{}")
		}
		return fmt.Sprintf("%s calls %s %s", from, c.GetName(), args)
	case agentsdk.EventToolResult:
		return fmt.Sprintf("%s → %s", e.GetToolResult().GetName(), ToolResult(e.GetToolResult()))
	case agentsdk.EventClosed, agentsdk.EventExpired:
		if e.GetSessionId() == s.Root() {
			return ""
		}
		return fmt.Sprintf("%s: %s", strings.TrimPrefix(e.GetType(), "session_"), agentsdk.CloseReason(e))
	}
	return ""
}

// ToolResult returns a tool result in words: its error, its string, or its
// JSON.
func ToolResult(r *hubpb.ToolResult) string {
	if r.GetError() != "" {
		return "error: " + r.GetError()
	}
	if v, ok := r.GetResult().GetKind().(*structpb.Value_StringValue); ok {
		return v.StringValue
	}
	b, err := hubpb.MarshalJSON(r.GetResult())
	if err != nil {
		return "?"
	}
	return string(b)
}

// usageNote is " [usage ...]" for a usage with anything in it, else "".
func usageNote(u *hubpb.Usage) string {
	if u.GetInputTokens() == 0 && u.GetOutputTokens() == 0 && u.GetCostUsd() == 0 && u.GetToolCalls() == 0 {
		return ""
	}
	return " [usage " + Usage(u) + "]"
}

// Usage formats token usage: "1200 in, 300 out, $0.0150, 1 tool call".
func Usage(u *hubpb.Usage) string {
	s := fmt.Sprintf("%d in, %d out, $%.4f", u.GetInputTokens(), u.GetOutputTokens(), u.GetCostUsd())
	switch n := u.GetToolCalls(); n {
	case 0:
	case 1:
		s += ", 1 tool call"
	default:
		s += fmt.Sprintf(", %d tool calls", n)
	}
	return s
}

// PrintTree prints the call tree of session id (Client.Tree), one session
// a line, indented two spaces per depth: its agents, state and close
// reason, turns and own usage.
func PrintTree(ctx context.Context, c *agentsdk.Client, id string, out io.Writer) error {
	root, err := c.Tree(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the call tree of %s: %w", id, err)
	}
	fmt.Fprintln(out, "call tree:")
	var walk func(n *hubpb.TreeNode, depth int)
	walk = func(n *hubpb.TreeNode, depth int) {
		info := n.GetSession()
		state := info.GetState()
		if r := info.GetCloseReason(); r != "" {
			state += " " + r
		}
		turns := "turns"
		if n.GetTurns() == 1 {
			turns = "turn"
		}
		fmt.Fprintf(out, "%s%s: %s %s, %d %s, usage %s\n", strings.Repeat("  ", depth+1), SessionName(info),
			info.GetMeta().GetType(), state, n.GetTurns(), turns, Usage(n.GetUsage()))
		for _, k := range n.GetChildren() {
			walk(k, depth+1)
		}
	}
	walk(root, 0)
	return nil
}

// PrintTreeUsage prints the usage summed over a session's whole tree, as
// GetSession has it (tree_usage).
func PrintTreeUsage(ctx context.Context, c *agentsdk.Client, id string, out io.Writer) error {
	info, err := c.GetSession(ctx, id)
	if err != nil {
		return fmt.Errorf("reading session %s: %w", id, err)
	}
	fmt.Fprintln(out, "tree usage:", Usage(info.GetTreeUsage()))
	return nil
}

// Answerer is a person's part in a scenario (an Agent's Run): it answers
// the questions put to the agent in the session's tree with answer, one
// at a time as they come (listing them with Client.ListQuestions every
// poll), until ctx ends.
func Answerer(poll time.Duration, answer func(ctx context.Context, q *hubpb.PendingQuestion) (*agentsdk.Answer, error)) func(context.Context, *agentsdk.Client, *agentsdk.Session) error {
	return func(ctx context.Context, c *agentsdk.Client, s *agentsdk.Session) error {
		var done []string
		for {
			qs, err := c.ListQuestions(ctx, "", s.ID())
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("listing questions: %w", err)
			}
			for _, q := range qs {
				id := q.GetEnvelope().GetQuestion().GetQuestionId()
				if slices.Contains(done, q.GetSessionId()+"/"+id) {
					continue
				}
				a, err := answer(ctx, q)
				if err != nil {
					return err
				}
				a.QuestionId = id
				if _, err := c.AnswerQuestion(ctx, q.GetSessionId(), a); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("answering question %s: %w", id, err)
				}
				done = append(done, q.GetSessionId()+"/"+id)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
		}
	}
}

// Tools logs the tools an agent calls on one of its turns.
type Tools struct {
	t *agentsdk.Turn
	n int // calls so far
}

// ToolsOf returns the tool log of a turn; use one per turn.
func ToolsOf(t *agentsdk.Turn) *Tools { return &Tools{t: t} }

// Call runs a tool and logs it in the turn's session as a tool_call and
// then a tool_result (neither is a turn): the tool usage and tool response
// a feed shows. Their client message ids derive from the turn and the
// call's place in it, so a handler run again for the same turn logs them
// once. It returns what the tool returned.
func (x *Tools) Call(ctx context.Context, name string, args map[string]any, tool func(context.Context) (any, error)) (any, error) {
	x.n++
	t := x.t
	id := fmt.Sprintf("%s/tool%d", agentsdk.TurnMsgID(t.SessionID, t.Trigger.GetSeq()), x.n)
	a, err := structpb.NewStruct(args)
	if err != nil {
		return nil, fmt.Errorf("arguments of %s: %w", name, err)
	}
	call := &hubpb.Envelope{Type: agentsdk.EventToolCall, Payload: &hubpb.Envelope_ToolCall{
		ToolCall: &hubpb.ToolCall{CallId: id, Name: name, Arguments: a}}}
	if _, err := t.Client.Send(ctx, t.SessionID, call, agentsdk.WithClientMsgID(id+"/call")); err != nil {
		return nil, fmt.Errorf("logging the call of %s: %w", name, err)
	}
	out, toolErr := tool(ctx)
	res := &hubpb.ToolResult{CallId: id, Name: name}
	if toolErr != nil {
		res.Error = toolErr.Error()
	} else if res.Result, err = agentsdk.Value(out); err != nil {
		return nil, fmt.Errorf("result of %s: %w", name, err)
	}
	result := &hubpb.Envelope{Type: agentsdk.EventToolResult, Payload: &hubpb.Envelope_ToolResult{ToolResult: res}}
	if _, err := t.Client.Send(ctx, t.SessionID, result, agentsdk.WithClientMsgID(id+"/result")); err != nil {
		return nil, fmt.Errorf("logging the result of %s: %w", name, err)
	}
	if toolErr != nil {
		return nil, fmt.Errorf("tool %s: %w", name, toolErr)
	}
	return out, nil
}
