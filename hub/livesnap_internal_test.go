package hub

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/session"
)

func TestLiveSnapCodec(t *testing.T) {
	a, b := session.ID(uuid.Must(uuid.NewV7())), session.ID(uuid.Must(uuid.NewV7()))
	for _, ids := range [][]session.ID{nil, {a}, {a, b}} {
		cut, got, err := decodeLiveSnap(encodeLiveSnap(b, ids))
		if err != nil || cut != b || len(got) != len(ids) || (len(ids) > 0 && got[len(got)-1] != ids[len(ids)-1]) {
			t.Fatalf("round trip of %v: %v %v %v", ids, cut, got, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("live1"), []byte("live2" + string(a[:])), append(encodeLiveSnap(a, nil), 1)} {
		if _, _, err := decodeLiveSnap(bad); !errors.Is(err, errBadSnapshot) {
			t.Fatalf("decode %q = %v, want errBadSnapshot", bad, err)
		}
	}
}

// FuzzDecodeLiveSnap: any bytes decode or are refused, never panic, and
// what decodes encodes back to the same bytes.
func FuzzDecodeLiveSnap(f *testing.F) {
	f.Add(encodeLiveSnap(session.ID(uuid.Must(uuid.NewV7())), []session.ID{{1}}))
	f.Add([]byte("live1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cut, ids, err := decodeLiveSnap(b)
		if err == nil && !bytes.Equal(encodeLiveSnap(cut, ids), b) {
			t.Fatalf("%x decodes to %v %v, which encodes otherwise", b, cut, ids)
		}
	})
}

func TestSnapCutoff(t *testing.T) {
	id := session.ID(uuid.Must(uuid.NewV7()))
	if got := snapCutoff(id); !bytes.Equal(got, liveKey(id)) {
		t.Fatalf("snapCutoff(%v) = %x, want its live key", id, got)
	}
	if got := snapCutoff(session.ID{}); got != nil {
		t.Fatalf("snapCutoff(zero) = %x, want nil (the whole range)", got)
	}
}

// TestNextIDAfterClockStep: ids stay above every id the hub holds, also
// when the clock that makes them was set back (here by a day), and keep
// the UUIDv7 layout.
func TestNextIDAfterClockStep(t *testing.T) {
	now := time.Now()
	v7at := func(at time.Time) uuid.UUID {
		u := uuid.Must(uuid.NewV7())
		var ms [8]byte
		binary.BigEndian.PutUint64(ms[:], uint64(at.UnixMilli()))
		copy(u[:6], ms[2:])
		return u
	}
	h := &Hub{ids: idSource{v7: true}, cfg: Config{NewID: func() uuid.UUID { return v7at(now.Add(-24 * time.Hour)) }}}
	held := v7at(now)
	h.ids.note(held)
	prev := held
	for range 5 {
		id := h.newID()
		if bytes.Compare(id[:], prev[:]) <= 0 || id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("newID %v after %v: want above it, a UUIDv7", id, prev)
		}
		if ms := int64(binary.BigEndian.Uint64(append([]byte{0, 0}, id[:6]...))); ms-now.UnixMilli() > 5 {
			t.Fatalf("newID %v is %d ms past the newest held: want 1 ms a step", id, ms-now.UnixMilli())
		}
		prev = id
	}
	// A clock that has not been set back is left alone.
	h = &Hub{ids: idSource{v7: true}, cfg: Config{NewID: func() uuid.UUID { return v7at(now.Add(time.Minute)) }}}
	h.ids.note(held)
	if id, want := h.newID(), v7at(now.Add(time.Minute)); !bytes.Equal(id[:6], want[:6]) {
		t.Fatalf("newID moved an id already above the newest: %v", id)
	}
}
