package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

const (
	// DefaultMinFreeBytes is the reserve used when Options.MinFreeBytes is
	// 0: room for badger to flush its memtables and run a compaction
	// after appends stop.
	DefaultMinFreeBytes = 256 << 20

	// spaceRecheck is how often a log whose disk is full measures the free
	// space again, so that Space and OnSpace report its return without
	// waiting for an append.
	spaceRecheck = time.Second

	// memFileExt is the extension of badger's memtable log files.
	memFileExt = ".mem"
)

// Space is the data directory's free space as the log last measured it.
type Space struct {
	Free    uint64 // bytes available to unprivileged users
	Reserve uint64 // the reserve in effect; 0 when the check is off
	Full    bool   // appends are refused with ErrDiskFull
	Checked bool   // false when the check is off (InMemory, MinFreeBytes < 0, not Linux)
}

// spaceGuard measures the free space before each commit, keeps the
// reserve and preallocates badger's memtable log files.
type spaceGuard struct {
	dir      string
	reserve  uint64
	on       bool
	memLimit int64 // bytes of a memtable log badger can fill
	onChange func(Space)
	logger   zerolog.Logger
	resume   uint64   // what the periodic check needs above the reserve: the largest batch
	dirFile  *os.File // the data directory, open for fstatfs; nil: statfs by name

	mu    sync.Mutex
	state Space

	// Owned by the committer.
	written  int64           // bytes committed since the last look for new memtable files
	prealloc map[string]bool // memtable files already preallocated
}

// newSpaceGuard returns the guard for opts. memTable is badger's memtable
// size: a memtable log holds at most that plus one transaction (15%).
func newSpaceGuard(opts Options, memTable int64) *spaceGuard {
	g := &spaceGuard{dir: opts.Dir, on: !opts.InMemory && !opts.ReadOnly && opts.MinFreeBytes >= 0,
		memLimit: memTable + memTable*15/100 + 1<<20, onChange: opts.OnSpace, logger: opts.Logger,
		prealloc: map[string]bool{},
		resume:   uint64(2*opts.maxBatchBytes()) + uint64(segmentBytes(opts.maxBatchBytes()))}
	if g.on {
		g.reserve = uint64(opts.MinFreeBytes)
		if opts.MinFreeBytes == 0 {
			g.reserve = DefaultMinFreeBytes
		}
	}
	g.state.Reserve = g.reserve
	return g
}

// Space returns the last measurement.
func (g *spaceGuard) Space() Space {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

// check measures the free space and fails with ErrDiskFull if it is below
// the reserve plus need bytes. It updates the state, calling OnSpace when
// Full changes.
func (g *spaceGuard) check(need uint64) error {
	if !g.on {
		return nil
	}
	var free uint64
	var ok bool
	var err error
	if g.dirFile != nil {
		free, ok, err = freeBytesOf(g.dirFile)
	} else {
		free, ok, err = freeBytes(g.dir)
	}
	if !ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: measuring free space in %q: %w", g.dir, err)
	}
	full := free < g.reserve+need
	g.set(Space{Free: free, Reserve: g.reserve, Full: full, Checked: true})
	if full {
		return fmt.Errorf("%w: %d bytes free in %s, an append needs the reserve of %d bytes plus %d",
			ErrDiskFull, free, g.dir, g.reserve, need)
	}
	return nil
}

// set records s and reports a change of Full.
func (g *spaceGuard) set(s Space) {
	g.mu.Lock()
	changed := g.state.Full != s.Full || !g.state.Checked
	g.state = s
	g.mu.Unlock()
	if !changed {
		return
	}
	if s.Full {
		g.logger.Error().Uint64("free", s.Free).Uint64("reserve", s.Reserve).Str("dir", g.dir).
			Msg("wal: disk below its reserve; refusing appends until space is freed")
	} else if s.Checked && s.Free > 0 {
		g.logger.Info().Uint64("free", s.Free).Uint64("reserve", s.Reserve).Msg("wal: disk space available")
	}
	if g.onChange != nil {
		g.onChange(s)
	}
}

// open keeps the data directory open for cheap measurements.
func (g *spaceGuard) open() {
	if g.on {
		g.dirFile, _ = os.Open(g.dir)
	}
}

// close releases the directory.
func (g *spaceGuard) close() {
	if g.dirFile != nil {
		_ = g.dirFile.Close()
	}
}

// recheck measures again while appends are refused, with room for the
// largest batch, so that a return of space is reported once and holds.
func (g *spaceGuard) recheck() { _ = g.check(g.resume) }

// full reports whether the last measurement was below the reserve.
func (g *spaceGuard) full() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state.Full
}

// committed counts bytes written, and preallocates new memtable log files
// once an eighth of a memtable has been written since the last look.
func (g *spaceGuard) committed(n int) {
	if !g.on {
		return
	}
	g.written += int64(n)
	if g.written < g.memLimit/8 {
		return
	}
	g.written = 0
	g.preallocMem()
}

// preallocMem reserves the blocks of every memtable log file badger has
// created, up to what badger can write into it, so that badger's writes
// through its memory map never meet a full disk (which ends the process
// with SIGBUS). A file system without fallocate is left to the reserve.
func (g *spaceGuard) preallocMem() {
	ents, err := os.ReadDir(g.dir)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, memFileExt) {
			continue
		}
		seen[name] = true
		if g.prealloc[name] {
			continue
		}
		g.prealloc[name] = true
		if err := preallocFile(filepath.Join(g.dir, name), g.memLimit); err != nil {
			g.logger.Warn().Err(err).Str("file", name).Msg("wal: cannot preallocate the memtable log; relying on the reserve")
		}
	}
	for name := range g.prealloc {
		if !seen[name] {
			delete(g.prealloc, name)
		}
	}
}

// preallocFile reserves blocks for the first min(size, limit) bytes of
// the file at path.
func preallocFile(path string, limit int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return preallocate(f, min(fi.Size(), limit))
}

// openSpaceNeed is the free space that flushing the memtable logs in dir
// needs, when badger replays them at open or flushes them at close: about
// as many bytes as the logs hold, up to their last non-zero byte.
func openSpaceNeed(dir string) (uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var need uint64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), memFileExt) {
			continue
		}
		n, err := dataBytes(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, err
		}
		need += n
	}
	return need, nil
}

// dataBytes returns the offset just past the last non-zero byte of the
// file at path: badger writes a memtable log from its start, and the rest
// of the file is a hole or preallocated zeros. It reads backwards from
// the end of what is allocated (reading preallocated zeros costs no I/O).
func dataBytes(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	if alloc, err := allocatedBytes(path); err == nil && int64(alloc) < end {
		end = int64(alloc) // written from the start: no data past its blocks
	}
	buf := make([]byte, 1<<20)
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return uint64(start) + uint64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
