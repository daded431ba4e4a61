package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
	"github.com/hubd/hubd/hubpb"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return demo.Run(ctx, "supervisor", args, stdout, stderr, demo.Scenario{
		Agents: []demo.Agent{
			{Name: "user", Handle: user},
			{Name: "router", Handle: router},
			{Name: "billing", Handle: billing},
			{Name: "tech", Handle: tech},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Graph: Graph(), Participants: agentsdk.Invited("router", "billing", "tech"), Labels: labels})
		},
		Format: Feed,
		Report: report,
	})
}

// Graph is the supervisor team: the user talks to the router, who hands
// off to billing and tech with transfer_to_<name>; a specialist asks the
// router for help with request_help, or escalates to it (the graph's
// supervisor); the user's @mention goes straight to an agent, any other
// message to the active agent (sticky: the last one handed to); every
// agent's plain reply goes back to the user.
func Graph() *agentsdk.Graph {
	return agentsdk.Supervisor(agentsdk.SupervisorSpec{
		Router:      "router",
		Specialists: []string{"billing", "tech"},
		User:        "user",
		MaxTurns:    20,
	})
}

// Feed prints the session in the words of seed 000's event stream:
//
//	[seq] message user: ...                 the user's text
//	[seq] ai_message agent: ...             an agent's text
//	[seq] tool_usage agent: tool (args)     a tool call, a handoff, an escalation
//	[seq] tool_response agent: tool → ...   a tool's result; the hub's routing of a handoff
//	[seq] done agent: reason (summary)      the finish
func Feed(e *hubpb.Envelope, _ *demo.Sessions) string {
	at := fmt.Sprintf("[%d] ", e.GetSeq())
	from := e.GetFrom()
	said := "ai_message"
	if from == "user" {
		said = "message"
	}
	switch e.GetType() {
	case agentsdk.EventText:
		return at + said + " " + from + ": " + agentsdk.TextOf(e)
	case agentsdk.EventToolCall:
		c := e.GetToolCall()
		args, err := hubpb.MarshalJSON(c.GetArguments())
		if err != nil || len(c.GetArguments().GetFields()) == 0 {
			args = nil
		}
		return strings.TrimSpace(fmt.Sprintf("%stool_usage %s: %s %s", at, from, c.GetName(), args))
	case agentsdk.EventToolResult:
		r := e.GetToolResult()
		return fmt.Sprintf("%stool_response %s: %s → %s", at, from, r.GetName(), demo.ToolResult(r))
	case agentsdk.EventPacket:
	default:
		return ""
	}
	var lines []string
	if body := e.GetPacket().GetBody(); body != "" {
		lines = append(lines, at+said+" "+from+": "+body)
	}
	switch r := e.GetPacket().GetRouting(); r.GetKind() {
	case agentsdk.RoutingHandoff, agentsdk.RoutingEscalate:
		tool := r.GetTool()
		if r.GetKind() == agentsdk.RoutingEscalate {
			tool = "escalate"
		}
		lines = append(lines, fmt.Sprintf("%stool_usage %s: %s (%s)", at, from, tool, r.GetReason()),
			fmt.Sprintf("%stool_response hub: %s", at, e.GetRule()))
	case agentsdk.RoutingFinish:
		lines = append(lines, fmt.Sprintf("%sdone %s: %s (%s)", at, from, r.GetReason(), r.GetSummary()))
	}
	return strings.Join(lines, "\n")
}

// report prints who the session's active agent and supervisor were at
// its end, and how many handoffs it took.
func report(ctx context.Context, c *agentsdk.Client, s *agentsdk.Session, out io.Writer) error {
	info, err := c.GetSession(ctx, s.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "active agent: %s, supervisor: %s, handoffs: %d, turns: %d\n",
		info.GetActiveAgent(), info.GetSupervisor(), info.GetHandoffs(), info.GetTurn())
	return nil
}

// user is the person: a double charge first, then a login problem (the
// active agent, billing, still has the conversation), then a question put
// to billing by @mention; then thanks.
func user(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	switch t.Trigger.GetFrom() {
	case "": // the session opened
		return agentsdk.ReplyText("I was charged twice for March."), nil
	case "billing":
		// Who has the conversation now? (seed 000's get_current_active_agent)
		_, err := demo.ToolsOf(t).Call(ctx, "get_current_active_agent", nil, func(ctx context.Context) (any, error) {
			info, err := t.Client.GetSession(ctx, t.SessionID)
			return info.GetActiveAgent(), err
		})
		if err != nil {
			return agentsdk.Reply{}, err
		}
		return agentsdk.ReplyText("Thanks. I cannot log in either."), nil
	case "tech":
		return agentsdk.ReplyText("@billing When will the refund reach my card?"), nil
	case "router":
		return agentsdk.ReplyPacket(agentsdk.NewPacket("Thank you!").Finish("resolved", "refund issued, login restored")), nil
	}
	return agentsdk.Reply{}, fmt.Errorf("user: unexpected turn after %q", t.Trigger.GetFrom())
}

// router hands the user's problems to the specialists and answers what
// they hand back to it.
func router(_ context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	r := t.Trigger.GetPacket().GetRouting()
	switch {
	case t.Trigger.GetFrom() == "user":
		return agentsdk.ReplyPacket(agentsdk.NewPacket("").Handoff("transfer_to_billing", "", "double charge")), nil
	case r.GetTool() == "request_help":
		return agentsdk.ReplyPacket(agentsdk.NewPacket("").Handoff("transfer_to_tech", "", "login")), nil
	case r.GetKind() == agentsdk.RoutingEscalate:
		return agentsdk.ReplyText("Refunds reach your card within 5 business days."), nil
	}
	return agentsdk.Reply{}, fmt.Errorf("router: unexpected turn after %q", t.Trigger.GetFrom())
}

// billing refunds the double charge (a tool), asks the router for help
// with what is not billing's, and escalates a promise it cannot make.
func billing(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	switch {
	case t.Trigger.GetFrom() == "router":
		charges, err := demo.ToolsOf(t).Call(ctx, "lookup_charges", map[string]any{"month": "March"}, func(context.Context) (any, error) {
			return []any{map[string]any{"amount": 42, "id": "ch_1"}, map[string]any{"amount": 42, "id": "ch_2"}}, nil
		})
		if err != nil {
			return agentsdk.Reply{}, err
		}
		return agentsdk.ReplyText(fmt.Sprintf("I found %d charges of $42 in March and refunded ch_2.", len(charges.([]any)))), nil
	case strings.HasPrefix(t.Text(), "@billing"):
		if _, err := demo.ToolsOf(t).Call(ctx, "get_supervisor_agent", nil, func(ctx context.Context) (any, error) {
			info, err := t.Client.GetSession(ctx, t.SessionID)
			return info.GetSupervisor(), err
		}); err != nil {
			return agentsdk.Reply{}, err
		}
		return agentsdk.ReplyPacket(agentsdk.NewPacket("I cannot promise a date myself.").Escalate("refund dates")), nil
	default:
		return agentsdk.ReplyPacket(agentsdk.NewPacket("").Handoff("request_help", "", "a login problem is not billing's")), nil
	}
}

// tech resets the password (a tool) and tells the user.
func tech(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	if _, err := demo.ToolsOf(t).Call(ctx, "send_password_reset", map[string]any{"account": "user"}, func(context.Context) (any, error) {
		return "reset link sent", nil
	}); err != nil {
		return agentsdk.Reply{}, err
	}
	return agentsdk.ReplyText("I sent you a password reset link."), nil
}
