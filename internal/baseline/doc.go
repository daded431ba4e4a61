// Package baseline is the floor hubd's speed is measured against: a bare
// gRPC unary call over loopback whose server appends the request's
// envelope to the project's own write-ahead log (package wal, group
// commit, fsync on) and answers with its seq, with no session logic at
// all. cmd/hubload runs it in the same process and the same minute as its
// real load, at the same concurrency and with the same payload, and
// reports hubd's figures as ratios to it: this machine's absolute speed
// drifts several-fold between days, a ratio measured in one run does not.
//
// The server speaks a hand-registered unary method, /hubd.baseline.Baseline/Send,
// with hubpb.SendRequest and hubpb.SendResponse as its messages (so the
// bytes on the wire are those of a hub Send, encoded and decoded as hubd
// and agentsdk do: vtprotobuf's encoder, protobuf's decoder on the server,
// vtprotobuf's on the clients), and stores each envelope as
// the hub would: its deterministic protobuf, one record per request, each
// client's requests a session of consecutive seqs.
//
// The turn floor (/hubd.baseline.Baseline/Turns, DriveTurns) is the least
// a turn must do: two seats of a session, each on its own connection and
// bidirectional stream of hubpb.AgentFrame and hubpb.HubFrame (the frames
// of hubd's agent stream), take turns; the server appends a seat's send
// to the log, then tells the other seat its turn and acknowledges the
// sender, on the stream's own goroutine.
package baseline
