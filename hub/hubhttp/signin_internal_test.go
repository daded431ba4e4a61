package hubhttp

import (
	"testing"
	"time"
)

// TestSignInsBounded: the table keeps at most its bound; a new sign-in
// first drops the expired ones, then the one that expires first.
func TestSignInsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSignIns(3, time.Hour, func() time.Time { return now })
	a := s.add(signIn{token: "a"})
	now = now.Add(time.Minute)
	b := s.add(signIn{token: "b"})
	now = now.Add(time.Minute)
	c := s.add(signIn{token: "c"})
	now = now.Add(time.Minute)
	d := s.add(signIn{token: "d"}) // full: a, the first to expire, goes
	if _, ok := s.get(a); ok || s.len() != 3 {
		t.Fatalf("after a fourth sign-in of three: a kept %v, %d kept", ok, s.len())
	}
	for _, id := range []string{b, c, d} {
		if _, ok := s.get(id); !ok {
			t.Fatalf("sign-in %s dropped", id)
		}
	}
	now = now.Add(time.Hour - time.Minute) // b and c expired, d not
	e := s.add(signIn{agent: "e"})
	if s.len() != 2 {
		t.Fatalf("%d kept, want 2 (the expired b and c dropped; d and e)", s.len())
	}
	if in, ok := s.get(e); !ok || in.agent != "e" {
		t.Fatalf("e: %v %v", in, ok)
	}
	if _, ok := s.get(b); ok {
		t.Errorf("expired b is still served")
	}
	if len(a) != 43 || a == b {
		t.Errorf("ids %q, %q: want 32 random bytes in base64url", a, b)
	}
	s.revoke(d)
	if _, ok := s.get(d); ok {
		t.Errorf("revoked d is still served")
	}
}
