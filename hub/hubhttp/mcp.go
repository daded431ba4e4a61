package hubhttp

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubmcp"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// mcpPath is where the hub serves MCP over streamable HTTP.
const mcpPath = "/mcp"

// mcpHandler serves the tools of package hubmcp at /mcp to the caller
// each request authenticates (a bearer token, or a development name from
// this machine): every tool call is that caller's call of the JSON API,
// its credentials forwarded. The endpoint is stateless: no MCP session
// is kept between requests, so it costs no memory per host, outlives a
// restart, and a session id names nobody.
func (a *API) mcpHandler(c hubsvc.HubClient) http.Handler {
	s := hubmcp.New(c, hubmcp.Options{Version: a.cfg.Version, Workflows: a.cfg.Workflows,
		Forward: []string{"authorization", strings.ToLower(hubgrpc.AgentHeader)}})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.identify(r, "/hubd.mcp/Serve"); err != nil {
			a.fail(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}
