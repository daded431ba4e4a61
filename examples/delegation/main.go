package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
	"github.com/hubd/hubd/hubpb"
)

func main() { demo.Main(run) }

// The agents.
const (
	User     = "user"
	Main     = "MainAgent"
	Research = "ResearchAgent"
	Tasks    = "TasksAgent"
)

// poll is how often MainAgent polls a background task, and the person
// the pending questions.
const poll = 10 * time.Millisecond

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return demo.Run(ctx, "delegation", args, stdout, stderr, demo.Scenario{
		Agents: []demo.Agent{
			{Name: User, Handle: user, Run: demo.Answerer(poll, person)},
			{Name: Main, Handle: mainAgent},
			{Name: Research, Handle: research},
			{Name: Tasks, Handle: tasks},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			return c.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(Main),
				Delegates: []string{Research, Tasks}, Task: "Prepare my review of the Acme account.", Labels: labels})
		},
		// MainAgent takes part in every session of the tree: the feed is
		// its timeline.
		Tree: &demo.Tree{As: Main},
		Report: func(ctx context.Context, c *agentsdk.Client, s *agentsdk.Session, out io.Writer) error {
			if err := demo.PrintTree(ctx, c, s.ID(), out); err != nil {
				return err
			}
			return demo.PrintTreeUsage(ctx, c, s.ID(), out)
		},
	})
}

// child is a conversation of MainAgent with agent, given task, labelled
// with the task's name.
func child(agent, name, task string) agentsdk.OpenOptions {
	return agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted(agent), Task: task,
		Labels: map[string]string{"task": name}}
}

// user asked for the review (the session's task); MainAgent's answer ends
// the conversation.
func user(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
	return agentsdk.ReplyPacket(agentsdk.NewPacket("Thanks!").Finish("answered", "")), nil
}

// person is the user answering MainAgent's question, as a person would in
// a UI: they pick the option "tomorrow".
func person(_ context.Context, q *hubpb.PendingQuestion) (*agentsdk.Answer, error) {
	for _, o := range q.GetEnvelope().GetQuestion().GetOptions() {
		if o.GetId() == "tomorrow" {
			return &agentsdk.Answer{OptionIds: []string{o.GetId()}}, nil
		}
	}
	return nil, fmt.Errorf("question %q has no option tomorrow", q.GetEnvelope().GetQuestion().GetText())
}

// mainAgent prepares the review in one turn with the user: research in a
// blocking call, the follow-ups in a background task it polls and
// messages, a bulk job it starts and cancels, and a question to the user
// before it answers.
func mainAgent(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	if t.Trigger.GetCall().GetDepth() > 0 {
		// A turn in one of its children (a task awaiting it): it speaks
		// there through the task's handle, from its turn with the user.
		return agentsdk.Reply{}, nil
	}
	tools := demo.ToolsOf(t)
	// 1. Blocking: the turn waits for ResearchAgent's result.
	news, err := t.Delegate(ctx, child(Research, "news", "Research Acme's latest product announcements."))
	if err != nil {
		return agentsdk.Reply{}, fmt.Errorf("research: %w", err)
	}

	// 2. Background: the task runs while this turn goes on.
	followUps, err := t.Spawn(ctx, child(Tasks, "follow-ups", "List Acme's open follow-ups."))
	if err != nil {
		return agentsdk.Reply{}, fmt.Errorf("spawning the follow-ups task: %w", err)
	}
	st, err := until(ctx, followUps, func(st *agentsdk.TaskStatus) bool {
		return len(st.Progress) > 0 && slices.Contains(st.Session.GetExpected(), Main) // it reported and awaits us
	})
	if err != nil {
		return agentsdk.Reply{}, err
	}
	if err := logStatus(ctx, tools, "follow-ups", st); err != nil {
		return agentsdk.Reply{}, err
	}
	// send_and_wait: a question for the task, and its next reply.
	_, err = tools.Call(ctx, "message_sub_agent", map[string]any{"task": "follow-ups", "mode": "send_and_wait",
		"message": "Which of them are overdue?"}, func(ctx context.Context) (any, error) {
		reply, err := followUps.MessageAndWait(ctx, "Which of them are overdue?")
		return agentsdk.TextOf(reply), err
	})
	if err != nil {
		return agentsdk.Reply{}, err
	}
	// send: the task wraps up on its own; wait for its result.
	if _, err := followUps.Message(ctx, "Thanks, that is all: wrap up."); err != nil {
		return agentsdk.Reply{}, fmt.Errorf("messaging the follow-ups task: %w", err)
	}
	if _, err := followUps.Wait(ctx); err != nil {
		return agentsdk.Reply{}, fmt.Errorf("waiting for the follow-ups task: %w", err)
	}
	st, err = followUps.Poll(ctx)
	if err != nil {
		return agentsdk.Reply{}, err
	}
	if err := logStatus(ctx, tools, "follow-ups", st); err != nil {
		return agentsdk.Reply{}, err
	}

	// 3. A bulk job, started and then cancelled: it is not needed today.
	bulk, err := t.Spawn(ctx, child(Tasks, "emails", "Draft follow-up emails to all 40 Acme contacts."))
	if err != nil {
		return agentsdk.Reply{}, fmt.Errorf("spawning the bulk task: %w", err)
	}
	st, err = until(ctx, bulk, func(st *agentsdk.TaskStatus) bool { return len(st.Progress) > 0 })
	if err != nil {
		return agentsdk.Reply{}, err
	}
	if err := logStatus(ctx, tools, "emails", st); err != nil {
		return agentsdk.Reply{}, err
	}
	if err := bulk.Cancel(ctx); err != nil {
		return agentsdk.Reply{}, fmt.Errorf("cancelling the bulk task: %w", err)
	}
	cancelled, err := bulk.Wait(ctx)
	if err != nil {
		return agentsdk.Reply{}, fmt.Errorf("waiting for the bulk task: %w", err)
	}

	// 4. A question with options; the turn waits for the user's answer.
	a, err := t.Ask(ctx, &agentsdk.Question{Text: "Send reminders for the 2 overdue follow-ups?",
		Options: []*agentsdk.Option{{Id: "now", Label: "Now"}, {Id: "tomorrow", Label: "Tomorrow morning"}, {Id: "no", Label: "Do not send"}}})
	if err != nil {
		return agentsdk.Reply{}, fmt.Errorf("asking the user: %w", err)
	}

	done, err := followUps.Poll(ctx)
	if err != nil {
		return agentsdk.Reply{}, err
	}
	answer := fmt.Sprintf("Acme review: %s Follow-ups: %s Reminders: %s. The email drafts were %s.",
		news.GetSummary(), done.Result.GetSummary(), strings.Join(a.GetOptionIds(), ", "), cancelled.GetReason())
	return agentsdk.ReplyPacket(agentsdk.NewPacket(answer).WithUsage(&hubpb.Usage{InputTokens: 2400, OutputTokens: 180, CostUsd: 0.021, ToolCalls: 4})), nil
}

