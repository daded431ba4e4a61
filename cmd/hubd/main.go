package main

import (
	"context"
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

// run is the whole program: it parses args and runs one command, reading
// stdin and writing stdout and stderr. The returned error carries the exit
// code (see package exitcode).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return runServe(ctx, args, stdout, stderr)
	}
	if isHelp(args[0]) {
		return runHelp(ctx, args[1:], stdout)
	}
	if strings.HasPrefix(args[0], "-") {
		return runServe(ctx, args, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "sessions":
		return runSessions(ctx, args[1:], stdin, stdout, stderr)
	case "questions":
		return runClientGroup(ctx, "questions", questionsCommand, args[1:], stdin, stdout, stderr)
	case "tasks":
		return runClientGroup(ctx, "tasks", tasksCommand, args[1:], stdin, stdout, stderr)
	case "log":
		return runLog(ctx, args[1:], stdout, stderr)
	case "cluster":
		return runCluster(ctx, args[1:], stdout, stderr)
	case "graph":
		return runGraph(ctx, args[1:], stdin, stdout, stderr)
	case "health":
		return runHealth(ctx, args[1:], stdout)
	case "mcp":
		return runMCP(ctx, args[1:], stdin, stdout, stderr)
	case "completion":
		return runCompletion(ctx, args[1:], stdout)
	case "version":
		return runVersion(args[1:], stdout)
	}
	return exitcode.Usage("unknown command %q (see hubd --help)", args[0])
}
