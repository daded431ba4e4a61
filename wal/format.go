package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Key kinds: the first byte of every key. Keys sort by kind first, so all
// metadata keys precede all record keys, and records sort by session, then
// by seq (big-endian).
const (
	kindFormat byte = 0x00 // kindFormat|16 zero bytes -> framed format version
	kindMeta   byte = 0x01 // kindMeta|session -> framed session metadata
	kindRecord byte = 0x02 // kindRecord|session|seq -> framed record data
	kindHead   byte = 0x03 // kindHead|session -> framed last seq (8 bytes BE)
	kindMark   byte = 0x04 // kindMark|session -> framed damage mark
	kindIndex  byte = 0x05 // kindIndex|any bytes -> framed caller's data (see Write.Index)
)

const (
	sessionLen   = 16
	metaKeyLen   = 1 + sessionLen
	recordKeyLen = metaKeyLen + 8
	formatKeyLen = metaKeyLen
	headKeyLen   = metaKeyLen
	markKeyLen   = metaKeyLen

	// frameVersion is the first byte of every value.
	frameVersion byte = 1
	// frameHeaderLen is the version byte plus the CRC-32C.
	frameHeaderLen = 5

	// formatVersion is the store format version kept under the format key:
	// 2 since records and metadata hold the hub's protobuf, 3 since every
	// session also has a head key (see the package doc). Open upgrades a
	// store of version 2 by itself; Migrate converts one of version 1.
	formatVersion uint32 = 3
	// headsVersion is the first format version whose sessions have heads.
	headsVersion uint32 = 3
	// formatMagic precedes formatVersion in the format record's data.
	formatMagic = "hubd-wal"
	// formatDataLen is len(formatMagic) + 4 bytes of version.
	formatDataLen = len(formatMagic) + 4
)

// key is a decoded key. seq is 0 for non-record kinds; index is the
// hub's own key for kindIndex (after the kind byte).
type key struct {
	kind    byte
	session [16]byte
	seq     uint64
	index   []byte
}

