package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/uuid"
)

func main() {
	// Envelope ids (UUIDv7) draw their random bits from a pool instead of
	// a system call each.
	uuid.EnableRandPool()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
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

// usageError is an error of the command line or its input: exit code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code == 0 {
		return 0 // --help
	}
	fmt.Fprintln(stderr, "hubd:", err)
	if ee != nil {
		return ee.code
	}
	return 1
}

const usage = `hubd: a session hub for multi-agent systems

Usage:
  hubd [serve] [--listen 127.0.0.1:7420] [--data ./hubd-data] [--tokens FILE] [--tls-cert F --tls-key F [--client-ca F]]
               [--log-format json|console] [--log-level info]
  hubd sessions list [--state S] [--participant P] [--label k=v]   (client flags: --hub, --as, --token)
  hubd sessions show ID
  hubd sessions tail ID [--from N]
  hubd sessions export [ID ...]
  hubd log verify [--data DIR]
  hubd graph validate [--participants a,b,c] FILE
  hubd graph render FILE
  hubd graph simulate --graph FILE --participants a,b,c [--creator a] [--context JSON] [--max-handoffs N]
`

// run is the whole program: it parses args and runs one command, reading
// stdin and writing stdout and stderr. The returned error carries the exit
// code (see exitCode).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return runServe(ctx, args, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "sessions":
		return runSessions(ctx, args[1:], stdout, stderr)
	case "log":
		return runLog(ctx, args[1:], stdout, stderr)
	case "graph":
		return runGraph(ctx, args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError("unknown command %q", args[0])
}
