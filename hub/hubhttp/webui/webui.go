package webui

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

//go:embed assets
var assets embed.FS

// Auth authenticates the web view's own routes as the JSON API does, and
// answers their refusals in its error form (*hubhttp.API).
type Auth interface {
	// Identify says who a request is from.
	Identify(r *http.Request) (hubgrpc.Identity, error)
	// Fail answers a refused request.
	Fail(w http.ResponseWriter, r *http.Request, err error)
}

// Config configures the web view; both fields are required.
type Config struct {
	// Feed answers the graph, deadlines and views routes.
	Feed *feed.Feed
	// Auth authenticates them.
	Auth Auth
}

// UI is the web view, an http.Handler for / on the HTTP address.
type UI struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the web view.
func New(cfg Config) (*UI, error) {
	if cfg.Feed == nil || cfg.Auth == nil {
		return nil, fmt.Errorf("webui: Config.Feed and Config.Auth are required")
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	u := &UI{cfg: cfg, mux: http.NewServeMux()}
	files := http.FileServerFS(static)
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/"
		files.ServeHTTP(w, r2)
	}
	u.mux.HandleFunc("GET /{$}", page)
	u.mux.HandleFunc("GET /ui/{file}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + r.PathValue("file")
		if r2.URL.Path == "/index.html" {
			r2.URL.Path = "/" // FileServer redirects index.html to its directory
		}
		files.ServeHTTP(w, r2)
	})
	u.mux.HandleFunc("GET /ui/sessions/{id}/graph.svg", u.graph)
	u.mux.HandleFunc("GET /ui/sessions/{id}/deadlines", u.deadlines)
	u.mux.HandleFunc("GET /ui/sessions/{id}/views", u.views)
	return u, nil
}

// ServeHTTP implements http.Handler.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.mux.ServeHTTP(w, r) }

// caller authenticates r and reads its session id.
func (u *UI) caller(w http.ResponseWriter, r *http.Request) (hubgrpc.Identity, session.ID, bool) {
	id, err := u.cfg.Auth.Identify(r)
	if err != nil {
		u.cfg.Auth.Fail(w, r, err)
		return id, session.ID{}, false
	}
	sid, err := session.ParseID(r.PathValue("id"))
	if err != nil {
		u.cfg.Auth.Fail(w, r, fmt.Errorf("session id: %v: %w", err, session.ErrMalformed))
		return id, sid, false
	}
	return id, sid, true
}

// graph answers the session's graph as SVG.
func (u *UI) graph(w http.ResponseWriter, r *http.Request) {
	id, sid, ok := u.caller(w, r)
	if !ok {
		return
	}
	info, err := u.cfg.Feed.Get(r.Context(), id.Agent, id.Operator, sid)
	if err != nil {
		u.cfg.Auth.Fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(RenderGraph(info))
}

// deadlines answers the session's pending timers.
func (u *UI) deadlines(w http.ResponseWriter, r *http.Request) {
	id, sid, ok := u.caller(w, r)
	if !ok {
		return
	}
	ds, err := u.cfg.Feed.Deadlines(r.Context(), id.Agent, id.Operator, sid)
	if err != nil {
		u.cfg.Auth.Fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(struct {
		Deadlines []feed.Deadline `json:"deadlines"`
	}{ds})
}

// views answers a participant's view: ?as=NAME (default the caller; only
// an operator may name another) and ?name=VIEW (default the type's).
func (u *UI) views(w http.ResponseWriter, r *http.Request) {
	id, sid, ok := u.caller(w, r)
	if !ok {
		return
	}
	as := r.URL.Query().Get("as")
	if as == "" {
		as = id.Agent
	}
	if as != id.Agent && !id.Operator {
		u.cfg.Auth.Fail(w, r, fmt.Errorf("%q may see its own view only; other participants' views are for operators: %w", id.Agent, hub.ErrPermissionDenied))
		return
	}
	v, err := u.cfg.Feed.View(r.Context(), as, sid, feed.ViewOptions{Name: r.URL.Query().Get("name")})
	if err != nil {
		u.cfg.Auth.Fail(w, r, err)
		return
	}
	data, err := hubpb.MarshalJSON(v)
	if err != nil {
		u.cfg.Auth.Fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}