// appendRecordKey appends kindRecord|session|seq(8 bytes big-endian) to dst.
func appendRecordKey(dst []byte, session [16]byte, seq uint64) []byte {
	dst = append(dst, kindRecord)
	dst = append(dst, session[:]...)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// appendMetaKey appends kindMeta|session to dst.
func appendMetaKey(dst []byte, session [16]byte) []byte {
	return appendSessionKey(dst, kindMeta, session)
}

// appendSessionKey appends kind|session to dst: the key of a session's
// metadata, head or mark.
func appendSessionKey(dst []byte, kind byte, session [16]byte) []byte {
	dst = append(dst, kind)
	return append(dst, session[:]...)
}

// formatKey returns the key of the format version record.
func formatKey() []byte {
	k := make([]byte, formatKeyLen)
	k[0] = kindFormat
	return k
}

// encode appends the key's encoding to dst.
func (k key) encode(dst []byte) []byte {
	switch k.kind {
	case kindRecord:
		return appendRecordKey(dst, k.session, k.seq)
	case kindMeta, kindHead, kindMark, kindGone:
		return appendSessionKey(dst, k.kind, k.session)
	case kindIndex:
		return append(append(dst, kindIndex), k.index...)
	default:
		return append(dst, formatKey()...)
	}
}

// decodeKey parses a key. Any key that is not exactly one of the three
// fixed-width layouts (or a record key with seq 0) is ErrCorrupt.
func decodeKey(b []byte) (key, error) {
	var k key
	if len(b) == 0 {
		return k, fmt.Errorf("%w: empty key", ErrCorrupt)
	}
	k.kind = b[0]
	want := 0
	switch k.kind {
	case kindFormat, kindMeta, kindHead, kindMark, kindGone:
		want = metaKeyLen
	case kindRecord:
		want = recordKeyLen
	case kindIndex:
		if len(b) < 2 || len(b) > maxIndexKey+1 {
			return k, fmt.Errorf("%w: index key of length %d", ErrCorrupt, len(b))
		}
		k.index = b[1:]
		return k, nil
	default:
		return k, fmt.Errorf("%w: unknown key kind %#02x", ErrCorrupt, k.kind)
	}
	if len(b) != want {
		return k, fmt.Errorf("%w: key kind %#02x has length %d, want %d", ErrCorrupt, k.kind, len(b), want)
	}
	copy(k.session[:], b[1:metaKeyLen])
	switch k.kind {
	case kindFormat:
		if k.session != ([16]byte{}) {
			return k, fmt.Errorf("%w: format key with non-zero suffix", ErrCorrupt)
		}
	case kindRecord:
		k.seq = binary.BigEndian.Uint64(b[metaKeyLen:])
		if k.seq == 0 {
			return k, fmt.Errorf("%w: record key with seq 0", ErrCorrupt)
		}
	}
	return k, nil
}

// checksum is the CRC-32C (Castagnoli) of the key, the frame version byte
// and the data: binding the key means a value stored under the wrong key is
// detected too.
func checksum(k, version, data []byte) uint32 {
	tab := crc32.MakeTable(crc32.Castagnoli) // cached by hash/crc32 after first use
	c := crc32.Update(0, tab, k)
	c = crc32.Update(c, tab, version)
	return crc32.Update(c, tab, data)
}

// appendValue appends the frame of data stored under key k to dst:
// version(1) | crc32c(k|version|data) (4, big-endian) | data.
func appendValue(dst, k, data []byte) []byte {
	start := len(dst)
	dst = append(dst, frameVersion, 0, 0, 0, 0)
	dst = append(dst, data...)
	v := dst[start:]
	binary.BigEndian.PutUint32(v[1:frameHeaderLen], checksum(k, v[:1], v[frameHeaderLen:]))
	return dst
}

// frameLen is the encoded length of a value frame holding n data bytes.
func frameLen(n int) int { return frameHeaderLen + n }

// decodeValue checks the frame of value v stored under key k and returns
// its data, which aliases v.
func decodeValue(k, v []byte) ([]byte, error) {
	if len(v) < frameHeaderLen {
		return nil, fmt.Errorf("%w: value of %d bytes is shorter than the %d-byte frame header",
			ErrCorrupt, len(v), frameHeaderLen)
	}
	if v[0] != frameVersion {
		return nil, fmt.Errorf("%w: unknown frame version %d", ErrCorrupt, v[0])
	}
	data := v[frameHeaderLen:]
	stored := binary.BigEndian.Uint32(v[1:frameHeaderLen])
	if got := checksum(k, v[:1], data); got != stored {
		return nil, fmt.Errorf("%w: checksum mismatch: stored %08x, computed %08x", ErrCorrupt, stored, got)
	}
	return data, nil
}

// decodeRecord checks a record key and its value and returns the session,
// seq and data (aliasing v).
func decodeRecord(k, v []byte) ([16]byte, uint64, []byte, error) {
	dk, err := decodeKey(k)
	if err != nil {
		return [16]byte{}, 0, nil, err
	}
	if dk.kind != kindRecord {
		return [16]byte{}, 0, nil, fmt.Errorf("%w: key kind %#02x where a record was expected", ErrCorrupt, dk.kind)
	}
	data, err := decodeValue(k, v)
	if err != nil {
		return dk.session, dk.seq, nil, fmt.Errorf("session %x seq %d: %w", dk.session, dk.seq, err)
	}
	return dk.session, dk.seq, data, nil
}

// encodeFormat returns the framed value of the format record.
func encodeFormat(version uint32) []byte {
	data := binary.BigEndian.AppendUint32([]byte(formatMagic), version)
	return appendValue(nil, formatKey(), data)
}

// decodeFormat checks the format record's value and returns the version.
func decodeFormat(v []byte) (uint32, error) {
	data, err := decodeValue(formatKey(), v)
	if err != nil {
		return 0, err
	}
	if len(data) != formatDataLen || !bytes.HasPrefix(data, []byte(formatMagic)) {
		return 0, fmt.Errorf("%w: format record is not a %q record", ErrCorrupt, formatMagic)
	}
	return binary.BigEndian.Uint32(data[len(formatMagic):]), nil
}

// headDataLen is the length of a head's data: the last seq, big-endian.
const headDataLen = 8

// encodeHead returns the framed head value of a session whose last seq is
// last.
func encodeHead(session [16]byte, last uint64) []byte {
	var data [headDataLen]byte
	binary.BigEndian.PutUint64(data[:], last)
	return appendValue(nil, appendSessionKey(nil, kindHead, session), data[:])
}

// decodeHead checks a head value stored under key k and returns its seq.
func decodeHead(k, v []byte) (uint64, error) {
	data, err := decodeValue(k, v)
	if err != nil {
		return 0, err
	}
	if len(data) != headDataLen {
		return 0, fmt.Errorf("%w: head of %d bytes, want %d", ErrCorrupt, len(data), headDataLen)
	}
	return binary.BigEndian.Uint64(data), nil
}

// encodeMark returns the framed value of a damage mark: the first seq
// that cannot be trusted, then the cause as text.
func encodeMark(session [16]byte, from uint64, cause string) []byte {
	data := binary.BigEndian.AppendUint64(nil, from)
	data = append(data, cause...)
	return appendValue(nil, appendSessionKey(nil, kindMark, session), data)
}

// decodeMark checks a mark value stored under key k.
func decodeMark(k, v []byte) (from uint64, cause string, err error) {
	data, err := decodeValue(k, v)
	if err != nil {
		return 0, "", err
	}
	if len(data) < 8 {
		return 0, "", fmt.Errorf("%w: mark of %d bytes", ErrCorrupt, len(data))
	}
	return binary.BigEndian.Uint64(data), string(data[8:]), nil
}
