package main

import (
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/internal/exitcode"
)

// retentionFlags are serve's flags of retention and archives
// (docs/DATA.md).
type retentionFlags struct {
	ended, sweep time.Duration
	policy, dir  string
	archive      bool
	rate         int
}

func (f *retentionFlags) define(fs *flag.FlagSet) {
	fs.DurationVar(&f.ended, "retain-ended", 0, "how long an ended session is kept once its whole tree ended, before it is archived and purged (0: for ever)")
	fs.StringVar(&f.policy, "retention-policy", "", "retention policy `file`: lines \"key=value[,key=value] DURATION|forever\" giving sessions with those labels their own retention, first match wins (docs/DATA.md)")
	fs.DurationVar(&f.sweep, "retention-sweep", time.Minute, "how often the hub looks for sessions whose retention passed")
	fs.IntVar(&f.rate, "retention-rate", hub.DefaultPurgeRate, "how many `sessions` a second the retention sweep purges at most (a backlog is spread out so that sends do not feel it)")
	fs.BoolVar(&f.archive, "archive", true, "write each session to an archive file before purging it (false: purge without an archive)")
	fs.StringVar(&f.dir, "archive-dir", "", "`directory` of the archive files, one per UTC day (default: archive/ in --data)")
}

// config sets the hub's retention and archive.
func (f *retentionFlags) config(c *hub.Config, data string) error {
	if f.ended < 0 || f.sweep <= 0 {
		return exitcode.Usage("serve: --retain-ended %v and --retention-sweep %v: want a duration >= 0 and one > 0", f.ended, f.sweep)
	}
	if f.rate < 1 {
		return exitcode.Usage("serve: --retention-rate %d: want at least 1 session a second", f.rate)
	}
	c.Retention = hub.Retention{Ended: f.ended, Sweep: f.sweep, Rate: f.rate}
	if f.policy != "" {
		file, err := os.Open(f.policy)
		if err != nil {
			return exitcode.Usage("serve: %v", err)
		}
		defer file.Close()
		if c.Retention.Rules, err = hub.ParseRetentionPolicy(file); err != nil {
			return exitcode.Usage("serve: %s: %v", f.policy, err)
		}
	}
	if !f.archive {
		return nil
	}
	dir := f.dir
	if dir == "" {
		dir = filepath.Join(data, "archive")
	}
	w, err := archive.NewWriter(dir)
	if err != nil {
		return exitcode.Usage("serve: --archive-dir: %v", err)
	}
	c.Archive = w
	return nil
}
