package wal

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeyEncoding(t *testing.T) {
	s := [16]byte{0: 0xaa, 15: 0xbb}
	tests := []struct {
		name string
		key  key
		hex  string
	}{
		{"format", key{kind: kindFormat}, "00" + "00000000000000000000000000000000"},
		{"meta", key{kind: kindMeta, session: s}, "01" + "aa0000000000000000000000000000bb"},
		{"record 1", key{kind: kindRecord, session: s, seq: 1}, "02" + "aa0000000000000000000000000000bb" + "0000000000000001"},
		{"record max", key{kind: kindRecord, session: s, seq: 1<<64 - 1}, "02" + "aa0000000000000000000000000000bb" + "ffffffffffffffff"},
		{"record order", key{kind: kindRecord, session: s, seq: 0x0102}, "02" + "aa0000000000000000000000000000bb" + "0000000000000102"},
		{"index", key{kind: kindIndex, index: []byte{0x30, 0x31}}, "053031"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := mustHex(t, tc.hex)
			got := tc.key.encode(nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("encode = %x, want %x", got, want)
			}
			back, err := decodeKey(got)
			if err != nil || !reflect.DeepEqual(back, tc.key) {
				t.Fatalf("decodeKey = %+v, %v; want %+v", back, err, tc.key)
			}
		})
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	tests := []struct {
		name string
		hex  string
	}{
		{"empty", ""},
		{"unknown kind", "07" + "00000000000000000000000000000000"},
		{"meta short", "01" + "000000000000000000000000000000"},
		{"meta long", "01" + "0000000000000000000000000000000000"},
		{"record short", "02" + "00000000000000000000000000000000" + "00000001"},
		{"record seq 0", "02" + "00000000000000000000000000000000" + "0000000000000000"},
		{"format nonzero", "00" + "00000000000000000000000000000001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeKey(mustHex(t, tc.hex)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeKey err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestValueEncoding(t *testing.T) {
	k := appendRecordKey(nil, sid(1), 7)
	tests := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"short", []byte("x")},
		{"text", []byte("hello, wal")},
		{"binary", bytes.Repeat([]byte{0, 0xff}, 600)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := appendValue([]byte("prefix"), k, tc.data)[len("prefix"):]
			if len(v) != frameLen(len(tc.data)) || v[0] != frameVersion {
				t.Fatalf("frame %x: bad length or version", v)
			}
			got, err := decodeValue(k, v)
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Fatalf("decodeValue = %q, %v", got, err)
			}
		})
	}
	// A known vector pins the frame: version 1, then the big-endian
	// CRC-32C (Castagnoli) of key|version|data = 01 01 61, then the data.
	if got := hex.EncodeToString(appendValue(nil, []byte{0x01}, []byte("a"))); got != "01"+"452ab912"+"61" {
		t.Fatalf("frame = %s", got)
	}
}

func TestDecodeValueErrors(t *testing.T) {
	k := appendRecordKey(nil, sid(1), 7)
	good := appendValue(nil, k, []byte("payload"))
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	tests := []struct {
		name string
		key  []byte
		v    []byte
	}{
		{"empty", k, nil},
		{"header only short", k, good[:4]},
		{"bad version", k, flip(0)},
		{"bad crc", k, flip(2)},
		{"bad data", k, flip(len(good) - 1)},
		{"truncated", k, good[:len(good)-1]},
		{"extended", k, append(bytes.Clone(good), 0)},
		{"other key", appendRecordKey(nil, sid(1), 8), good},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeValue(tc.key, tc.v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeValue err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestFormatRecord(t *testing.T) {
	v, err := decodeFormat(encodeFormat(formatVersion))
	if err != nil || v != formatVersion {
		t.Fatalf("decodeFormat = %d, %v", v, err)
	}
	if v, err := decodeFormat(encodeFormat(9)); err != nil || v != 9 {
		t.Fatalf("decodeFormat(9) = %d, %v", v, err)
	}
	bad := appendValue(nil, formatKey(), []byte("not-wal!\x00\x00\x00\x01"))
	if _, err := decodeFormat(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decodeFormat(bad magic) err = %v", err)
	}
}

// FuzzDecodeRecord feeds arbitrary keys and values to the record decoder:
// it must never panic, and whatever it accepts must re-encode to the same
// bytes.
func FuzzDecodeRecord(f *testing.F) {
	k := appendRecordKey(nil, sid(3), 42)
	f.Add(k, appendValue(nil, k, []byte("data")))
	f.Add(k, appendValue(nil, k, nil))
	f.Add(k, []byte{1, 0, 0, 0, 0})
	f.Add(appendMetaKey(nil, sid(3)), appendValue(nil, appendMetaKey(nil, sid(3)), []byte("m")))
	f.Add([]byte{}, []byte{})
	f.Add(formatKey(), encodeFormat(formatVersion))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		if dk, err := decodeKey(k); err == nil {
			if got := dk.encode(nil); !bytes.Equal(got, k) {
				t.Fatalf("key %x decoded to %+v re-encodes to %x", k, dk, got)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeKey error %v is not ErrCorrupt", err)
		}
		if data, err := decodeValue(k, v); err == nil {
			if got := appendValue(nil, k, data); !bytes.Equal(got, v) {
				t.Fatalf("value %x decoded to %x re-encodes to %x", v, data, got)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeValue error %v is not ErrCorrupt", err)
		}
		s, seq, data, err := decodeRecord(k, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeRecord error %v is not ErrCorrupt", err)
			}
			return
		}
		if !bytes.Equal(appendRecordKey(nil, s, seq), k) || !bytes.Equal(appendValue(nil, k, data), v) {
			t.Fatalf("decodeRecord(%x, %x) does not round-trip", k, v)
		}
	})
}

// FuzzRecordRoundTrip encodes arbitrary records and checks they decode to
// the same session, seq and data.
func FuzzRecordRoundTrip(f *testing.F) {
	s1 := sid(1)
	f.Add(s1[:], uint64(1), []byte("hello"))
	f.Add(make([]byte, 16), uint64(1<<64-1), []byte{})
	f.Fuzz(func(t *testing.T, sess []byte, seq uint64, data []byte) {
		var s [16]byte
		copy(s[:], sess)
		k := appendRecordKey(nil, s, seq)
		v := appendValue(nil, k, data)
		gs, gseq, gdata, err := decodeRecord(k, v)
		if seq == 0 {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("seq 0 accepted: %v", err)
			}
			return
		}
		if err != nil || gs != s || gseq != seq || !bytes.Equal(gdata, data) {
			t.Fatalf("round trip: %x %d %x %v", gs, gseq, gdata, err)
		}
	})
}

// FuzzDecodeFormat feeds arbitrary values to the format record decoder.
func FuzzDecodeFormat(f *testing.F) {
	f.Add(encodeFormat(formatVersion))
	f.Add(encodeFormat(0))
	f.Add([]byte("hubd-wal"))
	f.Fuzz(func(t *testing.T, v []byte) {
		ver, err := decodeFormat(v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeFormat error %v is not ErrCorrupt", err)
			}
			return
		}
		if got := encodeFormat(ver); !bytes.Equal(got, v) {
			t.Fatalf("format %x decoded to %d re-encodes to %x", v, ver, got)
		}
	})
}
