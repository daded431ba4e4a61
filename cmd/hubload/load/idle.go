package load

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// settle is how long idle mode waits after opening its streams for the
// hub to have registered them (it says nothing until a delivery).
const settle = time.Second

// runIdle opens cfg.idle idle Subscribe streams (subscribed agent
// streams with --transport stream), reports the hub's memory
// before and after, and keeps them open until --duration ends or ctx is
// done.
func runIdle(ctx context.Context, cfg Config, stdout io.Writer) error {
	before := readProc(cfg.HubPID)
	var memBefore hubMem
	if cfg.HubHTTP != "" {
		var err error
		if memBefore, err = readHubMem(ctx, cfg.HubHTTP, cfg.Operator); err != nil {
			return fmt.Errorf("--hub-http: %w", err)
		}
	}
	conns := cfg.ConnsFor(cfg.Idle)
	run := newRunID()
	names := make([]string, cfg.Idle)
	for i := range names {
		names[i] = agentName(run, "i", i)
	}
	p, err := dial(ctx, cfg.Hub, names, conns)
	if err != nil {
		return err
	}
	defer p.close()
	subs, cancel := context.WithCancel(ctx)
	defer cancel()
	var streams sync.WaitGroup
	broken := make(chan error, cfg.Idle)
	if cfg.Transport == agentsdk.TransportStream {
		err = connectIdle(subs, p, names, &streams, broken)
	} else {
		err = subscribeIdle(subs, p, names, &streams, broken)
	}
	if err == nil {
		sleepCtx(ctx, settle)
		fmt.Fprintf(stdout, "idle: %d subscriptions open on %d connections\n", cfg.Idle, conns)
		printIdleUsage(stdout, cfg, before)
		if cfg.HubHTTP != "" {
			memAfter, merr := readHubMem(ctx, cfg.HubHTTP, cfg.Operator)
			if merr != nil {
				err = fmt.Errorf("--hub-http: %w", merr)
			} else {
				printHubMem(stdout, cfg.Idle, memBefore, memAfter)
			}
		}
		sleepCtx(ctx, cfg.Duration)
	}
	cancel()
	streams.Wait()
	close(broken)
	if n := len(broken); n > 0 && err == nil {
		err = fmt.Errorf("%d idle subscriptions failed, the first: %w", n, <-broken)
	}
	return err
}

// subscribeIdle opens a Subscribe stream as each agent of names, each read
// by a goroutine of streams until subs is done; a stream that breaks
// before is sent to broken.
func subscribeIdle(subs context.Context, p *pool, names []string, streams *sync.WaitGroup, broken chan<- error) error {
	for i, name := range names {
		s, err := p.client(i).Subscribe(as(subs, name), agentsdk.SubscribeOptions{})
		if err != nil {
			return fmt.Errorf("opening idle subscription %d: %w", i, err)
		}
		streams.Go(func() {
			defer s.Close()
			for {
				if _, err := s.Recv(); err != nil {
					if subs.Err() == nil {
						broken <- err
					}
					return
				}
			}
		})
	}
	return nil
}

// connectIdle opens a subscribed agent stream as each agent of names
// (--transport stream), each waited on by a goroutine of streams until
// subs is done; a stream that breaks before is sent to broken.
func connectIdle(subs context.Context, p *pool, names []string, streams *sync.WaitGroup, broken chan<- error) error {
	for i, name := range names {
		s, err := p.client(i).Connect(as(subs, name), agentsdk.ConnectOptions{Subscribe: &agentsdk.SubscribeOptions{}})
		if err != nil {
			return fmt.Errorf("opening idle stream %d: %w", i, err)
		}
		streams.Go(func() {
			defer s.Close()
			select {
			case <-s.Done():
				if subs.Err() == nil {
					broken <- s.Err()
				}
			case <-subs.Done():
			}
		})
	}
	return nil
}

// printIdleUsage prints, with --hub-pid, the hub's memory and threads
// before and now.
func printIdleUsage(stdout io.Writer, cfg Config, before procStatus) {
	if cfg.HubPID == 0 {
		return
	}
	after := readProc(cfg.HubPID)
	per := (after.rssKiB - before.rssKiB) * 1024 / int64(cfg.Idle)
	fmt.Fprintf(stdout, "hub pid %d: VmRSS %.1f MiB → %.1f MiB (%+d B per subscription), threads %d → %d\n",
		cfg.HubPID, before.rssMiB(), after.rssMiB(), per, before.threads, after.threads)
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
