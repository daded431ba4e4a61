package archive

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Remove rewrites the archive file name of the directory without the
// sessions ids, for their erasure: the sessions it keeps are written to a
// new file, each with its checksum, synced, then renamed over the old one
// (and the directory synced), so that a crash leaves the old file or the
// new one whole, and no byte of the removed sessions is in the file after.
// A file that holds none of them is left as it is; a torn tail past its
// last checksum is dropped with them.
func (w *Writer) Remove(ctx context.Context, name string, ids []session.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if filepath.Base(name) != name {
		return fmt.Errorf("archive: %q is not a file name of the archive directory", name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	path := filepath.Join(w.dir, name)
	f, err := Read(path)
	if err != nil && (f == nil || f.Header == nil || !errors.Is(err, ErrDamaged)) {
		return err
	}
	keep := slices.DeleteFunc(slices.Clone(f.Sessions), func(s Session) bool {
		id, err := session.ParseID(s.GetMeta().GetSessionId())
		return err == nil && slices.Contains(ids, id)
	})
	if len(keep) == len(f.Sessions) && err == nil {
		return nil
	}
	b, err := fileBytes(f.Header, keep)
	if err != nil {
		return fmt.Errorf("archive: rewriting %s: %w", path, err)
	}
	tmp := path + ".rewrite"
	if err := writeSynced(tmp, b); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("archive: rewriting %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("archive: rewriting %s: %w", path, err)
	}
	delete(w.ends, name)
	return syncDir(w.dir)
}

// fileBytes is a whole archive file: its header, then each session with
// its checksum.
func fileBytes(h *hubpb.ArchiveHeader, ss []Session) ([]byte, error) {
	hdr, err := proto.Marshal(&hubpb.ArchiveRecord{Record: &hubpb.ArchiveRecord_Header{Header: h}})
	if err != nil {
		return nil, err
	}
	b := protowire.AppendBytes(nil, hdr)
	sum := crc32.Update(0, castagnoli, b)
	det := proto.MarshalOptions{Deterministic: true}
	for _, s := range ss {
		meta, err := det.Marshal(s.GetMeta())
		if err != nil {
			return nil, err
		}
		a := hub.ArchivedSession{Meta: meta, At: s.GetArchivedAt().AsTime(), EndedAt: s.GetEndedAt().AsTime()}
		for _, e := range s.Envelopes {
			rec, err := det.Marshal(e)
			if err != nil {
				return nil, err
			}
			a.Records = append(a.Records, rec)
		}
		var part []byte
		if part, sum, err = sessionBytes(a, sum); err != nil {
			return nil, err
		}
		b = append(b, part...)
	}
	return b, nil
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Find returns the sessions of every archive file of the directory whose
// metadata match, each once, in file order.
func (w *Writer) Find(ctx context.Context, match func(*hubpb.SessionMeta) bool) ([]session.ID, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	paths, err := filepath.Glob(filepath.Join(w.dir, "*"+Ext))
	if err != nil {
		return nil, err
	}
	var out []session.ID
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := Read(p)
		if err != nil && (f == nil || !errors.Is(err, ErrDamaged)) {
			return nil, err
		}
		for _, s := range f.Sessions {
			if id, err := session.ParseID(s.GetMeta().GetSessionId()); err == nil && match(s.GetMeta()) && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out, nil
}
