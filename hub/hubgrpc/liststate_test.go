package hubgrpc_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
)

// TestListQuarantinedState: ListSessions takes the state QUARANTINED (in
// any case), the sessions found damaged, besides the lifecycle states; an
// unknown state is MALFORMED naming every state it takes.
func TestListQuarantinedState(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	wiretest.Pipeline(t, f.agent("alice"))
	op := f.agent("operator")
	for _, st := range []string{"QUARANTINED", "quarantined"} {
		list, err := op.ListSessions(ctx, &hubpb.ListSessionsRequest{State: st})
		if err != nil || len(list.GetSessions()) != 0 {
			t.Errorf("state %s: %v, %v; want no session (none is damaged)", st, list.GetSessions(), err)
		}
	}
	if list, err := op.ListSessions(ctx, &hubpb.ListSessionsRequest{}); err != nil || len(list.GetSessions()) == 0 {
		t.Errorf("every state: %v, %v", list.GetSessions(), err)
	}
	_, err := op.ListSessions(ctx, &hubpb.ListSessionsRequest{State: "BROKEN"})
	if code, reason := wiretest.ReasonOf(err); code != codes.InvalidArgument || reason != "MALFORMED" || !strings.Contains(err.Error(), "QUARANTINED") {
		t.Errorf("state BROKEN: %v", err)
	}
}
