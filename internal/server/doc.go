// Package server assembles a hub from its parts: the badger write-ahead
// log, the session types, the hub, the gRPC service and, on a second
// address, the HTTP side (hub/hubhttp: the JSON API through the same
// service and interceptors, event streams, sign-in, /metrics, pprof). The
// binary and hub/hubtest (the in-process test hub) build their hubs here,
// so they run the same wiring. Every unary call, gRPC or JSON, runs
// metrics, then authentication, then tracing (hubgrpc.TraceInterceptor);
// the metrics (internal/metrics) are fed by the hub's hooks, the log's
// appends and its running totals. It also says what the hub does: sessions
// opened and closed and timers fired at info, every envelope and every
// refused send at debug, through the hub's hooks.
package server
