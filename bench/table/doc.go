// Command table measures hubd against its throughput and latency targets
// (docs/PERFORMANCE.md) in one command: it runs hubload's workloads
// (package load) against a running hub, each between its floors measured
// in the same minute, and prints one table of ratios and verdicts.
//
//	go run ./bench/table [--hub 127.0.0.1:7420] [--hub-pid PID] [--hub-http ADDR]
//	        [--duration 10s] [--warmup 1s] [--payload 256] [--floor-dir DIR] [--floor-apart] [--json]
//
// bench/figures.sh table starts a fresh hubd and runs it against it.
//
// # The floors
//
// The floor (package bench/floor) is a bare gRPC server over loopback
// whose one unary method appends the request's envelope (a
// hubpb.SendRequest of --payload bytes) to a fresh wal.Log under
// --floor-dir (fsync on, group commit) and answers with its seq, with no
// session logic. As many clients as the run has requests in flight (the
// turns workload: its sessions; the sessions workload: its sessions in
// flight), on as many connections as the run uses (at most one per
// client), each send their next request when the last is acknowledged.
//
// The turn floor is the least a turn must do: each of the run's sessions
// is two seats, each on its own connection and its own stream, whose
// frames are those of hubd's agent stream; the server appends a seat's
// send to the log (group commit, synced), tells the other seat its turn
// and acknowledges the sender, all on the stream's goroutine, with no
// session logic; the told seat sends next. It runs beside the floor for
// the turns workload. Where the floor answers one client per request, a
// turn writes to two: hubd over the turn floor is what the hub's own work
// costs.
//
// Each floor runs twice around every run, each time for --warmup then a
// window of half --duration: just before the run and just after it (its
// warm-up begins with its first request acknowledged, so that setting up
// its clients is never measured). Its figures merge both windows, and its
// line gives each window's rate ("before the load N/s, after N/s": how
// far the machine drifted during the run): this machine's speed drifts,
// a ratio from one run does not, and a floor on both sides of the run
// weighs a drift on both sides of the ratio. Put --floor-dir on the hub's
// data disk.
//
// Each floor's line ends with what it cost: the mean fsync of its log and
// the CPU per request of its server and clients in its windows (the hub
// idle meanwhile). With --hub-pid the ratios add "CPU per request (hub +
// agents)", the CPU the hub and the agents spent per accepted envelope
// over the floor's; with --hub-http, "fsync mean", the hub's mean fsync
// (from its /metrics) over the floor's.
//
// --floor-apart serves the floors from a process of their own: the table
// runs its own executable again (with BENCH_FLOOR_SERVER naming the log's
// parent directory), which serves them (floor.Serve) and reports its
// log's totals and its CPU over a pipe, while the floors' clients stay in
// the table's process. The floors then run as hubd does, a server beside
// its clients, each process with its own Go scheduler on the same cores.
//
// # The table
//
// The runs are the turns workload at 3 agents in 1 session (send → next
// speaker told p50 against the floor's send → ack p50), at 32 in 16
// (throughput, and send → ack p99) and at 128 in 128 (throughput), and
// the sessions workload one at a time (Serve's handler → handler and a
// session's open → closed p50, against the floor's p50) and 50 at a time
// (turns a second against the floor's requests a second), each sessions
// run sized to last about --warmup plus --duration. The one-at-a-time
// runs go first, on a hub no heavier run has been through; the rows print
// in the order of the targets. Each run's report prints as it ends:
// hubload's report of the workload, each floor's line and the ratios to
// it. For the rows of the turns workload the column "hubd / turn floor"
// is hubd's figure over the turn floor's (what the hub's own work costs),
// and "no session logic" the turn floor's over the floor's: what a hub
// whose own work cost nothing would reach. The column "hubload flags" runs the workload alone
// (hubload FLAGS), without its floors. Idle agents are measured by hubload
// --idle, whose targets are not ratios.
//
// Exit status: 0 when every run measured something (met or missed), 1 when
// a run failed, 2 for a usage error.
package main