// until polls a background task (reads only, no turn used) until ok says
// so or the task is over.
func until(ctx context.Context, task *agentsdk.Task, ok func(*agentsdk.TaskStatus) bool) (*agentsdk.TaskStatus, error) {
	for {
		st, err := task.Poll(ctx)
		if err != nil {
			return nil, fmt.Errorf("polling task %s: %w", task.ID, err)
		}
		if ok(st) || st.Done() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// logStatus logs a poll as seed 002's get_background_sub_agent_result
// tool: the task's state, its last progress report and its result.
func logStatus(ctx context.Context, tools *demo.Tools, name string, st *agentsdk.TaskStatus) error {
	_, err := tools.Call(ctx, "get_background_sub_agent_result", map[string]any{"task": name}, func(context.Context) (any, error) {
		out := map[string]any{"state": st.State}
		if n := len(st.Progress); n > 0 {
			p := st.Progress[n-1]
			out["progress"] = fmt.Sprintf("%g%% %s", p.GetPercent(), p.GetDetail())
		}
		if st.Result != nil {
			out["result"] = st.Result.GetSummary()
		}
		return out, nil
	})
	return err
}

// research looks the news up (a tool) and finishes its session with a
// summary, which is its result.
func research(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	if _, err := demo.ToolsOf(t).Call(ctx, "web_search", map[string]any{"query": "Acme product announcements"}, func(context.Context) (any, error) {
		return "Acme launches Widget 2 (May 4); Acme cuts list prices 10% (May 20)", nil
	}); err != nil {
		return agentsdk.Reply{}, err
	}
	return agentsdk.ReplyPacket(agentsdk.NewPacket("Two announcements in May.").
		Finish("", "Acme launched Widget 2 and cut its list prices by 10%.").
		WithUsage(&hubpb.Usage{InputTokens: 1200, OutputTokens: 300, CostUsd: 0.015, ToolCalls: 1})), nil
}

// tasks works through the follow-ups, reporting progress (task_progress)
// and answering MainAgent's messages; the email drafts take so long that
// it only starts them.
func tasks(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	progress := func(task string, percent float64, detail string) error {
		e := &hubpb.Envelope{Type: agentsdk.EventTaskProgress, Payload: &hubpb.Envelope_TaskProgress{
			TaskProgress: &hubpb.TaskProgress{Task: task, Percent: percent, Detail: detail}}}
		_, err := t.Client.Send(ctx, t.SessionID, e, agentsdk.WithClientMsgID(agentsdk.TurnMsgID(t.SessionID, t.Trigger.GetSeq())+"/progress"))
		return err
	}
	switch text := t.Text(); {
	case strings.HasPrefix(text, "List"):
		if err := progress("follow-ups", 50, "3 of 6 accounts checked"); err != nil {
			return agentsdk.Reply{}, err
		}
		return agentsdk.ReplyText("6 open follow-ups so far."), nil
	case strings.HasPrefix(text, "Which"):
		if err := progress("follow-ups", 100, "6 of 6 accounts checked"); err != nil {
			return agentsdk.Reply{}, err
		}
		return agentsdk.ReplyText("2 are overdue: the renewal call and the security review."), nil
	case strings.HasPrefix(text, "Thanks"):
		return agentsdk.ReplyPacket(agentsdk.NewPacket("Done.").Finish("", "6 open, 2 overdue (renewal call, security review).").
			WithUsage(&hubpb.Usage{InputTokens: 800, OutputTokens: 120, CostUsd: 0.006})), nil
	case strings.HasPrefix(text, "Draft"):
		if err := progress("emails", 0, "0 of 40 drafted"); err != nil {
			return agentsdk.Reply{}, err
		}
		<-ctx.Done() // a long job: it runs until the task is cancelled
		return agentsdk.Reply{}, nil
	}
	return agentsdk.Reply{}, fmt.Errorf("tasks: unexpected %q", t.Text())
}
