// Package archive writes and reads hubd's archive files: the sessions a
// hub purged, kept outside its log for audits (docs/DATA.md).
//
// An archive directory holds one file per UTC day, named
// hubd-archive-YYYY-MM-DD.hubarc, appended to only. A file is a sequence
// of hubpb.ArchiveRecord messages, each preceded by its length as a
// protobuf varint:
//
//	header (magic "hubd-archive", version 1, the day)
//	per session: session (its metadata, when it ended, when archived,
//	             its last seq), its envelopes seq 1 to last, then
//	             checksum (CRC-32C of every byte of the file before it)
//
// Each session ends with a checksum of the whole file so far (a batch of
// sessions is written and synced at once), so a file
// appended to many times is verifiable to its last checksum, and a torn
// append (a crash while writing) is a tail past the last checksum: the
// reader reports it, and the next append cuts it off before writing. A
// session is synced (the file, and the directory when the file is new)
// before Write returns: a hub purges it only then.
package archive

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
)

const (
	// Magic is the header's magic string.
	Magic = "hubd-archive"
	// Version is the format version written.
	Version = 1
	// Ext is an archive file's extension.
	Ext = ".hubarc"
	// maxRecord bounds one record a reader accepts.
	maxRecord = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged reports an archive file that does not read to its end: a
// record that does not decode, a checksum that does not match, or a tail
// past the last checksum.
var ErrDamaged = errors.New("archive: damaged")

// FileName is the name of the archive file of the UTC day of t.
func FileName(t time.Time) string {
	return "hubd-archive-" + t.UTC().Format("2006-01-02") + Ext
}

// Writer appends purged sessions to the day's file of a directory. It is
// the hub's Archiver; safe for concurrent use.
type Writer struct {
	dir string
	mu  sync.Mutex
	// ends is, per file written, where its last checksum ends and the
	// CRC-32C of its bytes up to there: the next append goes there
	// without reading the file again (unless its size says otherwise).
	ends map[string]fileEnd
}

type fileEnd struct {
	off int64
	sum uint32
}

// NewWriter returns a writer into dir, created if missing.
func NewWriter(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &Writer{dir: dir, ends: map[string]fileEnd{}}, nil
}

// Dir is the directory written to.
func (w *Writer) Dir() string { return w.dir }

// Archive appends ss, each followed by its checksum, to the file of the
// UTC day of ss[0].At, syncs it once and returns the file's name
// (relative to the directory).
func (w *Writer) Archive(ctx context.Context, ss []hub.ArchivedSession) (string, error) {
	if err := ctx.Err(); err != nil || len(ss) == 0 {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	name := FileName(ss[0].At)
	path := filepath.Join(w.dir, name)
	f, end, created, err := w.open(path, name, ss[0].At)
	if err != nil {
		return "", err
	}
	defer f.Close()
	delete(w.ends, name) // until this append is known to be whole
	var b []byte
	for i, s := range ss {
		var part []byte
		if part, end.sum, err = sessionBytes(s, end.sum); err != nil {
			return "", fmt.Errorf("archive: session %d of %d: %w", i+1, len(ss), err)
		}
		b = append(b, part...)
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err == nil && created {
		err = syncDir(w.dir)
	}
	if err != nil {
		return "", fmt.Errorf("archive: writing %s: %w", path, err)
	}
	end.off += int64(len(b))
	w.ends[name] = end
	return name, nil
}

// open opens the file name at path for appending at the end of its last
// checksum: where the last append ended, when the file's size agrees,
// else found by reading it (see openForAppend).
func (w *Writer) open(path, name string, at time.Time) (*os.File, fileEnd, bool, error) {
	if e, ok := w.ends[name]; ok {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			if fi, err := f.Stat(); err == nil && fi.Size() == e.off {
				if _, err := f.Seek(e.off, io.SeekStart); err == nil {
					return f, e, false, nil
				}
			}
			f.Close()
		}
	}
	f, sum, created, err := openForAppend(path, at)
	if err != nil {
		return nil, fileEnd{}, false, err
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		f.Close()
		return nil, fileEnd{}, false, err
	}
	return f, fileEnd{off: off, sum: sum}, created, nil
}

// openForAppend opens the file at path for appending, with a header if it
// is new, its tail past the last checksum cut off, and returns the
// running CRC-32C of its bytes.
func openForAppend(path string, at time.Time) (*os.File, uint32, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, false, fmt.Errorf("archive: %w", err)
	}
	good, sum, err := lastChecksum(f)
	if err != nil {
		f.Close()
		return nil, 0, false, fmt.Errorf("archive: %s: %w", path, err)
	}
	created := good == 0
	if created {
		hdr := &hubpb.ArchiveRecord{Record: &hubpb.ArchiveRecord_Header{Header: &hubpb.ArchiveHeader{
			Magic: Magic, Version: Version, Day: at.UTC().Format("2006-01-02")}}}
		b, _ := proto.Marshal(hdr)
		hb := protowire.AppendBytes(nil, b)
		if err := writeAt(f, 0, hb); err != nil {
			f.Close()
			return nil, 0, false, err
		}
		good, sum = int64(len(hb)), crc32.Update(0, castagnoli, hb)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, 0, false, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, 0, false, err
	}
	return f, sum, created, nil
}

func writeAt(f *os.File, off int64, b []byte) error {
	if err := f.Truncate(off); err != nil {
		return err
	}
	_, err := f.WriteAt(b, off)
	return err
}

// lastChecksum reads f and returns the offset just past its last good
// checksum record (0 for an empty or headerless file, then also when its
// header alone is there) and the CRC-32C of the bytes before it.
func lastChecksum(f *os.File) (int64, uint32, error) {
	var good int64
	var sum uint32
	err := scan(bufio.NewReader(f), func(off int64, crc uint32, r *hubpb.ArchiveRecord) error {
		if _, ok := r.GetRecord().(*hubpb.ArchiveRecord_Checksum); ok {
			good, sum = off, crc
		}
		return nil
	})
	if errors.Is(err, ErrDamaged) {
		err = nil // the tail past good is cut off
	}
	return good, sum, err
}

// sessionBytes encodes s's records and the checksum that follows them,
// sum being the CRC-32C of the file before them, and returns them with
// the CRC-32C of the file after them.
func sessionBytes(s hub.ArchivedSession, sum uint32) ([]byte, uint32, error) {
	var meta hubpb.SessionMeta
	if err := proto.Unmarshal(s.Meta, &meta); err != nil {
		return nil, 0, fmt.Errorf("the session's metadata does not decode: %w", err)
	}
	head := &hubpb.ArchiveRecord{Record: &hubpb.ArchiveRecord_Session{Session: &hubpb.ArchivedSession{
		Meta: &meta, ArchivedAt: timestamppb.New(s.At), EndedAt: timestamppb.New(s.EndedAt), LastSeq: uint64(len(s.Records))}}}
	hb, err := proto.Marshal(head)
	if err != nil {
		return nil, 0, err
	}
	b := protowire.AppendBytes(nil, hb)
	for _, rec := range s.Records {
		// An ArchiveRecord holding an envelope is its field 3: the
		// stored envelope's bytes as they are.
		r := protowire.AppendTag(nil, 3, protowire.BytesType)
		r = protowire.AppendBytes(r, rec)
		b = protowire.AppendBytes(b, r)
	}
	sum = crc32.Update(sum, castagnoli, b)
	ck, _ := proto.Marshal(&hubpb.ArchiveRecord{Record: &hubpb.ArchiveRecord_Checksum{Checksum: sum}})
	ckb := protowire.AppendBytes(nil, ck)
	return append(b, ckb...), crc32.Update(sum, castagnoli, ckb), nil
}

// syncDir syncs a directory, so that a new file's entry is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
