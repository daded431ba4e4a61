package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run serves the billing specialist until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("billing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hub := fs.String("hub", "127.0.0.1:7420", "the hub's host:port")
	name := fs.String("name", "billing", "the agent's name (development mode)")
	run := fs.String("run", "threelang", "serve only the sessions labelled example=RUN (the router's --run)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := agentsdk.Dial(dctx, *hub, agentsdk.Options{Name: *name})
	if ctx.Err() != nil {
		return nil // interrupted while connecting: a clean stop
	}
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(stderr, "%s: serving on %s\n", *name, *hub)
	// An agent serves every session its name is invited to, whoever opened
	// it: this one serves only the run's, by their label.
	ours := agentsdk.WithSessionFilter(func(s *agentsdk.Session) bool { return s.GetMeta().GetLabels()["example"] == *run })
	err = c.Serve(ctx, Specialist(*name, "Refund of the duplicate charge issued."), ours)
	if ctx.Err() != nil {
		return nil // interrupted: a clean stop
	}
	return err
}

// Specialist answers every turn with its fix and records it in the
// session's context (fixed_by_<name>); the graph hands the turn back.
func Specialist(name, answer string) agentsdk.Handler {
	return func(context.Context, *agentsdk.Turn) (agentsdk.Reply, error) {
		return agentsdk.ReplyPacket(agentsdk.NewPacket(answer).Set("fixed_by_"+name, true)), nil
	}
}
