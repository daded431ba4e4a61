package hubhttp_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/hub/hubhttp"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/internal/server"
)

// signInCookie signs alice in and returns the cookies sign-in set, as a
// Cookie header would carry them. None may carry her token.
func signInCookie(t *testing.T, srv *server.Server) string {
	t.Helper()
	in := do(t, srv, call{method: "POST", path: "/v1/auth/signin", body: fmt.Sprintf(`{"token":%q}`, testToken)})
	if in.status != 200 {
		t.Fatalf("sign-in: %d %s", in.status, in.body)
	}
	var jar []string
	for _, c := range (&http.Response{Header: in.header}).Cookies() {
		if c.Value == "" {
			continue
		}
		for _, secret := range []string{testToken, base64.RawURLEncoding.EncodeToString([]byte(testToken))} {
			if strings.Contains(c.Value, secret) {
				t.Errorf("the sign-in cookie %s=%q carries the token", c.Name, c.Value)
			}
		}
		jar = append(jar, c.Name+"="+c.Value)
	}
	if len(jar) == 0 {
		t.Fatalf("sign-in set no cookie: %v", in.header.Values("Set-Cookie"))
	}
	return strings.Join(jar, "; ")
}

// TestSignOutRevokes: after sign-out the cookie's old value is refused,
// wherever it was copied to.
func TestSignOutRevokes(t *testing.T) {
	srv := start(t, true)
	cookie := signInCookie(t, srv)
	with := map[string]string{"Cookie": cookie}
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: with}); r.status != 200 {
		t.Fatalf("listing with the cookie: %d %s", r.status, r.body)
	}
	other := signInCookie(t, srv) // another browser of alice's stays signed in
	if out := do(t, srv, call{method: "POST", path: "/v1/auth/signout", header: with}); out.status != http.StatusNoContent {
		t.Fatalf("sign-out: %d %s", out.status, out.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: with}); r.status != http.StatusUnauthorized || r.reason(t) != "UNAUTHENTICATED" {
		t.Errorf("the signed-out cookie listed sessions: %d %s", r.status, r.body)
	}
	if w := do(t, srv, call{method: "GET", path: "/v1/auth/whoami", header: with}).json(t); w["signed_in"] != false {
		t.Errorf("whoami with the signed-out cookie: %v", w)
	}
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: map[string]string{"Cookie": other}}); r.status != 200 {
		t.Errorf("the other sign-in: %d %s", r.status, r.body)
	}
	made := do(t, srv, call{method: "GET", path: "/v1/sessions", header: map[string]string{"Cookie": "hubd_signin=made-up-id"}})
	if made.status != http.StatusUnauthorized {
		t.Errorf("a made-up sign-in id: %d %s", made.status, made.body)
	}
}

// TestSignInExpires: a sign-in lasts Config.SignInTTL (the cookie says
// so too); past it, its cookie is refused.
func TestSignInExpires(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := start(t, true, func(c *server.Config) { c.Hub.Clock = clock })
	in := do(t, srv, call{method: "POST", path: "/v1/auth/signin", body: fmt.Sprintf(`{"token":%q}`, testToken)})
	set := strings.Join(in.header.Values("Set-Cookie"), "\n")
	if want := fmt.Sprintf("Max-Age=%d", int(hubhttp.DefaultSignInTTL.Seconds())); !strings.Contains(set, want) {
		t.Errorf("the cookie %q does not say it lasts %v (%s)", set, hubhttp.DefaultSignInTTL, want)
	}
	cookie := signInCookie(t, srv)
	with := map[string]string{"Cookie": cookie}
	clock.Advance(hubhttp.DefaultSignInTTL - time.Second)
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: with}); r.status != 200 {
		t.Fatalf("a second before it expires: %d %s", r.status, r.body)
	}
	clock.Advance(2 * time.Second)
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: with}); r.status != http.StatusUnauthorized {
		t.Errorf("an expired sign-in listed sessions: %d %s", r.status, r.body)
	}
}
