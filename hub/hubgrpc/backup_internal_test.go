package hubgrpc

import (
	"bytes"
	"testing"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hubpb"
)

// sent records what a chunkWriter sends (the rest of the stream is unused).
type sent struct {
	grpc.ServerStreamingServer[hubpb.BackupChunk]
	chunks []*hubpb.BackupChunk
}

func (s *sent) Send(c *hubpb.BackupChunk) error {
	s.chunks = append(s.chunks, &hubpb.BackupChunk{Data: bytes.Clone(c.GetData()), Format: c.GetFormat()})
	return nil
}

// TestChunkWriter: writes of any size come out in chunks of backupChunk
// bytes (the last one shorter), in order, the format on the first only.
func TestChunkWriter(t *testing.T) {
	for _, writes := range [][]int{{0}, {1}, {backupChunk}, {backupChunk + 1}, {7, backupChunk - 7, 3}, {backupChunk / 2, backupChunk, backupChunk}} {
		s := &sent{}
		cw := &chunkWriter{stream: s, sum: nopHash{}, format: "f"}
		var all []byte
		for i, n := range writes {
			p := bytes.Repeat([]byte{byte(i + 1)}, n)
			all = append(all, p...)
			if k, err := cw.Write(p); k != n || err != nil {
				t.Fatalf("Write(%d) = %d, %v", n, k, err)
			}
		}
		if err := cw.flush(); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for i, c := range s.chunks {
			if len(c.GetData()) == 0 || len(c.GetData()) > backupChunk || (i < len(s.chunks)-1 && len(c.GetData()) != backupChunk) {
				t.Fatalf("%v: chunk %d has %d bytes", writes, i, len(c.GetData()))
			}
			if (i == 0) != (c.GetFormat() == "f") {
				t.Fatalf("%v: chunk %d format %q", writes, i, c.GetFormat())
			}
			got = append(got, c.GetData()...)
		}
		if !bytes.Equal(got, all) || cw.total != uint64(len(all)) {
			t.Fatalf("%v: %d bytes out of %d, total %d", writes, len(got), len(all), cw.total)
		}
	}
}

// nopHash is a hash.Hash that keeps nothing (the digest is tested over
// the wire in TestBackup).
type nopHash struct{}

func (nopHash) Write(p []byte) (int, error) { return len(p), nil }
func (nopHash) Sum(b []byte) []byte         { return b }
func (nopHash) Reset()                      {}
func (nopHash) Size() int                   { return 0 }
func (nopHash) BlockSize() int              { return 1 }
