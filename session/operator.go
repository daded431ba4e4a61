package session

import (
	"fmt"

	"github.com/hubd/hubd/hubpb"
)

// CheckOperatorAction reports whether an operator action's shape is valid:
// an operator, a reason, and exactly one well-formed action. It looks at no
// session state (adapters.Machine.Admit does).
func CheckOperatorAction(a *hubpb.OperatorAction) error {
	if a.GetOperator() == "" {
		return fmt.Errorf("operator_action needs operator_action.operator: %w", ErrMalformed)
	}
	if a.GetReason() == "" {
		return fmt.Errorf("operator_action needs a reason (operator_action.reason): %w", ErrMalformed)
	}
	if err := CheckText("operator_action.reason", a.GetReason()); err != nil {
		return err
	}
	switch x := a.GetAction().(type) {
	case *hubpb.OperatorAction_Context:
		if len(x.Context.GetSet()) == 0 && len(x.Context.GetDelete()) == 0 {
			return fmt.Errorf("operator_action.context sets and deletes nothing: %w", ErrMalformed)
		}
		return checkContext("operator_action.context", x.Context)
	case *hubpb.OperatorAction_NextSpeaker:
		return CheckName(x.NextSpeaker)
	case *hubpb.OperatorAction_ReleaseResult:
		return CheckText("operator_action.release_result", x.ReleaseResult)
	case *hubpb.OperatorAction_Timer:
		return checkTimerChange(x.Timer)
	}
	return fmt.Errorf("operator_action needs one of context, next_speaker, release_result, timer: %w", ErrMalformed)
}

func checkTimerChange(t *hubpb.TimerChange) error {
	if t.GetName() == "" {
		return fmt.Errorf("operator_action.timer needs timer.name (an expectation's name): %w", ErrMalformed)
	}
	ext := t.GetExtend()
	switch {
	case ext != nil && t.GetCancel():
		return fmt.Errorf("operator_action.timer sets both extend and cancel, one is expected: %w", ErrMalformed)
	case ext == nil && !t.GetCancel():
		return fmt.Errorf("operator_action.timer needs extend or cancel: %w", ErrMalformed)
	case ext != nil && (ext.CheckValid() != nil || Duration(ext) <= 0):
		return fmt.Errorf("operator_action.timer.extend must be a positive duration, got %v: %w", Duration(ext), ErrMalformed)
	}
	return nil
}
