package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/hubd/hubd/bench/floor"
	"github.com/hubd/hubd/cmd/hubload/load"
)

func main() {
	if dir, ok := os.LookupEnv(serverEnv); ok { // a child of --floor-apart
		if err := floor.Serve(dir, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "table (the floors' server):", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
}

// usageError is a command line the table refuses (exit 2).
type usageError struct{ error }

// options are the table's command line: the hub and what every run
// shares, and where its floors run.
type options struct {
	hub        string
	hubPID     int
	hubHTTP    string
	payload    int
	duration   time.Duration
	warmup     time.Duration
	floorDir   string
	floorApart bool
	json       bool
}

// parse reads the command line; the flags every run shares are checked
// as hubload checks them.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.hub, "hub", "127.0.0.1:7420", "the hub's gRPC `address` (loopback only)")
	fs.IntVar(&o.hubPID, "hub-pid", 0, "the hub's process id: each run reports the hub's CPU per turn, and its ratios the CPU per request (hub + agents) over the floor's")
	fs.StringVar(&o.hubHTTP, "hub-http", "", "the hub's HTTP `address` (loopback): each run reports what the hub's log did from its /metrics, and its ratios the mean fsync over the floor's")
	fs.IntVar(&o.payload, "payload", 256, "text `bytes` per envelope, the hub's and the floors'")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "each run's window; each floor measures half of it before the run and half after")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "how long each run and each floor's window runs before it is measured")
	fs.StringVar(&o.floorDir, "floor-dir", "", "the `dir` under which the floors' logs are made (default: the system's temporary directory; use the hub's disk)")
	fs.BoolVar(&o.floorApart, "floor-apart", false, "serve the floors from a process of their own (this program run again), beside the clients as hubd is beside its agents, rather than from this process")
	fs.BoolVar(&o.json, "json", false, "print the rows and every run behind them as one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err}
	}
	if fs.NArg() != 0 {
		return o, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if _, err := load.Parse(o.loadArgs(), io.Discard); err != nil {
		return o, usageError{err}
	}
	return o, nil
}

// loadArgs are the hubload flags every run shares.
func (o options) loadArgs() []string {
	args := []string{"--hub", o.hub, "--payload", strconv.Itoa(o.payload), "--duration", o.duration.String(), "--warmup", o.warmup.String()}
	if o.hubPID != 0 {
		args = append(args, "--hub-pid", strconv.Itoa(o.hubPID))
	}
	if o.hubHTTP != "" {
		args = append(args, "--hub-http", o.hubHTTP)
	}
	return args
}

// run is the whole program: it parses args, measures the table and
// prints it (each run's report first, as it ends, unless --json).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	progress := stdout
	if o.json {
		progress = nil
	}
	t, err := measureTable(ctx, o, progress, stderr)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}
	_, err = io.WriteString(stdout, t.text())
	return err
}
