package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hubd/hubd/internal/baseline"
)

// floorServerEnv, set, makes hubload the floors' server apart
// (--floor-apart) instead of a load: its value is the directory under
// which the server makes its log. The parent runs its own executable so.
const floorServerEnv = "HUBLOAD_FLOOR_SERVER"

// floorServer is the floors' server as a floor's window uses it.
type floorServer interface {
	Addr() string
	// Stats reads the server's totals so far.
	Stats() (floorStats, error)
	Close() error
}

// floorStats are a floor server's totals: its log's requests, commits
// and fsyncs, and the server's own CPU when it runs apart (0 in hubload's
// process, whose CPU counts it).
type floorStats struct {
	Requests uint64        `json:"requests"`
	Commits  uint64        `json:"commits"`
	Syncs    uint64        `json:"syncs"`
	Syncing  time.Duration `json:"syncing_ns"`
	CPU      time.Duration `json:"cpu_ns"`
}

// startFloor starts a fresh floor server: in hubload's process, or with
// --floor-apart in a process of its own.
func startFloor(cfg config) (floorServer, error) {
	if cfg.floorApart {
		return startApart(cfg.baselineDir)
	}
	srv, err := baseline.Start(cfg.baselineDir)
	if err != nil {
		return nil, err
	}
	return inProcess{srv}, nil
}

// inProcess is a floor server in hubload's process.
type inProcess struct{ *baseline.Server }

func (s inProcess) Stats() (floorStats, error) {
	l := s.Server.Stats()
	return floorStats{Requests: l.Requests, Commits: l.Commits, Syncs: l.Syncs, Syncing: l.Syncing}, nil
}

// apart is a floor server in a child hubload, spoken to over its stdin
// and stdout (serveFloor).
type apart struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr string
}

// startApart runs hubload's own executable as the floors' server over a
// log under dir and reads the address it serves on.
func startApart(dir string) (*apart, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--floor-apart: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), floorServerEnv+"="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("--floor-apart: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("--floor-apart: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--floor-apart: starting the floor's server: %w", err)
	}
	a := &apart{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := a.out.ReadString('\n')
	if err != nil {
		return nil, errors.Join(fmt.Errorf("--floor-apart: the floor's server said no address: %w", err), a.Close())
	}
	a.addr = strings.TrimSpace(line)
	return a, nil
}

func (a *apart) Addr() string { return a.addr }

func (a *apart) Stats() (floorStats, error) {
	var s floorStats
	if _, err := io.WriteString(a.in, "stats\n"); err != nil {
		return s, fmt.Errorf("--floor-apart: asking the floor's server: %w", err)
	}
	line, err := a.out.ReadBytes('\n')
	if err != nil {
		return s, fmt.Errorf("--floor-apart: reading the floor's server: %w", err)
	}
	if err := json.Unmarshal(line, &s); err != nil {
		return s, fmt.Errorf("--floor-apart: the floor's server answered %q: %w", line, err)
	}
	return s, nil
}

// Close ends the child's input, which ends it, and waits for it.
func (a *apart) Close() error {
	err := a.in.Close()
	if werr := a.cmd.Wait(); werr != nil {
		err = errors.Join(err, fmt.Errorf("--floor-apart: the floor's server: %w", werr))
	}
	return err
}

// serveFloor is hubload as the floors' server apart: it starts a fresh
// floor server over a log under dir, writes the address it serves on as
// the first line of stdout, answers each "stats" line of stdin with its
// totals as one line of JSON, and closes the server when stdin ends.
func serveFloor(dir string, stdin io.Reader, stdout io.Writer) error {
	srv, err := baseline.Start(dir)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, srv.Addr()); err != nil {
		return errors.Join(err, srv.Close())
	}
	enc := json.NewEncoder(stdout)
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if sc.Text() != "stats" {
			return errors.Join(fmt.Errorf("the floor's server takes \"stats\" lines, not %q", sc.Text()), srv.Close())
		}
		st, _ := inProcess{srv}.Stats()
		st.CPU = selfCPU() // the server's own: this process is nothing else
		if err := enc.Encode(st); err != nil {
			return errors.Join(err, srv.Close())
		}
	}
	return errors.Join(sc.Err(), srv.Close())
}
