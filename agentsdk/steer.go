package agentsdk

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hubpb"
)

// Steer writes an operator action into a live session: the hub records it
// as an operator_action envelope naming the caller and reason, delivers it
// like any envelope and folds it into the session's state. Only an
// operator may steer (PERMISSION_DENIED otherwise); the refusals of each
// action are in docs/API.md. Build the action with SetContext,
// UnsetContext, NextSpeaker, ReleaseTurn, ExtendTimer or CancelTimer.
func (c *Client) Steer(ctx context.Context, sessionID, reason string, action *hubpb.OperatorAction) (Ack, error) {
	a := &hubpb.OperatorAction{Reason: reason, Action: action.GetAction()}
	resp, err := c.rpc.Steer(ctx, &hubpb.SteerRequest{SessionId: sessionID, Action: a})
	if err != nil {
		return Ack{}, wrapErr("steer", err)
	}
	return Ack{SendResponse: resp}, nil
}

// SetContext is the operator action that sets context variables (any
// values encoding/json encodes).
func SetContext(vars map[string]any) (*hubpb.OperatorAction, error) {
	set, err := values("context", vars)
	if err != nil {
		return nil, err
	}
	return &hubpb.OperatorAction{Action: &hubpb.OperatorAction_Context{Context: &hubpb.ContextUpdate{Set: set}}}, nil
}

// UnsetContext is the operator action that deletes context variables
// (each must be set).
func UnsetContext(keys ...string) *hubpb.OperatorAction {
	return &hubpb.OperatorAction{Action: &hubpb.OperatorAction_Context{Context: &hubpb.ContextUpdate{Delete: keys}}}
}

// NextSpeaker is the operator action that makes agent the next speaker,
// once, over the session's graph.
func NextSpeaker(agent string) *hubpb.OperatorAction {
	return &hubpb.OperatorAction{Action: &hubpb.OperatorAction_NextSpeaker{NextSpeaker: agent}}
}

// ReleaseTurn is the operator action that releases the held turn (a
// question's or a blocking delegation's) with result.
func ReleaseTurn(result string) *hubpb.OperatorAction {
	return &hubpb.OperatorAction{Action: &hubpb.OperatorAction_ReleaseResult{ReleaseResult: result}}
}

// ExtendTimer is the operator action that extends the running period of
// the expectation named by d.
func ExtendTimer(name string, d time.Duration) *hubpb.OperatorAction {
	return &hubpb.OperatorAction{Action: &hubpb.OperatorAction_Timer{Timer: &hubpb.TimerChange{Name: name, Extend: durationpb.New(d)}}}
}

// CancelTimer is the operator action that cancels the running period of
// the expectation named.
func CancelTimer(name string) *hubpb.OperatorAction {
	return &hubpb.OperatorAction{Action: &hubpb.OperatorAction_Timer{Timer: &hubpb.TimerChange{Name: name, Cancel: true}}}
}
