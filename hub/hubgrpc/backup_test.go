package hubgrpc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// TestBackup: an operator's Backup streams the log with its format first
// and its digest last; the bytes restore into a store holding the
// sessions. Anybody else is refused before a byte is sent.
func TestBackup(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	id := wiretest.Pipeline(t, f.agent("alice"))

	stream, err := f.agent("alice").Backup(ctx, &hubpb.BackupRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if code, reason := wiretest.ReasonOf(err); code != codes.PermissionDenied || reason != "PERMISSION_DENIED" {
		t.Fatalf("a backup by alice: %v %s (%v)", code, reason, err)
	}

	stream, err = f.agent("operator").Backup(ctx, &hubpb.BackupRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var data bytes.Buffer
	var last *hubpb.BackupChunk
	for i := 0; ; i++ {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if (i == 0) != (c.GetFormat() != "") {
			t.Fatalf("chunk %d has format %q: want it on the first chunk only", i, c.GetFormat())
		}
		if i == 0 && c.GetFormat() != wal.BackupFormat() {
			t.Fatalf("format %q, want %q", c.GetFormat(), wal.BackupFormat())
		}
		if last != nil {
			t.Fatalf("chunk %d after the digest", i)
		}
		data.Write(c.GetData())
		if c.GetSha256() != nil {
			last = c
		}
	}
	sum := sha256.Sum256(data.Bytes())
	if last == nil || !bytes.Equal(last.GetSha256(), sum[:]) || last.GetTotalBytes() != uint64(data.Len()) {
		t.Fatalf("digest chunk %v for %d bytes with sha256 %x", last, data.Len(), sum)
	}

	dir := filepath.Join(t.TempDir(), "restored")
	if err := wal.Restore(wal.Options{Dir: dir}, &data); err != nil {
		t.Fatal(err)
	}
	l, err := wal.Open(wal.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sid := session.MustParseID(id)
	var seqs []uint64
	if err := l.Scan(ctx, sid, 1, func(seq uint64, _ []byte) error { seqs = append(seqs, seq); return nil }); err != nil {
		t.Fatal(err)
	}
	info, err := f.agent("alice").GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(seqs)) != info.GetSeq() || len(seqs) == 0 {
		t.Fatalf("the restored log holds %d records of %s, the hub %d", len(seqs), id, info.GetSeq())
	}
	if dmg, _, err := l.Verify(ctx); err != nil || !dmg.Empty() {
		t.Fatalf("verify of the restored backup: %v %v", dmg, err)
	}
}
