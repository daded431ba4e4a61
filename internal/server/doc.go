// Package server assembles a hub from its parts: the badger write-ahead
// log, the session types, the hub, the gRPC service. The binary and
// hub/hubtest (the in-process test hub) build their hubs here, so they run
// the same wiring. It also says what the hub does: sessions opened and
// closed and timers fired at info, every envelope and every refused send at
// debug, through the hub's hooks.
package server
