package hubhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubhttp"
	"github.com/hubd/hubd/internal/server"
)

// cookieOf returns the sign-in cookie an answer set, as a Cookie header
// would carry it, or "".
func cookieOf(r reply) string {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == hubhttp.SignInCookie && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	return ""
}

// TestDevSignIn: in development mode a browser on this machine is signed
// in as the development operator without a name or a token; whoami says
// it may be, and the cookie then stands for the operator.
func TestDevSignIn(t *testing.T) {
	srv := start(t, false)
	if w := do(t, srv, call{method: "GET", path: "/v1/auth/whoami"}).json(t); w["signed_in"] != false || w["dev"] != true || w["dev_operator"] != server.DevOperator {
		t.Errorf("whoami before: %v", w)
	}
	in := do(t, srv, call{method: "POST", path: "/v1/auth/dev"})
	if in.status != 200 {
		t.Fatalf("development sign-in: %d %s", in.status, in.body)
	}
	if w := in.json(t); w["signed_in"] != true || w["agent"] != server.DevOperator || w["operator"] != true {
		t.Errorf("development sign-in answered %v", w)
	}
	cookie := cookieOf(in)
	if cookie == "" {
		t.Fatalf("no sign-in cookie: %v", in.header.Values("Set-Cookie"))
	}
	with := map[string]string{"Cookie": cookie}
	if w := do(t, srv, call{method: "GET", path: "/v1/auth/whoami", header: with}).json(t); w["signed_in"] != true || w["agent"] != server.DevOperator || w["operator"] != true {
		t.Errorf("whoami with the cookie: %v", w)
	}
	// Viewing as another agent is that agent's sign-in by name, which
	// ends the operator's.
	bob := do(t, srv, call{method: "POST", path: "/v1/auth/signin", body: `{"agent":"bob"}`, header: with})
	if w := do(t, srv, call{method: "GET", path: "/v1/auth/whoami", header: map[string]string{"Cookie": cookieOf(bob)}}).json(t); w["agent"] != "bob" || w["operator"] != nil {
		t.Errorf("viewing as bob: %v", w)
	}
	if w := do(t, srv, call{method: "GET", path: "/v1/auth/whoami", header: with}).json(t); w["signed_in"] != false {
		t.Errorf("the operator's sign-in outlived the switch: %v", w)
	}
}

// TestDevSignInOperators: with --operators in development mode, the
// development sign-in is the first of them.
func TestDevSignInOperators(t *testing.T) {
	srv := start(t, false, func(c *server.Config) { c.Operators = []string{"root", "admin"} })
	in := do(t, srv, call{method: "POST", path: "/v1/auth/dev"})
	if w := in.json(t); in.status != 200 || w["agent"] != "root" || w["operator"] != true {
		t.Errorf("development sign-in: %d %v", in.status, w)
	}
}

// TestDevSignInNotWithTokens: with tokens there is no development
// sign-in, and whoami offers none.
func TestDevSignInNotWithTokens(t *testing.T) {
	srv := start(t, true)
	if w := do(t, srv, call{method: "GET", path: "/v1/auth/whoami"}).json(t); w["dev"] != false || w["dev_operator"] != nil {
		t.Errorf("whoami: %v", w)
	}
	in := do(t, srv, call{method: "POST", path: "/v1/auth/dev"})
	if in.status != http.StatusUnauthorized || in.reason(t) != "UNAUTHENTICATED" || cookieOf(in) != "" {
		t.Errorf("development sign-in with tokens: %d %s %v", in.status, in.body, in.header.Values("Set-Cookie"))
	}
}

// TestDevOnlyFromThisMachine: the development names and sign-ins count
// only for a request from a loopback address that no proxy forwarded:
// forwarding headers cannot make a request local, and a proxy on this
// machine does not make its callers local either.
func TestDevOnlyFromThisMachine(t *testing.T) {
	srv := start(t, false)
	svc := hubgrpc.New(srv.Hub(), srv.Feed(), hubgrpc.Config{Auth: hubgrpc.Authenticator{Dev: true, Operators: []string{"operator"}}})
	api, err := hubhttp.New(hubhttp.Config{Feed: srv.Feed(), Service: svc, Authenticate: svc.UnaryInterceptor,
		Interceptors: []grpc.UnaryServerInterceptor{svc.UnaryInterceptor}, Dev: true, DevOperator: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, path, body, from string, header map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = from
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		return rec
	}
	for _, tc := range []struct {
		name, from string
		header     map[string]string
		want       int
	}{
		{"loopback", "127.0.0.1:5555", nil, http.StatusOK},
		{"loopback v6", "[::1]:5555", nil, http.StatusOK},
		{"elsewhere", "192.0.2.7:5555", nil, http.StatusUnauthorized},
		{"elsewhere, claiming loopback", "192.0.2.7:5555", map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1", "Forwarded": "for=127.0.0.1"}, http.StatusUnauthorized},
		{"a proxy here, X-Forwarded-For", "127.0.0.1:5555", map[string]string{"X-Forwarded-For": "192.0.2.7"}, http.StatusUnauthorized},
		{"a proxy here, Forwarded", "127.0.0.1:5555", map[string]string{"Forwarded": "for=192.0.2.7;proto=https"}, http.StatusUnauthorized},
		{"a proxy here, X-Real-IP", "127.0.0.1:5555", map[string]string{"X-Real-IP": "192.0.2.7"}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := serve("POST", "/v1/auth/dev", "", tc.from, tc.header)
			if in.Code != tc.want || (tc.want == 200) != (in.Header().Get("Set-Cookie") != "") {
				t.Errorf("development sign-in: %d %s %v, want %d", in.Code, in.Body, in.Header(), tc.want)
			}
			who := serve("GET", "/v1/auth/whoami", "", tc.from, tc.header)
			if offered := strings.Contains(who.Body.String(), `"dev_operator":"operator"`); offered != (tc.want == 200) {
				t.Errorf("whoami %s offers the development sign-in: %v", who.Body, offered)
			}
			named := serve("POST", "/v1/auth/signin", `{"agent":"alice"}`, tc.from, tc.header)
			if named.Code != tc.want {
				t.Errorf("sign-in by name: %d %s, want %d", named.Code, named.Body, tc.want)
			}
			header := map[string]string{hubgrpc.AgentHeader: "alice"}
			for k, v := range tc.header {
				header[k] = v
			}
			if got := serve("GET", "/v1/sessions", "", tc.from, header); got.Code != tc.want {
				t.Errorf("the agent header: %d %s, want %d", got.Code, got.Body, tc.want)
			}
			if cookie := in.Header().Get("Set-Cookie"); cookie != "" {
				c, _, _ := strings.Cut(cookie, ";")
				if got := serve("GET", "/v1/sessions", "", tc.from, map[string]string{"Cookie": c}); got.Code != 200 {
					t.Errorf("the development cookie: %d %s", got.Code, got.Body)
				}
				fwd := serve("GET", "/v1/sessions", "", tc.from, map[string]string{"Cookie": c, "X-Forwarded-For": "192.0.2.7"})
				if fwd.Code != http.StatusUnauthorized {
					t.Errorf("the development cookie through a proxy: %d %s", fwd.Code, fwd.Body)
				}
			}
		})
	}
}
