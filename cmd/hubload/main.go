package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError carries a process exit code with its error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is an error of the command line or of an input file: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// exitCode prints err (if any) and returns the process exit code it
// carries: 0 for none or --help, 2 for usage errors, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code == 0 {
		return 0
	}
	fmt.Fprintln(stderr, "hubload:", err)
	if ee != nil {
		return ee.code
	}
	return 1
}

// run is the whole program: it parses args and runs the load, the check
// or the idle mode, writing its report to stdout and diagnostics to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	switch {
	case cfg.check != "":
		return runCheck(ctx, cfg, stdout, stderr)
	case cfg.idle > 0:
		return runIdle(ctx, cfg, stdout)
	default:
		return runLoad(ctx, cfg, stdout, stderr)
	}
}
