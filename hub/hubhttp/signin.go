package hubhttp

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// SignInCookie is the cookie of a signed-in browser. It carries only the
// id of a sign-in the hub keeps (32 random bytes); the token it stands
// for stays on the server, so signing out, or the sign-in's expiry,
// makes every copy of the cookie worthless.
const SignInCookie = "hubd_signin"

// The sign-ins kept by default: each lasts DefaultSignInTTL, and at most
// DefaultMaxSignIns are kept at once (past it, a new sign-in ends the
// oldest).
const (
	DefaultSignInTTL  = 12 * time.Hour
	DefaultMaxSignIns = 10000
)

// signIn is what a sign-in stands for: a bearer token, or a
// development-mode name.
type signIn struct {
	token   string
	agent   string
	expires time.Time
}

// signIns is the table of sign-ins, by the SHA-256 of their ids (so the
// table holds no cookie's value).
type signIns struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]signIn
	max  int
	ttl  time.Duration
	now  func() time.Time
}

func newSignIns(max int, ttl time.Duration, now func() time.Time) *signIns {
	return &signIns{byID: map[[sha256.Size]byte]signIn{}, max: max, ttl: ttl, now: now}
}

// add keeps a sign-in and returns its id; a full table first drops the
// expired sign-ins, then the one that expires first.
func (s *signIns) add(in signIn) string {
	var raw [32]byte
	rand.Read(raw[:]) // crypto/rand never fails on the platforms Go supports
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	now := s.now()
	in.expires = now.Add(s.ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= s.max {
		s.sweep(now)
	}
	for len(s.byID) >= s.max {
		delete(s.byID, s.first())
	}
	s.byID[sha256.Sum256([]byte(id))] = in
	return id
}

// sweep drops the expired sign-ins (mu held).
func (s *signIns) sweep(now time.Time) {
	for k, in := range s.byID { //hubd:orderless each is judged alone
		if !now.Before(in.expires) {
			delete(s.byID, k)
		}
	}
}

// first returns the key of the sign-in that expires first (mu held).
func (s *signIns) first() [sha256.Size]byte {
	var key [sha256.Size]byte
	var at time.Time
	for k, in := range s.byID { //hubd:orderless the earliest; ties end either
		if at.IsZero() || in.expires.Before(at) {
			key, at = k, in.expires
		}
	}
	return key
}

// get returns the live sign-in of id.
func (s *signIns) get(id string) (signIn, bool) {
	if id == "" {
		return signIn{}, false
	}
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.byID[key]
	if ok && !s.now().Before(in.expires) {
		delete(s.byID, key)
		return signIn{}, false
	}
	return in, ok
}

// revoke ends the sign-in of id.
func (s *signIns) revoke(id string) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.byID, key)
	s.mu.Unlock()
}

// len returns how many sign-ins are kept.
func (s *signIns) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}
