package hubhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/session"
)

// oldCookies are the sign-in cookies of earlier versions, which held the
// bearer token (or development name) itself: sign-in and sign-out delete
// them from the browser.
var oldCookies = []string{"hubd_token", "hubd_agent"}

// credentials prepares a request for authentication: a sign-in cookie
// stands for the header its sign-in replaces, the X-Hubd-Agent header is dropped
// unless the request comes from this machine (see local), and the caller's
// address and verified client certificate go into the context as a gRPC
// peer, where hubgrpc's authentication looks for them.
func (a *API) credentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes)
		}
		loop := local(r)
		if !loop {
			r.Header.Del(hubgrpc.AgentHeader)
		}
		if r.Header.Get("Authorization") == "" && r.Header.Get(hubgrpc.AgentHeader) == "" {
			if in, ok := a.signIns.get(cookieValue(r)); ok && in.token != "" {
				r.Header.Set("Authorization", "Bearer "+in.token)
			} else if ok && in.agent != "" && loop && a.cfg.Dev {
				r.Header.Set(hubgrpc.AgentHeader, in.agent)
			}
		}
		p := &peer.Peer{Addr: remoteAddr(r)}
		if r.TLS != nil {
			p.AuthInfo = credentials.TLSInfo{State: *r.TLS, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
		}
		next.ServeHTTP(w, r.WithContext(peer.NewContext(r.Context(), p)))
	})
}

// remoteAddr is the request's remote address as a net.Addr.
func remoteAddr(r *http.Request) net.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return &net.TCPAddr{}
	}
	return net.TCPAddrFromAddrPort(ap)
}

// forwardingHeaders are the headers a proxy adds to a request it
// forwards, naming the client it forwards for.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"}

// local reports whether the request comes from this machine, where
// development mode lets callers name themselves: from a loopback address,
// and not forwarded by a proxy. The address is the connection's own,
// never a header's; a request carrying a proxy's forwarding header is not
// local even from a loopback address, since a proxy on this machine
// forwards for callers elsewhere.
func local(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return false
	}
	for _, h := range forwardingHeaders {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	return true
}

// identify authenticates a request with the gRPC service's own
// authentication, as the call method would be.
func (a *API) identify(r *http.Request, method string) (hubgrpc.Identity, error) {
	md := metadata.MD{}
	if v := r.Header.Values("Authorization"); len(v) > 0 {
		md.Set("authorization", v...)
	}
	if v := r.Header.Get(hubgrpc.AgentHeader); v != "" {
		md.Set(hubgrpc.AgentHeader, v)
	}
	ctx := metadata.NewIncomingContext(r.Context(), md)
	var id hubgrpc.Identity
	_, err := a.cfg.Authenticate(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
		id, _ = hubgrpc.FromContext(ctx)
		return nil, nil
	})
	return id, err
}

// Identify authenticates a request as the JSON API does (header, cookie,
// client certificate, or development name), for handlers mounted beside
// it such as the web view. The request must have passed through the API's
// handler (its credentials step).
func (a *API) Identify(r *http.Request) (hubgrpc.Identity, error) {
	return a.identify(r, "/hubd.http/Identify")
}

// whoami is the answer of sign-in and of GET /v1/auth/whoami.
type whoami struct {
	SignedIn bool   `json:"signed_in"`
	Agent    string `json:"agent,omitempty"`
	Operator bool   `json:"operator,omitempty"`
	Dev      bool   `json:"dev"` // development mode: sign in with a name
	// DevOperator is who POST /v1/auth/dev signs this request's browser in
	// as, when it may (development mode, from this machine).
	DevOperator string `json:"dev_operator,omitempty"`
}

// signInRequest is what POST /v1/auth/signin reads, as JSON or as a form.
type signInRequest struct {
	Token string `json:"token"`
	Agent string `json:"agent"`
	Next  string `json:"next"`
}

