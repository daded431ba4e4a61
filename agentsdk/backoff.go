package agentsdk

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
)

// backoffDelay is the wait before retry n (from 1): exponential from base,
// capped at max, with "equal jitter" (half fixed, half random) so that many
// agents cut off at once do not come back in step.
func backoffDelay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + rand.N(half+1)
}

// sleep waits for d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func protoClone[M proto.Message](m M) M { return proto.CloneOf(m) }
