// Command retention fills a hubd data directory with ended sessions for
// bench/retention.sh: --sessions conversations of two agents, each opened,
// given --turns texts of --payload bytes and closed, written through the
// hub in process (the same records hubd writes). Every --keep-every-th
// session is labelled keep=yes, which the script's retention policy keeps
// for ever; the others are the ones purged.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "retention:", err)
		os.Exit(1)
	}
}

func run() error {
	data := flag.String("data", "", "the data `directory` to fill (new or a hub's, stopped)")
	n := flag.Int("sessions", 100_000, "ended sessions to write")
	turns := flag.Int("turns", 2, "texts per session")
	payload := flag.Int("payload", 256, "bytes per text")
	keepEvery := flag.Int("keep-every", 10, "label every Nth session keep=yes")
	conc := flag.Int("conc", 16, "sessions written at once")
	flag.Parse()
	if *data == "" {
		return fmt.Errorf("--data is required")
	}
	l, err := wal.Open(wal.Options{Dir: *data, NoSync: true, Logger: zerolog.Nop(), MinFreeBytes: -1})
	if err != nil {
		return err
	}
	ctx := context.Background()
	h, err := hub.New(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil), MaxOpenPerAgent: -1})
	if err != nil {
		return err
	}
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *conc)
	text := strings.Repeat("x", *payload)
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(*n); i = next.Add(1) - 1 {
				if err := one(ctx, h, int(i), *turns, *keepEvery, text); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	took := time.Since(began)
	if err := h.Close(); err != nil {
		return err
	}
	if err := l.Close(); err != nil {
		return err
	}
	fmt.Printf("wrote %d ended sessions (%d texts of %d bytes each) in %v\n", *n, *turns, *payload, took.Round(time.Millisecond))
	return nil
}

// one writes session i.
func one(ctx context.Context, h *hub.Hub, i, turns, keepEvery int, text string) error {
	labels := map[string]string{"bench": "retention"}
	if i%keepEvery == 0 {
		labels["keep"] = "yes"
	}
	a, b := fmt.Sprintf("a%d", i%64), fmt.Sprintf("b%d", i%64)
	o, err := h.Open(ctx, a, &hubpb.OpenRequest{Type: "conversation@1", Labels: labels,
		Participants: []*hubpb.Participant{{Name: b, AutoAccept: true}}})
	if err != nil {
		return err
	}
	id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	for t := range turns {
		from := a
		if t%2 == 1 {
			from = b
		}
		env := &hubpb.Envelope{Type: session.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}
		if _, err := h.Send(ctx, from, id, env); err != nil {
			return err
		}
	}
	_, err = h.CloseSession(ctx, a, false, id, "done")
	return err
}
