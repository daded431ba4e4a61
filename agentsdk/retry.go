package agentsdk

import (
	"context"
	"errors"
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

// retryUnavailable calls f, retrying while the hub is unavailable within
// the client's retry budget; f must be idempotent (a client message id).
func (c *Client) retryUnavailable(ctx context.Context, op string, f func() error) error {
	return c.retry(ctx, op, c.attempts, func() error { return wrapErr(op, f()) })
}

// retry calls f (which returns wrapped errors) until it succeeds, fails
// other than ErrUnavailable, ctx is done, attempts tries were made (0: no
// cap) or the retry budget is spent. Between tries it backs off a little
// and waits, within the budget, for the connection to be ready: gRPC
// reconnects with its own backoff, and a try before it has only gets its
// last "connection refused" again.
func (c *Client) retry(ctx context.Context, op string, attempts int, f func() error) error {
	deadline := time.Now().Add(max(c.budget, 0))
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil ||
			(attempts > 0 && attempt >= attempts) || !time.Now().Before(deadline) {
			return err
		}
		c.logf("agentsdk: %s: %v; retrying (try %d, until %s)", op, err, attempt, deadline.Format(time.RFC3339))
		wait, cancel := context.WithDeadline(ctx, deadline)
		ok := sleep(wait, backoffDelay(attempt, 50*time.Millisecond, time.Second)) && waitReady(wait, c.conn) == nil
		cancel()
		if !ok {
			return err
		}
	}
}
