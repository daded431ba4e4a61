package hub_test

import (
	"context"

	"github.com/cockroachdb/datadriven"

	"github.com/hubd/hubd/hubpb"
)

// steer writes an operator action: steer AGENT S [operator].
func (r *runner) steer(td *datadriven.TestData, args []string) string {
	a := &hubpb.OperatorAction{}
	if err := hubpb.UnmarshalJSON([]byte(td.Input), a); err != nil {
		return "bad action: " + err.Error()
	}
	req := &hubpb.SteerRequest{SessionId: r.id(args[1]).String(), Action: a}
	operator := len(args) > 2 && args[2] == "operator"
	return ackLine(r.env.hub.Steer(context.Background(), args[0], operator, req))
}
