package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrNoProof reports a call between nodes, or an answer, that does not
// prove it was sent by a node: no proof, a proof that does not match the
// message, one outside the time window, or one seen before.
var ErrNoProof = errors.New("cluster: not proven to come from a node")

// DefaultProofWindow is how far a proof's time may be from the
// receiver's clock: the nodes' clocks must agree within it.
const DefaultProofWindow = 60 * time.Second

// hdrProof carries a message's proof: "v1 <unix ms> <nonce> <mac>".
const hdrProof = "Hubd-Proof"

// signedHeaders are the headers of the calls' messages a proof covers:
// every header a node reads from a call or an answer (Hubd-Part aside,
// which the body's digest makes moot). A header added to the protocol
// must be added here.
var signedHeaders = []string{hdrMethod, hdrAgent, hdrOperator, hdrTimeout, hdrFrom, hdrTrace, hdrState, hdrFailed, hdrServed, hdrRefused}

// NodeProof proves that a call between nodes, or its answer, was sent by
// a node of the cluster: an HMAC-SHA256, keyed by a secret every node
// holds (derived from the shared credentials: Creds.Proof), over the
// message's subject and reply subject, the headers that say who calls
// and what (signedHeaders), a SHA-256 of its whole body, a time and a
// random nonce. The receiver refuses a message whose MAC does not match,
// whose time is more than the window away from its own clock, or whose
// nonce it has accepted already (a replay): an identity header cannot be
// forged, altered, redirected to another node or replayed by whoever
// reaches the bus without the secret. It is all the calls know of
// authentication (Calls use only sign and check), so node-to-node gRPC
// over mutual TLS could replace it without touching the rest.
//
// Safe for concurrent use. A nil *NodeProof signs and checks nothing: a
// bus without credentials.
type NodeProof struct {
	key    []byte
	window time.Duration
	now    func() time.Time
	macs   sync.Pool // of HMACs keyed by key, reset before use

	mu    sync.Mutex
	seen  map[string]time.Time // accepted nonces, until their time leaves the window
	queue []seenNonce          // the same, in the order accepted
}

type seenNonce struct {
	nonce   string
	expires time.Time
}

// NewNodeProof returns a proof keyed by key, with DefaultProofWindow and
// the system clock.
func NewNodeProof(key []byte) *NodeProof {
	return &NodeProof{key: key, window: DefaultProofWindow, now: time.Now, seen: map[string]time.Time{}}
}

// mac is the message's MAC for a time and a nonce: HMAC-SHA256 over
// each field, length-prefixed (uvarint), in a fixed order.
func (p *NodeProof) mac(subject, reply string, h nats.Header, digest []byte, ms int64, nonce string) []byte {
	buf := make([]byte, 0, 512)
	field := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	field("hubd node proof v1")
	field(subject)
	field(reply)
	for _, name := range signedHeaders {
		vs := h[name] // NATS headers are case-sensitive: h.Values(name)
		field(name)
		buf = binary.AppendUvarint(buf, uint64(len(vs)))
		for _, v := range vs {
			field(v)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(digest)))
	buf = append(buf, digest...)
	buf = binary.AppendVarint(buf, ms)
	field(nonce)
	m, _ := p.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, p.key)
	}
	m.Reset()
	m.Write(buf)
	sum := m.Sum(nil)
	p.macs.Put(m)
	return sum
}

// digest is the SHA-256 of a body.
func digest(body []byte) []byte {
	d := sha256.Sum256(body)
	return d[:]
}

// sign sets the proof of a message to subject (answered on reply, "" for
// none) whose headers are h and whole body is body.
func (p *NodeProof) sign(subject, reply string, h nats.Header, body []byte) {
	if p == nil {
		return
	}
	var n [16]byte
	rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	ms := p.now().UnixMilli()
	mac := p.mac(subject, reply, h, digest(body), ms, nonce)
	h.Set(hdrProof, "v1 "+strconv.FormatInt(ms, 10)+" "+nonce+" "+base64.RawURLEncoding.EncodeToString(mac))
}

// check verifies the proof of a message as sign made it, and remembers
// its nonce; the error wraps ErrNoProof and says what is wrong.
func (p *NodeProof) check(subject, reply string, h nats.Header, body []byte) error {
	if p == nil {
		return nil
	}
	f := strings.Fields(h.Get(hdrProof))
	if len(f) == 0 {
		return fmt.Errorf("%w: no %s header", ErrNoProof, hdrProof)
	}
	ms, err := strconv.ParseInt(f[min(1, len(f)-1)], 10, 64)
	if len(f) != 4 || f[0] != "v1" || err != nil || len(f[2]) != 32 {
		return fmt.Errorf("%w: malformed %s header", ErrNoProof, hdrProof)
	}
	got, err := base64.RawURLEncoding.DecodeString(f[3])
	if err != nil || !hmac.Equal(got, p.mac(subject, reply, h, digest(body), ms, f[2])) {
		return fmt.Errorf("%w: the signature does not match (not signed with the cluster's credentials, or altered)", ErrNoProof)
	}
	now := p.now()
	at := time.UnixMilli(ms)
	if off := now.Sub(at).Abs(); off > p.window {
		return fmt.Errorf("%w: signed at %s, %v from this node's clock (window %v): are the nodes' clocks synchronised?",
			ErrNoProof, at.UTC().Format(time.RFC3339Nano), off.Round(time.Millisecond), p.window)
	}
	return p.remember(f[2], at.Add(p.window), now)
}

// remember records an accepted nonce until it expires, refusing one seen
// already; it forgets the nonces that expired.
func (p *NodeProof) remember(nonce string, expires, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) > 0 && now.After(p.queue[0].expires) {
		delete(p.seen, p.queue[0].nonce)
		p.queue[0] = seenNonce{}
		p.queue = p.queue[1:]
	}
	if _, dup := p.seen[nonce]; dup {
		return fmt.Errorf("%w: nonce %s seen before (a replay)", ErrNoProof, nonce)
	}
	p.seen[nonce] = expires
	p.queue = append(p.queue, seenNonce{nonce, expires})
	return nil
}
