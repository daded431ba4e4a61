package hubhttp

import (
	"fmt"
	"net/http"

	"github.com/hubd/hubd/hub/hubgrpc"
)

// devSignInFor reports whether r may use the development sign-in: the hub
// is in development mode with a development operator, and r comes from
// this machine (see local).
func (a *API) devSignInFor(r *http.Request) bool {
	return a.cfg.Dev && a.cfg.DevOperator != "" && local(r)
}

// devSignIn signs the browser in as the development operator, with no
// name or token to give: what the web view does by itself in development
// mode, as a development server's page opens signed in. Anything else is
// refused as a sign-in by name would be.
func (a *API) devSignIn(w http.ResponseWriter, r *http.Request) {
	if !a.devSignInFor(r) {
		a.fail(w, r, fmt.Errorf("the development sign-in is for development mode, from this machine and not through a proxy; sign in with a token: %w", hubgrpc.ErrUnauthenticated))
		return
	}
	probe := r.Clone(r.Context())
	probe.Header.Del("Authorization")
	probe.Header.Set(hubgrpc.AgentHeader, a.cfg.DevOperator)
	id, err := a.identify(probe, "/hubd.http/SignIn")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.keep(w, r, signIn{agent: a.cfg.DevOperator})
	writeJSON(w, a.who(r, id))
}
