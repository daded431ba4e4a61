package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// settle is how long idle mode waits after opening its streams for the
// hub to have registered them (it says nothing until a delivery).
const settle = time.Second

// runIdle opens cfg.idle idle Subscribe streams, reports the hub's memory
// before and after, and keeps them open until --duration ends or ctx is
// done.
func runIdle(ctx context.Context, cfg config, stdout io.Writer) error {
	before := readProc(cfg.hubPID)
	conns := cfg.connsFor(cfg.idle)
	p, err := dial(cfg.hub, conns)
	if err != nil {
		return err
	}
	defer p.close()
	subs, cancel := context.WithCancel(ctx)
	defer cancel()
	var streams sync.WaitGroup
	broken := make(chan error, cfg.idle)
	run := newRunID()
	for i := range cfg.idle {
		s, err := p.client(i).Subscribe(as(subs, agentName(run, "i", i)), &hubpb.SubscribeRequest{})
		if err != nil {
			cancel()
			streams.Wait()
			return fmt.Errorf("opening idle subscription %d: %w", i, err)
		}
		streams.Go(func() {
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
	sleepCtx(ctx, settle)
	fmt.Fprintf(stdout, "idle: %d subscriptions open on %d connections\n", cfg.idle, conns)
	if cfg.hubPID != 0 {
		after := readProc(cfg.hubPID)
		per := (after.rssKiB - before.rssKiB) * 1024 / int64(cfg.idle)
		fmt.Fprintf(stdout, "hub pid %d: VmRSS %.1f MiB → %.1f MiB (%+d B per subscription), threads %d → %d\n",
			cfg.hubPID, before.rssMiB(), after.rssMiB(), per, before.threads, after.threads)
	}
	sleepCtx(ctx, cfg.duration)
	cancel()
	streams.Wait()
	close(broken)
	if n := len(broken); n > 0 {
		return fmt.Errorf("%d idle subscriptions failed, the first: %w", n, <-broken)
	}
	return nil
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