// signIn checks a token (or a development name), keeps it as a sign-in
// and sets the sign-in's id as a cookie. With a "next" local path it
// redirects there (303), for plain forms.
func (a *API) signIn(w http.ResponseWriter, r *http.Request) {
	in, err := readSignIn(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	probe := r.Clone(r.Context())
	probe.Header.Del("Authorization")
	probe.Header.Del(hubgrpc.AgentHeader)
	var keep signIn
	switch {
	case in.Token != "":
		probe.Header.Set("Authorization", "Bearer "+in.Token)
		keep.token = in.Token
	case in.Agent != "" && a.cfg.Dev && local(r):
		probe.Header.Set(hubgrpc.AgentHeader, in.Agent)
		keep.agent = in.Agent
	case in.Agent != "":
		a.fail(w, r, fmt.Errorf("signing in by name is for development mode on loopback; sign in with a token: %w", hubgrpc.ErrUnauthenticated))
		return
	default:
		a.fail(w, r, fmt.Errorf("sign in with {\"token\": \"...\"}: %w", session.ErrMalformed))
		return
	}
	id, err := a.identify(probe, "/hubd.http/SignIn")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.keep(w, r, keep)
	if next := in.Next; strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "//") && !strings.HasPrefix(next, "/\\") {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	writeJSON(w, a.who(r, id))
}

// keep keeps a sign-in in place of the browser's earlier one, if any, and
// sets its cookie.
func (a *API) keep(w http.ResponseWriter, r *http.Request, in signIn) {
	a.signIns.revoke(cookieValue(r))
	http.SetCookie(w, a.cookie(r, a.signIns.add(in)))
	a.dropOldCookies(w, r)
}

// readSignIn reads a sign-in request from a JSON body or a form.
func readSignIn(w http.ResponseWriter, r *http.Request) (signInRequest, error) {
	var in signInRequest
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" {
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			return in, fmt.Errorf("sign-in body: %v: %w", err, session.ErrMalformed)
		}
		return in, nil
	}
	if err := r.ParseForm(); err != nil {
		return in, fmt.Errorf("sign-in form: %v: %w", err, session.ErrMalformed)
	}
	in.Token, in.Agent, in.Next = r.PostForm.Get("token"), r.PostForm.Get("agent"), r.PostForm.Get("next")
	return in, nil
}

// signOut ends the request's sign-in (its cookie, wherever copied, is
// refused from now on) and deletes the cookie.
func (a *API) signOut(w http.ResponseWriter, r *http.Request) {
	a.signIns.revoke(cookieValue(r))
	http.SetCookie(w, a.cookie(r, ""))
	a.dropOldCookies(w, r)
	w.WriteHeader(http.StatusNoContent)
}

// whoAmI says who the request is from; a request without valid
// credentials is answered signed_in false (not an error), so a page can
// decide to show its sign-in form.
func (a *API) whoAmI(w http.ResponseWriter, r *http.Request) {
	id, err := a.identify(r, "/hubd.http/WhoAmI")
	if err != nil {
		id = hubgrpc.Identity{}
	}
	writeJSON(w, a.who(r, id))
}

// who is the whoami answer saying the request is from id (signed in unless
// id is the zero identity).
func (a *API) who(r *http.Request, id hubgrpc.Identity) whoami {
	out := whoami{SignedIn: id.Agent != "", Agent: id.Agent, Operator: id.Operator, Dev: a.cfg.Dev}
	if a.devSignInFor(r) {
		out.DevOperator = a.cfg.DevOperator
	}
	return out
}

// cookie returns the sign-in cookie carrying id, lasting as long as its
// sign-in; an empty id deletes it.
func (a *API) cookie(r *http.Request, id string) *http.Cookie {
	c := &http.Cookie{Name: SignInCookie, Value: id, Path: "/", HttpOnly: true, MaxAge: int(a.cfg.SignInTTL / time.Second),
		SameSite: http.SameSiteStrictMode, Secure: a.cfg.SecureCookies || r.TLS != nil}
	if id == "" {
		c.MaxAge = -1
	}
	return c
}

// dropOldCookies deletes the browser's sign-in cookies of earlier
// versions, if it has any.
func (a *API) dropOldCookies(w http.ResponseWriter, r *http.Request) {
	for _, name := range oldCookies {
		if _, err := r.Cookie(name); err == nil {
			http.SetCookie(w, &http.Cookie{Name: name, Path: "/", MaxAge: -1, HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: a.cfg.SecureCookies || r.TLS != nil})
		}
	}
}

// cookieValue returns the request's sign-in id, or "".
func cookieValue(r *http.Request) string {
	c, err := r.Cookie(SignInCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}
