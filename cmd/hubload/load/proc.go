package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// procStatus is a process's memory, threads and CPU time from /proc.
type procStatus struct {
	rssKiB  int64
	threads int
	cpu     time.Duration // user + system
}

func (p procStatus) rssMiB() float64 { return float64(p.rssKiB) / 1024 }

// readProc reads /proc/pid/status and /proc/pid/stat; it returns zeros for
// pid 0 or what cannot be read.
func readProc(pid int) procStatus {
	if pid == 0 {
		return procStatus{}
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	data, err := os.ReadFile(dir + "status")
	if err != nil {
		return procStatus{}
	}
	p := parseProcStatus(data)
	if stat, err := os.ReadFile(dir + "stat"); err == nil {
		p.cpu = parseProcCPU(stat)
	}
	return p
}

// userHZ is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// parseProcCPU returns utime + stime of a /proc stat file.
func parseProcCPU(stat []byte) time.Duration {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / userHZ
}

// parseProcStatus reads VmRSS (kB) and Threads from a /proc status file.
func parseProcStatus(data []byte) procStatus {
	var p procStatus
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			p.rssKiB = n
		case "Threads":
			p.threads = int(n)
		}
	}
	return p
}

// machineCPU returns the CPU time all processors spent busy and in all,
// from /proc/stat (zeros if it cannot be read).
func machineCPU() (busy, total time.Duration) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	return parseMachineCPU(data)
}

// parseMachineCPU reads the "cpu" line of /proc/stat: busy is everything
// but idle and iowait.
func parseMachineCPU(data []byte) (busy, total time.Duration) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var ticks, idle int64
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0
		}
		if i >= 8 {
			break // guest times are already counted in user and nice
		}
		ticks += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return time.Duration(ticks-idle) * time.Second / userHZ, time.Duration(ticks) * time.Second / userHZ
}

// startProfile starts writing hubload's CPU profile to path (if set) and
// returns what stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// cpuUse is the CPU time the hub (with --hub-pid), hubload and the whole
// machine (busy, and in all) used in the measurement window.
type cpuUse struct{ hub, self, busy, total time.Duration }

// cpuNow reads the CPU counters cpuUse is the difference of.
func cpuNow(hubPID int) cpuUse {
	busy, total := machineCPU()
	return cpuUse{hub: readProc(hubPID).cpu, self: selfCPU(), busy: busy, total: total}
}

// since is the CPU used from u0 to u.
func (u cpuUse) since(u0 cpuUse) cpuUse {
	return cpuUse{hub: u.hub - u0.hub, self: u.self - u0.self, busy: u.busy - u0.busy, total: u.total - u0.total}
}

// window is a measurement window begun: the CPU counters, and the hub's
// log counters with --hub-http.
type window struct {
	cfg Config
	cpu cpuUse
	log hubLog
	err error
}

// startWindow reads the counters at the start of a window.
func startWindow(ctx context.Context, cfg Config) window {
	w := window{cfg: cfg, cpu: cpuNow(cfg.HubPID)}
	if cfg.HubHTTP != "" {
		w.log, w.err = readHubLog(ctx, cfg.HubHTTP)
	}
	return w
}

// end reads them again: the CPU used in the window, and what the hub's
// log did (nil without --hub-http).
func (w window) end(ctx context.Context) (cpuUse, *LogReport, error) {
	use := cpuNow(w.cfg.HubPID).since(w.cpu)
	if w.cfg.HubHTTP == "" || w.err != nil {
		return use, nil, w.err
	}
	l, err := readHubLog(context.WithoutCancel(ctx), w.cfg.HubHTTP)
	if err != nil {
		return use, nil, err
	}
	return use, l.since(w.log), nil
}
