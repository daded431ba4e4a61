package a2abridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
)

// toolName names the bridge's records: tool_call envelopes whose call id
// is the remote task's id.
const toolName = "a2a"

// taskRecord is a remote task recorded in a session.
type taskRecord struct {
	taskID, contextID, messageID string
}

// remember records the task that msg began, before the bridge waits on
// it. The record's client message id is derived from the message's, so a
// record retried is written once.
func (k *task) remember(ctx context.Context, taskID string, msg *a2apb.Message) error {
	args, err := structpb.NewStruct(map[string]any{"task_id": taskID, "context_id": msg.GetContextId(),
		"message_id": msg.GetMessageId(), "card": k.b.o.Remote.Card})
	if err != nil {
		return err
	}
	// The task is tracked before its record is written: whoever sees the
	// record and ends the session then finds the task to cancel.
	k.b.track(k.t.SessionID, taskID)
	env := &hubpb.Envelope{Type: agentsdk.EventToolCall, CausationId: k.t.Trigger.GetId(),
		Payload: &hubpb.Envelope_ToolCall{ToolCall: &hubpb.ToolCall{CallId: taskID, Name: toolName, Arguments: args}}}
	if _, err := k.t.Client.Send(ctx, k.t.SessionID, env, agentsdk.WithClientMsgID(msg.GetMessageId()+"/task")); err != nil {
		return fmt.Errorf("recording the remote task %s: %w", taskID, err)
	}
	return nil
}

// readPage is how many envelopes record reads a call.
const readPage = 500

// record finds the task of the turn under way: the last task the bridge
// recorded in the session with no turn (of anyone) after it, nil when
// none (the turn has not sent its message yet). A task whose turn failed
// is abandoned once someone speaks: the next turn sends a new message.
func (k *task) record(ctx context.Context) (*taskRecord, error) {
	me := k.b.o.Remote.Agent
	var rec *taskRecord
	from := uint64(1)
	if agentsdk.IsTurn(k.t.Trigger) {
		from = k.t.Trigger.GetSeq() // a turn ends every task before it
	}
	for {
		page, err := k.t.Client.ReadLog(ctx, k.t.SessionID, from, readPage)
		if err != nil {
			return nil, fmt.Errorf("reading the session's log for a recorded task: %w", err)
		}
		for _, e := range page {
			switch {
			case agentsdk.IsTurn(e):
				rec = nil // a turn, its own or another's, ends the tasks before it
			case e.GetFrom() != me:
			case e.GetToolCall().GetName() == toolName:
				f := e.GetToolCall().GetArguments().GetFields()
				rec = &taskRecord{taskID: e.GetToolCall().GetCallId(), contextID: f["context_id"].GetStringValue(),
					messageID: f["message_id"].GetStringValue()}
			}
		}
		if len(page) < readPage {
			return rec, nil
		}
		from = page[len(page)-1].GetSeq() + 1
	}
}

// questionID is the id of the question asking the session for the input
// tk waits for: derived from the task and its status message, so the
// bridge asks once per request of the remote, across restarts.
func questionID(tk *a2apb.Task) string {
	st := tk.GetStatus()
	key := tk.GetId() + "\x00" + st.GetMessage().GetMessageId() + "\x00" + st.GetTimestamp().AsTime().String()
	sum := sha256.Sum256([]byte(key))
	return "a2a-" + hex.EncodeToString(sum[:5])
}

// ask asks the session for the input the remote wants and returns the
// answer: the turn's trigger when it is already the answer (the bridge
// started again while the question was pending).
func (k *task) ask(ctx context.Context, tk *a2apb.Task) (*hubpb.Answer, error) {
	id := questionID(tk)
	if a := k.t.Trigger.GetAnswer(); a.GetQuestionId() == id {
		return a, nil
	}
	text := partsText(tk.GetStatus().GetMessage().GetParts())
	if text == "" {
		text = fmt.Sprintf("%s asks for input (%s)", k.b.o.Remote.Agent, tk.GetStatus().GetState())
	}
	ans, err := k.t.Ask(ctx, &hubpb.Question{QuestionId: id, Text: text})
	if err != nil {
		return nil, fmt.Errorf("asking the session for the remote task's input: %w", err)
	}
	return ans, nil
}

// answer sends the answer to the remote as the task's next message,
// unless the task's history shows it got it already, and returns the task
// as the remote then says it is.
func (k *task) answer(ctx context.Context, tk *a2apb.Task, ans *hubpb.Answer) (*a2apb.Task, error) {
	id := "hubd-answer/" + k.t.SessionID + "/" + ans.GetQuestionId()
	if slices.ContainsFunc(tk.GetHistory(), func(m *a2apb.Message) bool { return m.GetMessageId() == id }) {
		return tk, nil // follow waits for the remote to move on
	}
	text := ans.GetText()
	if text == "" {
		text = strings.Join(ans.GetOptionIds(), ", ")
	}
	msg := &a2apb.Message{MessageId: id, TaskId: tk.GetId(), ContextId: tk.GetContextId(), Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}}
	return k.deliver(ctx, msg, false)
}
