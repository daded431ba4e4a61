package jetstream

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"strconv"
	"strings"
)

// Message kinds: the subject token after the partition, and the kind byte
// the checksum covers.
const (
	kindMeta   byte = 0x01 // hub.p<k>.m.<session>
	kindRecord byte = 0x02 // hub.p<k>.s.<session>
	kindGone   byte = 0x03 // hub.p<k>.g.<session>: the tombstone of a deleted session
)

// letter is a kind's subject token.
func letter(kind byte) string {
	switch kind {
	case kindMeta:
		return "m"
	case kindGone:
		return "g"
	}
	return "s"
}

// Frame layout of every payload: version | CRC-32C (BE) | data.
const (
	frameVersion   byte = 1
	frameHeaderLen      = 1 + 4
)

// NATS headers the log sets.
const (
	hdrMsgID        = "Nats-Msg-Id"
	hdrExpectedSubj = "Nats-Expected-Last-Subject-Sequence"
	hdrBatchID      = "Nats-Batch-Id"
	hdrBatchSeq     = "Nats-Batch-Sequence"
	hdrBatchCommit  = "Nats-Batch-Commit"
)

// metaIDSuffix ends the Nats-Msg-Id of a session's metadata message,
// goneIDSuffix its tombstone's.
const (
	metaIDSuffix   = "meta"
	goneIDSuffix   = "gone"
	erasedIDSuffix = "erased"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Partition returns the partition of a tree: FNV-1a (32 bits) of the root
// session's 16 raw bytes, modulo p. It is part of the stored format:
// changing it, or p, misplaces every session.
func Partition(root [16]byte, p int) int {
	h := fnv.New32a()
	h.Write(root[:])
	return int(h.Sum32() % uint32(p))
}

// formatUUID writes id in the canonical 8-4-4-4-12 lowercase form.
func formatUUID(id [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], id[10:16])
	return string(b[:])
}

// parseUUID reads the canonical lowercase form only, so a session has one
// subject.
func parseUUID(s string) ([16]byte, bool) {
	var id [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' || strings.ToLower(s) != s {
		return id, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return id, false
	}
	return id, true
}

// layout names a deployment's streams and subjects.
type layout struct {
	streamPrefix, subjectPrefix string
	partitions                  int
}

// stream returns the name of partition k's stream: the prefix and k in at
// least two digits.
func (y layout) stream(k int) string {
	width := max(2, len(strconv.Itoa(y.partitions-1)))
	return fmt.Sprintf("%s%0*d", y.streamPrefix, width, k)
}

// streamSubjects is the subject filter of partition k's stream.
func (y layout) streamSubjects(k int) string {
	return fmt.Sprintf("%s.p%d.>", y.subjectPrefix, k)
}

// subject returns the subject of a session's metadata, records or
// tombstone.
func (y layout) subject(k int, kind byte, id [16]byte) string {
	return fmt.Sprintf("%s.p%d.%s.%s", y.subjectPrefix, k, letter(kind), formatUUID(id))
}

// kindFilter is the subject filter of every message of one kind in
// partition k.
func (y layout) kindFilter(k int, kind byte) string {
	return fmt.Sprintf("%s.p%d.%s.*", y.subjectPrefix, k, letter(kind))
}

// parseSubject splits a message subject of partition k into kind and
// session.
func (y layout) parseSubject(k int, subj string) (byte, [16]byte, error) {
	pre := fmt.Sprintf("%s.p%d.", y.subjectPrefix, k)
	rest, ok := strings.CutPrefix(subj, pre)
	var kind byte
	switch {
	case !ok || len(rest) < 2 || rest[1] != '.':
	case rest[0] == 's':
		kind = kindRecord
	case rest[0] == 'm':
		kind = kindMeta
	case rest[0] == 'g':
		kind = kindGone
	}
	id, okID := parseUUID(rest[min(2, len(rest)):])
	if kind == 0 || !okID {
		return 0, id, fmt.Errorf("%w: subject %q in partition %d", ErrCorrupt, subj, k)
	}
	return kind, id, nil
}

