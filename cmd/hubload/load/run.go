package load

import (
	"context"
	"fmt"
	"io"

	"github.com/hubd/hubd/internal/buildinfo"
)

// Run is the whole of hubload: it parses args (its command line, without
// the program's name) and runs the load, the check, the idle mode or the
// soak, writing its report to stdout and diagnostics to stderr. An
// *exitcode.Error says how the program should exit.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "--soak" {
		return runSoak(ctx, args[1:], stdout, stderr)
	}
	cfg, err := Parse(args, stderr)
	if err != nil {
		return err
	}
	switch {
	case cfg.Version:
		_, err := fmt.Fprint(stdout, buildinfo.Read())
		return err
	case cfg.Check != "":
		return runCheck(ctx, cfg, stdout, stderr)
	case cfg.Idle > 0:
		return runIdle(ctx, cfg, stdout)
	case cfg.Workload == WorkloadDelegation:
		return runDelegation(ctx, cfg, stdout, stderr)
	case cfg.Workload == WorkloadSessions:
		return runSessions(ctx, cfg, stdout, stderr)
	default:
		return runLoad(ctx, cfg, stdout, stderr)
	}
}
