package agentsdk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/hubd/hubd/hubpb"
)

// ErrBackupIncomplete: a backup stream ended without the digest its last
// chunk carries, or with one that does not match the bytes received.
var ErrBackupIncomplete = errors.New("agentsdk: backup incomplete")

// BackupInfo describes a backup Client.Backup wrote.
type BackupInfo struct {
	Format string // what the bytes are, as the hub names it
	Bytes  uint64 // how many were written
	SHA256 []byte // their digest, checked against the hub's
}

// Backup writes a consistent snapshot of the hub's whole log to w while
// the hub serves (operators; others get ErrPermissionDenied): the bytes
// `hubd log restore` loads into an empty data directory. It checks the
// digest the hub sends last and fails with ErrBackupIncomplete when the
// stream was cut short or damaged; w then holds a partial copy, which the
// caller discards. A hub whose log cannot be backed up this way (a cluster
// node) answers codes.Unimplemented.
func (c *Client) Backup(ctx context.Context, w io.Writer) (BackupInfo, error) {
	stream, err := c.rpc.Backup(ctx, &hubpb.BackupRequest{})
	if err != nil {
		return BackupInfo{}, wrapErr("backup", err)
	}
	var info BackupInfo
	sum := sha256.New()
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return info, fmt.Errorf("backup ended after %d bytes without its digest: %w", info.Bytes, ErrBackupIncomplete)
		}
		if err != nil {
			return info, wrapErr("backup", err)
		}
		if f := chunk.GetFormat(); f != "" && info.Format == "" {
			info.Format = f
		}
		if d := chunk.GetData(); len(d) > 0 {
			if _, err := w.Write(d); err != nil {
				return info, fmt.Errorf("agentsdk: backup: writing: %w", err)
			}
			sum.Write(d)
			info.Bytes += uint64(len(d))
		}
		if want := chunk.GetSha256(); want != nil {
			info.SHA256 = sum.Sum(nil)
			if !bytes.Equal(want, info.SHA256) || chunk.GetTotalBytes() != info.Bytes {
				return info, fmt.Errorf("backup: received %d bytes with sha256 %x, the hub sent %d with %x: %w",
					info.Bytes, info.SHA256, chunk.GetTotalBytes(), want, ErrBackupIncomplete)
			}
			// The digest is the last chunk; drain to the stream's end.
			if _, err := stream.Recv(); err != nil && !errors.Is(err, io.EOF) {
				return info, wrapErr("backup", err)
			}
			return info, nil
		}
	}
}
