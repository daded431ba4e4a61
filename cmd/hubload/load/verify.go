package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ackRecord is one acknowledged send: a line of a verify file.
type ackRecord struct {
	session string
	seq     uint64
	msgID   string
}

// appendLine appends r's line ("SESSION SEQ CLIENT_MSG_ID\n") to b.
func (r ackRecord) appendLine(b []byte) []byte {
	b = append(b, r.session...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, r.seq, 10)
	b = append(b, ' ')
	b = append(b, r.msgID...)
	return append(b, '\n')
}

// verifyLog appends acknowledged sends to a file from one goroutine, in
// batches of whatever arrived while the previous write ran.
type verifyLog struct {
	f    *os.File
	ch   chan ackRecord
	done chan struct{}
	err  error // the first write error; read after done is closed
}

// openVerify opens (creating, appending) path and starts its writer.
func openVerify(path string) (*verifyLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--verify: %w", err)
	}
	v := &verifyLog{f: f, ch: make(chan ackRecord, 8192), done: make(chan struct{})}
	go v.write()
	return v, nil
}

// add queues r; it waits when the writer is far behind.
func (v *verifyLog) add(r ackRecord) { v.ch <- r }

// write is the writer goroutine.
func (v *verifyLog) write() {
	defer close(v.done)
	buf := make([]byte, 0, 64<<10)
	for r := range v.ch {
		buf = r.appendLine(buf[:0])
		buf = v.drain(buf)
		if _, err := v.f.Write(buf); err != nil && v.err == nil {
			v.err = fmt.Errorf("--verify: %w", err)
		}
	}
}

// drain appends what is queued, without waiting, up to about 32 KiB.
func (v *verifyLog) drain(buf []byte) []byte {
	for len(buf) < 32<<10 {
		select {
		case r, ok := <-v.ch:
			if !ok {
				return buf
			}
			buf = r.appendLine(buf)
		default:
			return buf
		}
	}
	return buf
}

// close writes what is queued and closes the file. No add may follow.
func (v *verifyLog) close() error {
	close(v.ch)
	<-v.done
	return errors.Join(v.err, v.f.Close())
}

// readVerify parses a verify file. A last line without a newline (a
// writer killed mid-write) is ignored and reported by partial.
func readVerify(r io.Reader) (recs []ackRecord, partial bool, err error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, false, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data, partial = data[:i+1], true
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		rec, err := parseLine(sc.Text())
		if err != nil {
			return nil, partial, fmt.Errorf("line %d: %w", n, err)
		}
		recs = append(recs, rec)
	}
	return recs, partial, sc.Err()
}

// parseLine parses "SESSION SEQ CLIENT_MSG_ID".
func parseLine(line string) (ackRecord, error) {
	f := strings.Split(line, " ")
	if len(f) != 3 || f[0] == "" || f[2] == "" {
		return ackRecord{}, fmt.Errorf("%q: want \"SESSION_ID SEQ CLIENT_MSG_ID\"", line)
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || seq == 0 {
		return ackRecord{}, fmt.Errorf("%q: the seq %q is not a positive integer", line, f[1])
	}
	return ackRecord{session: f[0], seq: seq, msgID: f[2]}, nil
}
