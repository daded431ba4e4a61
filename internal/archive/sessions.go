package archive

import (
	"context"
	"fmt"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
)

// Sessions reads the archive file name of the directory, checked whole
// (Read), and returns its sessions as the log stores them, in the order
// the file holds them: the hub's ArchiveReader. A name that is not a file
// of the directory is refused; one the directory does not hold is an
// error wrapping fs.ErrNotExist.
func (w *Writer) Sessions(ctx context.Context, name string) ([]hub.ArchivedSession, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
		return nil, fmt.Errorf("archive: %q is not a file name of the archive directory", name)
	}
	w.mu.Lock() // not in the middle of an append or a rewrite
	f, err := Read(filepath.Join(w.dir, name))
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]hub.ArchivedSession, 0, len(f.Sessions))
	for _, s := range f.Sessions {
		a, err := stored(s)
		if err != nil {
			return nil, fmt.Errorf("archive: %s: session %s: %w", name, s.GetMeta().GetSessionId(), err)
		}
		out = append(out, a)
	}
	return out, nil
}

// stored is s as the log stores it: its metadata and its envelopes
// encoded deterministically, seq 1 to its last.
func stored(s Session) (hub.ArchivedSession, error) {
	meta, err := proto.MarshalOptions{Deterministic: true}.Marshal(s.GetMeta())
	if err != nil {
		return hub.ArchivedSession{}, err
	}
	if len(s.Envelopes) == 0 || uint64(len(s.Envelopes)) != s.GetLastSeq() {
		return hub.ArchivedSession{}, fmt.Errorf("%w: %d envelopes for a last seq of %d", ErrDamaged, len(s.Envelopes), s.GetLastSeq())
	}
	a := hub.ArchivedSession{Meta: meta, EndedAt: s.GetEndedAt().AsTime(), At: s.GetArchivedAt().AsTime()}
	for i, e := range s.Envelopes {
		if e.GetSeq() != uint64(i+1) || e.GetSessionId() != s.GetMeta().GetSessionId() {
			return hub.ArchivedSession{}, fmt.Errorf("%w: envelope %d is seq %d of session %s", ErrDamaged, i+1, e.GetSeq(), e.GetSessionId())
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			return hub.ArchivedSession{}, err
		}
		a.Records = append(a.Records, b)
	}
	return a, nil
}
