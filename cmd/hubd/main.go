package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"github.com/hubd/hubd/internal/exitcode"
)

func main() {
	// Envelope ids (UUIDv7) draw their random bits from a pool instead of
	// a system call each.
	uuid.EnableRandPool()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitcode.Report("hubd", err, os.Stderr))
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
	return exitcode.Usage("unknown command %q", args[0])
}
