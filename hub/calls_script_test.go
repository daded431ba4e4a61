package hub_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// delegate opens the input's children (one OpenRequest per line) of session
// parent on agent's turn; they are named after the sessions opened so far.
func (r *runner) delegate(td *datadriven.TestData, agent, parent string) string {
	req := &hubpb.DelegateRequest{SessionId: r.id(parent).String()}
	if v := arg(td, "mode"); len(v) == 1 {
		req.Mode = v[0]
	}
	if v := arg(td, "await"); len(v) == 1 {
		req.Await = v[0]
	}
	if v := arg(td, "notify"); len(v) == 1 {
		req.Notify = v[0]
	}
	if v := arg(td, "key"); len(v) == 1 {
		req.ClientMsgId = v[0]
	}
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		c := &hubpb.OpenRequest{}
		if err := hubpb.UnmarshalJSON([]byte(line), c); err != nil {
			return "bad child: " + err.Error()
		}
		req.Children = append(req.Children, c)
	}
	resp, err := r.env.hub.Delegate(context.Background(), agent, req)
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "delegation %s", ackLine(resp.GetDelegation(), nil))
	if resp.GetDuplicate() {
		b.WriteString(" (duplicate)")
	}
	for _, c := range resp.GetChildren() {
		id := c.GetMeta().GetSessionId()
		name := r.nameOf(id)
		if name == id {
			name = fmt.Sprintf("s%d", len(r.order)+1)
			r.names[name] = session.MustParseID(id)
			r.order = append(r.order, name)
		}
		fmt.Fprintf(&b, "\n%s %s depth=%d", name, c.GetState(), c.GetMeta().GetDepth())
	}
	return b.String()
}

// answer answers a question of a session; with "operator" the agent is one.
func (r *runner) answer(td *datadriven.TestData, args []string) string {
	a := &hubpb.Answer{}
	if err := hubpb.UnmarshalJSON([]byte(td.Input), a); err != nil {
		return "bad answer: " + err.Error()
	}
	req := &hubpb.AnswerRequest{SessionId: r.id(args[1]).String(), Answer: a}
	if v := arg(td, "key"); len(v) == 1 {
		req.ClientMsgId = v[0]
	}
	operator := len(args) > 2 && args[2] == "operator"
	return ackLine(r.env.hub.Answer(context.Background(), args[0], operator, req))
}

// questions lists pending questions.
func (r *runner) questions(td *datadriven.TestData, args []string) string {
	var root session.ID
	if v := arg(td, "root"); len(v) == 1 {
		root = r.id(v[0])
	}
	answerer := ""
	if v := arg(td, "answerer"); len(v) == 1 {
		answerer = v[0]
	}
	operator := len(args) > 1 && args[1] == "operator"
	qs, err := r.env.hub.ListQuestions(context.Background(), args[0], operator, answerer, root)
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pending", len(qs))
	for _, q := range qs {
		e := q.GetEnvelope()
		fmt.Fprintf(&b, "\n%s#%d %s asks %s: %s", r.nameOf(q.GetSessionId()), e.GetSeq(), q.GetAsker(),
			e.GetQuestion().GetAnswerer(), e.GetQuestion().GetQuestionId())
	}
	return b.String()
}

// info prints what SessionInfo says of calls: holds, open children, the
// responder, usage over the tree, routing.
func (r *runner) info(name string) string {
	i, err := r.env.hub.Get(context.Background(), "", true, r.id(name))
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s expected=%s", i.GetState(), strings.Join(i.GetExpected(), ","))
	for _, h := range i.GetHolds() {
		fmt.Fprintf(&b, "\nhold %s %s", h.GetHolder(), h.GetKind())
		if h.GetKind() == "children" {
			fmt.Fprintf(&b, " %s await=%s done=%s", r.names2(h.GetChildren()), h.GetAwait(), r.names2(h.GetDone()))
		} else {
			fmt.Fprintf(&b, " %s from %s", h.GetQuestionId(), h.GetAnswerer())
		}
	}
	if c := i.GetOpenChildren(); len(c) > 0 {
		fmt.Fprintf(&b, "\nopen children %s", r.names2(c))
	}
	if x := i.GetResponder(); x != "" {
		fmt.Fprintf(&b, "\nresponder %s", x)
	}
	if a := i.GetActiveAgent(); a != "" {
		fmt.Fprintf(&b, "\nactive %s handoffs=%d supervisor=%s", a, i.GetHandoffs(), i.GetSupervisor())
	}
	u := i.GetTreeUsage()
	fmt.Fprintf(&b, "\ntree usage tokens=%d cost=%g tools=%d", u.GetInputTokens()+u.GetOutputTokens(), u.GetCostUsd(), u.GetToolCalls())
	return b.String()
}

// names2 returns the script names of session ids, comma-separated.
func (r *runner) names2(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = r.nameOf(id)
	}
	return "(" + strings.Join(out, ",") + ")"
}

// tree prints a session's tree, one node per line, indented by depth.
func (r *runner) tree(name string) string {
	n, err := r.env.hub.GetTree(context.Background(), "", true, r.id(name))
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	var walk func(n *hubpb.TreeNode, depth int)
	walk = func(n *hubpb.TreeNode, depth int) {
		s := n.GetSession()
		u := s.GetTreeUsage()
		fmt.Fprintf(&b, "%s%s %s %s turns=%d tree_tokens=%d took=%v\n", strings.Repeat("  ", depth), r.nameOf(s.GetMeta().GetSessionId()),
			s.GetState(), s.GetCloseReason(), n.GetTurns(), u.GetInputTokens()+u.GetOutputTokens(), n.GetDuration().AsDuration())
		for _, c := range n.GetChildren() {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return strings.TrimSuffix(b.String(), "\n")
}

// replay re-folds a session from its log and says whether it equals live.
func (r *runner) replay(name string) string {
	resp, err := r.env.hub.Replay(context.Background(), r.id(name))
	if err != nil {
		return errLine(err)
	}
	var b strings.Builder
	for _, st := range resp.GetSteps() {
		e := st.GetEnvelope()
		fmt.Fprintf(&b, "#%d %s", e.GetSeq(), e.GetType())
		if st.GetRule() != "" {
			fmt.Fprintf(&b, " rule=%q", st.GetRule())
		}
		fmt.Fprintf(&b, " → %s turn=%d expected=%s\n", st.GetState(), st.GetTurn(), strings.Join(st.GetExpected(), ","))
	}
	fmt.Fprintf(&b, "equal=%v", resp.GetEqual())
	if !resp.GetEqual() {
		fmt.Fprintf(&b, " first_difference=%d %s", resp.GetFirstDifference(), resp.GetDetail())
	}
	return b.String()
}

// deadlines prints a session's pending timers, earliest first, with their
// times since the epoch: what the hub's timers will act on.
func (r *runner) deadlines(name string) string {
	ds, err := r.env.hub.Deadlines(context.Background(), "", true, r.id(name))
	if err != nil {
		return errLine(err)
	}
	if len(ds) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %s at=+%v since=+%v", d.Name, d.Action, d.At.Sub(epoch), d.Since.Sub(epoch))
		if len(d.Violators) > 0 {
			fmt.Fprintf(&b, " violators=%s", strings.Join(d.Violators, ","))
		}
		b.WriteString("\n")
	}
	return b.String()
}
