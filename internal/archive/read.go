package archive

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
)

// Session is one archived session as read back.
type Session struct {
	*hubpb.ArchivedSession
	Envelopes []*hubpb.Envelope
}

// File is an archive file as read back.
type File struct {
	Header   *hubpb.ArchiveHeader
	Sessions []Session
	// Checked is how many bytes from the start the last checksum
	// covers; Size the file's.
	Checked, Size int64
}

// Read reads the archive file at path and checks it: every record
// decodes, every checksum matches, and nothing follows the last. A file
// that does not (ErrDamaged) is returned as far as it was checked, with
// the error naming the offset.
func Read(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	out := &File{}
	var pending []Session // read since the last checksum
	first := true
	err = scan(bufio.NewReader(f), func(end int64, _ uint32, r *hubpb.ArchiveRecord) error {
		_, isHeader := r.GetRecord().(*hubpb.ArchiveRecord_Header)
		if first != isHeader {
			return fmt.Errorf("%w: the record ending at byte %d: a header comes first, and only first", ErrDamaged, end)
		}
		first = false
		switch x := r.GetRecord().(type) {
		case *hubpb.ArchiveRecord_Header:
			if x.Header.GetMagic() != Magic || x.Header.GetVersion() != Version {
				return fmt.Errorf("%w: not a hubd archive of version %d (magic %q, version %d)", ErrDamaged, Version,
					x.Header.GetMagic(), x.Header.GetVersion())
			}
			out.Header = x.Header
		case *hubpb.ArchiveRecord_Session:
			pending = append(pending, Session{ArchivedSession: x.Session})
		case *hubpb.ArchiveRecord_Envelope:
			if len(pending) == 0 {
				return fmt.Errorf("%w: an envelope before any session, ending at byte %d", ErrDamaged, end)
			}
			s := &pending[len(pending)-1]
			s.Envelopes = append(s.Envelopes, x.Envelope)
		case *hubpb.ArchiveRecord_Checksum:
			out.Sessions = append(out.Sessions, pending...)
			pending, out.Checked = nil, end
		}
		return nil
	})
	if fi, serr := f.Stat(); serr == nil {
		out.Size = fi.Size()
	}
	if err == nil && out.Header == nil {
		err = fmt.Errorf("%w: %s has no header", ErrDamaged, path)
	}
	if err == nil && out.Checked != out.Size {
		err = fmt.Errorf("%w: %s: %d bytes past the last checksum (at byte %d): a torn append", ErrDamaged, path,
			out.Size-out.Checked, out.Checked)
	}
	if err != nil {
		return out, fmt.Errorf("archive: %s: %w", path, err)
	}
	return out, nil
}

// scan reads length-delimited records from r, checking each checksum
// record against the bytes before it, and calls fn with the offset just
// past each record and the CRC-32C of the bytes up to there.
func scan(r *bufio.Reader, fn func(end int64, crc uint32, rec *hubpb.ArchiveRecord) error) error {
	var off int64
	var sum uint32
	for {
		n, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil || n > maxRecord {
			return fmt.Errorf("%w: a record length that does not read at byte %d", ErrDamaged, off)
		}
		prefix := binary.AppendUvarint(nil, n)
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("%w: a record cut short at byte %d", ErrDamaged, off)
		}
		var rec hubpb.ArchiveRecord
		if err := proto.Unmarshal(body, &rec); err != nil || rec.GetRecord() == nil {
			return fmt.Errorf("%w: the record at byte %d does not decode", ErrDamaged, off)
		}
		if c, ok := rec.GetRecord().(*hubpb.ArchiveRecord_Checksum); ok && c.Checksum != sum {
			return fmt.Errorf("%w: the checksum at byte %d is %08x, the bytes before it give %08x", ErrDamaged, off, c.Checksum, sum)
		}
		sum = crc32.Update(crc32.Update(sum, castagnoli, prefix), castagnoli, body)
		off += int64(len(prefix)) + int64(n)
		if err := fn(off, sum, &rec); err != nil {
			return err
		}
	}
}
