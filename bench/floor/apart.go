package floor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Stats are a floor server's totals: its log's requests, commits and
// fsyncs, and the server's own CPU when it runs in a process of its own
// (0 in the clients' process, whose CPU counts it).
type Stats struct {
	Requests uint64        `json:"requests"`
	Commits  uint64        `json:"commits"`
	Syncs    uint64        `json:"syncs"`
	Syncing  time.Duration `json:"syncing_ns"`
	CPU      time.Duration `json:"cpu_ns"`
}

// Totals reads the server's totals so far (CPU 0: see Stats).
func (s *Server) Totals() Stats {
	l := s.log.Stats()
	return Stats{Requests: l.Requests, Commits: l.Commits, Syncs: l.Syncs, Syncing: l.Syncing}
}

// Serve is the floors' server in a process of its own: it starts a fresh
// Server over a log under dir, writes the address it serves on as the
// first line of stdout, answers each "stats" line of stdin with its
// totals (its process's CPU included) as one line of JSON, and closes the
// server when stdin ends.
func Serve(dir string, stdin io.Reader, stdout io.Writer) error {
	srv, err := Start(dir)
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
			return errors.Join(fmt.Errorf("the floors' server takes \"stats\" lines, not %q", sc.Text()), srv.Close())
		}
		st := srv.Totals()
		st.CPU = ProcessCPU() // the server's own: its process is nothing else
		if err := enc.Encode(st); err != nil {
			return errors.Join(err, srv.Close())
		}
	}
	return errors.Join(sc.Err(), srv.Close())
}

// Apart is a floors' server in a process of its own (Serve), spoken to
// over its standard input and output.
type Apart struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr string
}

// StartApart starts cmd, a process that runs Serve (its standard input
// and output are taken here), and reads the address it serves on.
func StartApart(cmd *exec.Cmd) (*Apart, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("floor apart: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("floor apart: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("floor apart: starting the floors' server: %w", err)
	}
	a := &Apart{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := a.out.ReadString('\n')
	if err != nil {
		return nil, errors.Join(fmt.Errorf("floor apart: the floors' server said no address: %w", err), a.Close())
	}
	a.addr = strings.TrimSpace(line)
	return a, nil
}

// Addr is the address the server serves on.
func (a *Apart) Addr() string { return a.addr }

// Stats asks the server for its totals.
func (a *Apart) Stats() (Stats, error) {
	var s Stats
	if _, err := io.WriteString(a.in, "stats\n"); err != nil {
		return s, fmt.Errorf("floor apart: asking the floors' server: %w", err)
	}
	line, err := a.out.ReadBytes('\n')
	if err != nil {
		return s, fmt.Errorf("floor apart: reading the floors' server: %w", err)
	}
	if err := json.Unmarshal(line, &s); err != nil {
		return s, fmt.Errorf("floor apart: the floors' server answered %q: %w", line, err)
	}
	return s, nil
}

// Close ends the server's input, which ends it, and waits for it.
func (a *Apart) Close() error {
	err := a.in.Close()
	if werr := a.cmd.Wait(); werr != nil {
		err = errors.Join(err, fmt.Errorf("floor apart: the floors' server: %w", werr))
	}
	return err
}
