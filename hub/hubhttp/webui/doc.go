// Package webui is hubd's live web view: a page served at / on the HTTP
// address that lists sessions and shows one as it plays out. Its assets
// (index.html, app.js, envelopes.js, ops.js, style.css: plain HTML,
// vanilla JavaScript and CSS, no build step, no CDN) are embedded in the
// binary. On a session page every timeline item offers "fork from here"
// (POST /v1/sessions/{id}:fork at its seq, then the fork's page), and an
// operator (as /v1/auth/whoami says) gets the operator actions (POST
// /v1/sessions/{id}:steer, each with a reason; a refusal is shown as the
// hub answered it).
// In development mode the page signs in as the development operator by
// itself and offers to view as another agent (package hubhttp's POST
// /v1/auth/dev and sign-in by name).
//
// The page uses the JSON API and the event streams of package hubhttp
// from the browser (fetch and EventSource; the sign-in cookie stands for
// the credentials), and three routes of its own, authenticated the same way,
// for what the gRPC service does not answer:
//
//	GET /ui/sessions/{id}/graph.svg   the workflow graph, server-rendered, with
//	                                  the expected speakers and the transition
//	                                  that decided the last turn highlighted
//	GET /ui/sessions/{id}/deadlines   the pending timers, earliest first (JSON)
//	GET /ui/sessions/{id}/views?as=NAME&name=VIEW
//	                                  a participant's view (JSON, the one form
//	                                  of hubpb.View): a participant its own,
//	                                  an operator anyone's
//
// The SVG marks its nodes and edges for scripts and tests: a node is
// <g class="node" data-node="NAME">, with class "current" for an expected
// speaker; an edge is <g class="edge" data-edge="transitions[N]"> (or
// "default_target"), with class "fired" for the one named by the session's
// last rule, and its label as its <text>. The layout (layout.go) ranks the
// nodes from the initial speaker into lines and packs the edge labels in
// rows between them, so no two labels, and no label and node, overlap,
// whatever the number of nodes; the drawing is 640 wide and grows down.
package webui
