// Package server assembles a hub from its parts: the badger write-ahead
// log, the session types, the hub. The binary, the examples (in-process
// mode) and the end-to-end tests build their hubs here, so they run the
// same wiring.
package server
