// Package metrics holds hubd's Prometheus metrics, in a registry of their
// own, fed by the hub's hooks (Hooks), the edges' interceptors
// (UnaryInterceptor, StreamInterceptor, Stream), the log adapter
// (Appended) and, at each scrape, the hub and the log's running totals.
// Labels are bounded: session types, stable reasons, states, timer
// actions, stream kinds, methods and status codes, never a session id or
// an agent name. docs/OPERATIONS.md lists the metrics and what to watch.
package metrics
