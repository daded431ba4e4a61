// Package floor holds the floors hubd's speed is measured against, each a
// bare gRPC server over the project's own write-ahead log (package wal,
// group commit, fsync on) with no session logic at all. bench/table runs
// them in the same minute as a real load, at the same concurrency and
// with the same payload, and reports hubd's figures as ratios to them:
// this machine's absolute speed drifts several-fold between days, a ratio
// measured in one run does not.
//
// The floor (Drive) is a unary call over loopback: the server speaks a
// hand-registered method, /hubd.floor.Floor/Send, with hubpb.SendRequest
// and hubpb.SendResponse as its messages (so the bytes on the wire are
// those of a hub Send, encoded and decoded as hubd and agentsdk do:
// vtprotobuf's encoder, protobuf's decoder on the server, vtprotobuf's on
// the clients), appends the request's envelope to the log and answers
// with its seq. It stores each envelope as the hub would: its
// deterministic protobuf, one record per request, each client's requests
// a session of consecutive seqs.
//
// The turn floor (/hubd.floor.Floor/Turns, DriveTurns) is the least a
// turn must do: two seats of a session, each on its own connection and
// bidirectional stream of hubpb.AgentFrame and hubpb.HubFrame (the frames
// of hubd's agent stream), take turns; the server appends a seat's send
// to the log, then tells the other seat its turn and acknowledges the
// sender, on the stream's own goroutine.
//
// Serve runs the server in a process of its own, spoken to over its
// standard input and output (Apart starts one), so that the floors can
// run as hubd does: a server beside its clients.
package floor
