package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hubd/hubd/internal/buildinfo"
	"github.com/hubd/hubd/internal/exitcode"
)

func main() {
	if dir, ok := os.LookupEnv(floorServerEnv); ok { // a child of --floor-apart
		os.Exit(exitcode.Report("hubload (the floor's server)", serveFloor(dir, os.Stdin, os.Stdout), os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitcode.Report("hubload", err, os.Stderr))
}

// run is the whole program: it parses args and runs the load, the check
// or the idle mode, writing its report to stdout and diagnostics to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "--soak" {
		return runSoak(ctx, args[1:], stdout, stderr)
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	switch {
	case cfg.version:
		_, err := fmt.Fprint(stdout, buildinfo.Read())
		return err
	case cfg.check != "":
		return runCheck(ctx, cfg, stdout, stderr)
	case cfg.table:
		return runTable(ctx, cfg, stdout, stderr)
	case cfg.idle > 0:
		return runIdle(ctx, cfg, stdout)
	case cfg.workload == workloadDelegation:
		return runDelegation(ctx, cfg, stdout, stderr)
	case cfg.workload == workloadSessions:
		return runSessions(ctx, cfg, stdout, stderr)
	default:
		return runLoad(ctx, cfg, stdout, stderr)
	}
}
