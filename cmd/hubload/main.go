package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hubd/hubd/cmd/hubload/load"
	"github.com/hubd/hubd/internal/exitcode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := load.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitcode.Report("hubload", err, os.Stderr))
}
