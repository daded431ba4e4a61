// Package hubhttp is hubd's HTTP side: the JSON API, a session's envelopes
// as server-sent events, sign-in for browsers, Prometheus metrics and pprof,
// on one address.
//
// # The JSON API
//
// The routes under /v1/ are transcoded from the gRPC service by
// grpc-gateway, from the rules in hubpb/hub_http.yaml (generated into
// package gateway), so the two never drift. The gateway
// runs in process: it calls the gRPC service through a connection that
// dispatches by method name to the service's own handlers with the same
// interceptors as the gRPC server (authentication, tracing, metrics), with
// no network hop and no encoding. Bodies and answers are the one JSON form
// (hubpb.MarshalJSON: protojson, proto field names, compact); a body must
// be sent as application/json (parameters allowed), anything else is
// refused 415 with the reason MALFORMED, so a page of another site cannot
// pass a plain-text or form body, which browsers send without asking,
// off as JSON. A refusal is
// a google.rpc.Status in that form, its details holding the
// google.rpc.ErrorInfo whose reason is the stable hubd reason, with the
// HTTP status grpc-gateway maps its code to (OUT_OF_TURN: 400,
// NOT_PARTICIPANT: 403, UNKNOWN_SESSION: 404, UNAUTHENTICATED: 401, ...).
//
//	POST /v1/sessions                          Open (body: OpenRequest)
//	POST /v1/sessions/{session_id}/envelopes   Send (body: the Envelope)
//	POST /v1/sessions/{session_id}:ack         AckInvite
//	POST /v1/sessions/{session_id}:reject      RejectInvite (body: {"reason": ...})
//	POST /v1/sessions/{session_id}:close       Close (body: {"reason": ...})
//	POST /v1/sessions/{session_id}:delegate    Delegate
//	POST /v1/sessions/{session_id}/answers     Answer
//	GET  /v1/sessions                          ListSessions (?state=OPEN&participant=...&page_size=...)
//	GET  /v1/sessions/{session_id}             GetSession
//	GET  /v1/sessions/{session_id}/log         ReadLog (?from_seq=&limit=)
//	GET  /v1/sessions/{session_id}/view        GetView (?name=&window=)
//	GET  /v1/sessions/{session_id}/tree        GetTree
//	GET  /v1/sessions/{session_id}/replay      Replay (operators)
//	GET  /v1/turns                             PendingTurns
//	GET  /v1/questions                         ListQuestions
//
// A body is read whole (at most Config.MaxBodyBytes: larger is 413,
// TOO_LARGE naming --max-request-bytes) and checked token by token before
// the gateway decodes it: nested deeper than MaxJSONDepth is MALFORMED,
// more keys and values than an envelope holds (Config.MaxEnvelopeBytes/2)
// TOO_LARGE naming --max-envelope-bytes. Every TOO_LARGE is answered with
// HTTP 413.
//
// # Events
//
// GET /v1/sessions/{session_id}/events streams the session's envelopes
// (all of them for an operator, those the caller may read for a
// participant) as text/event-stream, through feed.Feed.Watch: each is an event
// "envelope" whose id is its seq and whose data is its one JSON form. The
// stream starts at ?from=SEQ (default 1), or after the Last-Event-ID a
// reconnecting client sends, so a resumed stream has no gap and no
// duplicate. A comment line every Config.Heartbeat (15 s) keeps proxies
// from closing an idle stream. The stream ends with an event "end" whose
// data says why: {"reason":"session_ended","state":"CLOSED",
// "close_reason":"...","last_seq":N} once the session has ended (a
// reconnect after that is answered 204, which stops a browser's
// EventSource), or {"reason":"SLOW_SUBSCRIBER"|"DRAINING"|...,
// "message":"...","last_seq":N,"resume":true} when the hub cut the stream
// off: reconnect with Last-Event-ID to go on.
//
// With ?deltas=true the stream also carries the deltas of replies being
// written in the session (feed.WatchOptions.Deltas): events "delta" whose
// data is the Delta's JSON form and which have no id (a resume goes on
// after the last envelope; the final envelope holds a reply's whole
// text). They are best-effort: a reader behind loses deltas, never
// envelopes. POST /v1/sessions/{session_id}/deltas sends one (SendDelta).
//
// With ?tree=true the stream is the session's and its descendants' (a
// tree watch, as gRPC Watch with tree): every envelope of the root, and of
// each descendant its notices (question, answer, question_closed,
// delegation, delegation_result), or all of them with &verbose=true; each
// envelope's session_id and call say where it belongs. A tree stream's
// event id is its cursors: the root's last seq, then for every descendant
// it handed out an envelope of, "," SESSION ":" SEQ, in session id order
// ("7,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:3"). Sent back as
// Last-Event-ID it resumes every session after its cursor (and the
// descendants it never showed from their start), so no gap and no
// duplicate in any of them; ?from applies to the root. Its cursors of
// sessions outside the tree (or not the caller's to watch) are dropped;
// an id names at most 1,024 descendants, and a Last-Event-ID with more is
// MALFORMED. The stream ends
// when the root has ended and everything written with that end (its
// descendants closing) was streamed; its "end" event carries
// "last_event_id" too.
//
// # Authentication
//
// The same as gRPC, by the same code (hubgrpc's interceptor): a bearer
// token in the Authorization header, a client certificate (when the hub
// serves TLS with a client CA, certificates are asked for but not
// required, so browsers with tokens still connect), or in development mode
// the X-Hubd-Agent header, honoured only from this machine (below). Browsers
// sign in at POST /v1/auth/signin with {"token": "..."} (or, in
// development mode, {"agent": "name"}); the hub checks it and keeps it as
// a sign-in in its memory (Config.SignInTTL, 12 hours by default; at most
// Config.MaxSignIns), whose random id goes in an HTTP-only,
// SameSite=Strict cookie (Secure under TLS) that stands for the header on
// later requests. The cookie carries no token: POST /v1/auth/signout ends
// the sign-in, and every copy of the cookie is refused from then on, as
// it is once the sign-in expires. GET /v1/auth/whoami says who the caller
// is. In development mode a browser on this machine may sign in as the
// development operator (Config.DevOperator) with no name or token, at POST
// /v1/auth/dev: the web view does so by itself. "On this machine" is a
// loopback address with none of a proxy's forwarding headers (Forwarded,
// X-Forwarded-For, X-Forwarded-Host, X-Real-IP): a request a proxy
// forwarded gets no development name, whether by header, cookie or
// sign-in. Unsafe methods from another origin are refused
// (net/http's CrossOriginProtection), so the cookie cannot be ridden by
// another site.
//
// # Operations
//
// GET /metrics is the Prometheus exposition (Config.Metrics: counts, no
// ids), without authentication on a loopback address (Config.OpenMetrics)
// and for operators otherwise; MetricsHandler serves it alone on an
// address of its own. /debug/pprof/ is Go's profiler, for operators only.
// GET /healthz answers "ok" while the hub takes writes, and 503 with the
// reason while it does not (Config.Health: its disk below the reserve,
// its storage failed).
package hubhttp
