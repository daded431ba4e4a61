package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// testProof is a proof keyed by key on a clock the test moves.
func testProof(key string, now *time.Time) *NodeProof {
	p := NewNodeProof([]byte(key))
	p.now = func() time.Time { return *now }
	return p
}

// TestNodeProof: a signed call checks once; a replay of it, any change to
// its subject, reply, identity headers or body, a proof made with another
// key, a missing or malformed proof, and a time outside the window are
// refused with ErrNoProof saying why. Nonces are forgotten once their
// time has left the window.
func TestNodeProof(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testProof("cluster secret", &now)
	call := func() nats.Header {
		h := nats.Header{}
		h.Set(hdrMethod, "/hubd.v1.Hub/GetSession")
		h.Set(hdrAgent, "alice")
		h.Set(hdrFrom, "n2")
		h.Set(hdrTimeout, "5000")
		return h
	}
	body := []byte("request")
	signed := func() nats.Header {
		h := call()
		p.sign("hubd.node.n1", "_INBOX.x.1", h, body)
		return h
	}
	h := signed()
	if err := p.check("hubd.node.n1", "_INBOX.x.1", h, body); err != nil {
		t.Fatalf("a signed call: %v", err)
	}
	refused := func(what, want string, subject, reply string, h nats.Header, body []byte) {
		t.Helper()
		err := p.check(subject, reply, h, body)
		if !errors.Is(err, ErrNoProof) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrNoProof saying %q", what, err, want)
		}
	}
	refused("the same call again", "seen before (a replay)", "hubd.node.n1", "_INBOX.x.1", h, body)
	edit := func(f func(nats.Header)) nats.Header {
		h := signed()
		f(h)
		return h
	}
	for what, h := range map[string]nats.Header{
		"another agent":    edit(func(h nats.Header) { h.Set(hdrAgent, "bob") }),
		"operator added":   edit(func(h nats.Header) { h.Set(hdrOperator, "1") }),
		"another method":   edit(func(h nats.Header) { h.Set(hdrMethod, "/hubd.v1.Hub/CloseSession") }),
		"a longer timeout": edit(func(h nats.Header) { h.Set(hdrTimeout, "300000") }),
		"a second agent":   edit(func(h nats.Header) { h.Add(hdrAgent, "bob") }),
		"no proof":         call(),
		"proof of other key": func() nats.Header {
			h := call()
			NewNodeProof([]byte("other")).sign("hubd.node.n1", "_INBOX.x.1", h, body)
			return h
		}(),
	} {
		want := "signature does not match"
		if what == "no proof" {
			want = "no Hubd-Proof header"
		}
		refused(what, want, "hubd.node.n1", "_INBOX.x.1", h, body)
	}
	refused("another node's subject", "does not match", "hubd.node.n3", "_INBOX.x.1", signed(), body)
	refused("another reply subject", "does not match", "hubd.node.n1", "_INBOX.evil.1", signed(), body)
	refused("another body", "does not match", "hubd.node.n1", "_INBOX.x.1", signed(), []byte("requesT"))
	for _, bad := range []string{"v1", "v2 1 0123456789abcdef0123456789abcdef AAAA", "v1 x 0123456789abcdef0123456789abcdef AAAA", "v1 1 short AAAA"} {
		h := call()
		h.Set(hdrProof, bad)
		refused("proof "+bad, "malformed", "hubd.node.n1", "_INBOX.x.1", h, body)
	}

	// Time: a proof made 61 s before or after the receiver's clock is
	// refused, one 59 s away accepted.
	old := signed()
	now = now.Add(61 * time.Second)
	refused("a proof 61s old", "from this node's clock (window 1m0s)", "hubd.node.n1", "_INBOX.x.1", old, body)
	early := signed()
	now = now.Add(-61 * time.Second)
	refused("a proof 61s ahead", "from this node's clock", "hubd.node.n1", "_INBOX.x.1", early, body)
	late := signed()
	now = now.Add(59 * time.Second)
	if err := p.check("hubd.node.n1", "_INBOX.x.1", late, body); err != nil {
		t.Errorf("a proof 59s old: %v", err)
	}
	// Nonces whose time has left the window are forgotten.
	now = now.Add(2 * time.Minute)
	if err := p.check("hubd.node.n1", "_INBOX.x.1", signed(), body); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) != 1 || len(p.queue) != 1 {
		t.Errorf("%d nonces remembered (%d queued), want the last one only", len(p.seen), len(p.queue))
	}
}

// TestNilNodeProof: without credentials nothing is signed and everything
// checks.
func TestNilNodeProof(t *testing.T) {
	var p *NodeProof
	h := nats.Header{}
	p.sign("s", "r", h, nil)
	if len(h) != 0 || p.check("s", "r", h, nil) != nil {
		t.Fatalf("a nil proof signed %v or refused", h)
	}
}

// BenchmarkNodeProof is what a proof costs one message: sign and check a
// call of 256 bytes.
func BenchmarkNodeProof(b *testing.B) {
	p := NewNodeProof([]byte("cluster secret"))
	body := make([]byte, 256)
	for b.Loop() {
		h := nats.Header{}
		h.Set(hdrMethod, "/hubd.v1.Hub/GetSession")
		h.Set(hdrAgent, "alice")
		p.sign("hubd.node.n1", "_INBOX.x.1", h, body)
		if err := p.check("hubd.node.n1", "_INBOX.x.1", h, body); err != nil {
			b.Fatal(err)
		}
	}
}