// msgID is a record's Nats-Msg-Id, <session>/<seq>, or the metadata's,
// <session>/meta (seq 0).
func msgID(id [16]byte, seq uint64) string {
	if seq == 0 {
		return formatUUID(id) + "/" + metaIDSuffix
	}
	return formatUUID(id) + "/" + strconv.FormatUint(seq, 10)
}

// goneMsgID is the Nats-Msg-Id of a session's tombstone: <session>/gone,
// or <session>/erased for an erasure's (which may follow the first).
func goneMsgID(id [16]byte, erase bool) string {
	if erase {
		return formatUUID(id) + "/" + erasedIDSuffix
	}
	return formatUUID(id) + "/" + goneIDSuffix
}

// parseMsgID checks that a Nats-Msg-Id names session id and returns its
// seq (0 for metadata).
func parseMsgID(id [16]byte, kind byte, s string) (uint64, error) {
	sid, rest, ok := strings.Cut(s, "/")
	if got, okID := parseUUID(sid); !ok || !okID || got != id {
		return 0, fmt.Errorf("%w: Nats-Msg-Id %q on session %s", ErrCorrupt, s, formatUUID(id))
	}
	switch {
	case kind == kindMeta && rest != metaIDSuffix, kind == kindGone && rest != goneIDSuffix && rest != erasedIDSuffix:
		return 0, fmt.Errorf("%w: Nats-Msg-Id %q on a %s message", ErrCorrupt, s, letter(kind))
	case kind != kindRecord:
		return 0, nil
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != rest {
		return 0, fmt.Errorf("%w: Nats-Msg-Id %q: bad seq", ErrCorrupt, s)
	}
	return seq, nil
}

// checksum is the CRC-32C of the session, the seq (0 for metadata), the
// kind, the frame version and the data: a payload under another subject
// or seq is detected as well as a damaged one.
func checksum(id [16]byte, seq uint64, kind byte, data []byte) uint32 {
	var pre [16 + 8 + 2]byte
	copy(pre[:16], id[:])
	binary.BigEndian.PutUint64(pre[16:24], seq)
	pre[24], pre[25] = kind, frameVersion
	c := crc32.Update(0, crcTable, pre[:])
	return crc32.Update(c, crcTable, data)
}

// frame returns the payload of a message: version, checksum, data.
func frame(id [16]byte, seq uint64, kind byte, data []byte) []byte {
	out := make([]byte, frameHeaderLen+len(data))
	out[0] = frameVersion
	binary.BigEndian.PutUint32(out[1:5], checksum(id, seq, kind, data))
	copy(out[frameHeaderLen:], data)
	return out
}

// unframe checks a payload and returns its data (a sub-slice of p).
func unframe(id [16]byte, seq uint64, kind byte, p []byte) ([]byte, error) {
	if len(p) < frameHeaderLen {
		return nil, fmt.Errorf("%w: payload of %d bytes", ErrCorrupt, len(p))
	}
	if p[0] != frameVersion {
		return nil, fmt.Errorf("%w: frame version %d", ErrCorrupt, p[0])
	}
	data := p[frameHeaderLen:]
	if want, got := checksum(id, seq, kind, data), binary.BigEndian.Uint32(p[1:5]); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	return data, nil
}

// stored is one decoded message.
type stored struct {
	kind    byte
	session [16]byte
	seq     uint64 // hub seq; 0 for metadata
	sseq    uint64 // stream seq
	data    []byte // unframed
}

// decode checks a stored message of partition k: subject, Nats-Msg-Id and
// frame.
func (y layout) decode(k int, subj, id string, payload []byte, sseq uint64) (stored, error) {
	kind, sess, err := y.parseSubject(k, subj)
	if err != nil {
		return stored{}, fmt.Errorf("stream seq %d: %w", sseq, err)
	}
	seq, err := parseMsgID(sess, kind, id)
	if err != nil {
		return stored{}, fmt.Errorf("stream seq %d: %w", sseq, err)
	}
	data, err := unframe(sess, seq, kind, payload)
	if err != nil {
		return stored{}, fmt.Errorf("session %s seq %d (stream seq %d): %w", formatUUID(sess), seq, sseq, err)
	}
	return stored{kind: kind, session: sess, seq: seq, sseq: sseq, data: data}, nil
}
