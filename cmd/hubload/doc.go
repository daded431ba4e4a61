// Command hubload is the load generator of hubd. It drives a running hub on
// a loopback address (development mode: each agent names itself in the
// "x-hubd-agent" metadata) with workflow@1 round-robin sessions whose agents
// take their turns as fast as the hub lets them, and reports throughput and
// latency. It refuses any hub address that is not loopback. It is an
// ordinary agentsdk client: what it measures is what an agent built on the
// SDK gets.
//
// # Usage
//
//	hubload [--hub 127.0.0.1:7420] [--agents 16] [--sessions agents/2] [--payload 256]
//	        [--duration 10s] [--warmup 1s] [--max-turns N] [--conns N]
//	        [--verify FILE] [--json] [--hub-pid PID] [--cpuprofile FILE]
//	        [--transport stream|unary] [--terse=false] [--hub-http ADDR]
//	hubload --workload sessions [--conc 1] [--sessions 200] [--payload 256] [--warmup 1s] [--terse=false]
//	        [--hub-pid PID] [--hub-http ADDR] [--json]
//	hubload --check FILE [--hub ADDR] [--operator operator] [--json]
//	hubload --idle N [--duration D] [--conns N] [--hub-pid PID] [--hub-http ADDR]
//	hubload --workload delegation [--sessions 1] [--duration 10s] [--warmup 1s] [--json]
//	hubload --soak --hubd BINARY [--sessions N] [--duration D] [--rounds N] [--measure-ended N]
//	hubload --version
//
// hubload measures the hub alone. Setting its figures beside floors
// measured in the same minute (a bare gRPC server over the same log, with
// no session logic) is the laboratory's work: bench/table in the
// repository runs hubload's workloads (package load) between its floors
// and prints the ratios docs/PERFORMANCE.md publishes.
//
// Against a cluster of hubd nodes (docs/SCALING.md), give every node:
// --hub h1:7420,h2:7420,h3:7420. Connection i goes to node i mod N, which
// runs its calls and streams where their sessions are served, and moves
// to another node when its own stops answering (agentsdk.Options.Peers).
// --verify and --check work across the nodes.
//
// Each agent has its own gRPC connection (an agentsdk.Client), as
// separate agent processes would; --conns N makes all agents share N
// connections instead (each call names its agent), which costs the client
// and the hub far fewer system calls per envelope. Every mode waits up to
// 10s for the hub to accept connections, then fails (exit 1).
//
// # Load
//
// Every agent opens one stream (see Transport). Agents are spread over the
// sessions, each with at least two participants: with agents >= 2*sessions,
// agent i joins session i mod sessions; otherwise session j has agents 2j
// and 2j+1 (mod agents), so an agent may be in several sessions. Each
// session is opened by its first participant with every participant
// auto_accept and the graph
//
//	{"version":1,"initial_speaker":FIRST,"transitions":[{"when":{"name":"always","args":{}},
//	 "then":{"name":"round_robin","args":{}},"priority":0}],
//	 "default_target":{"name":"terminate","args":{"reason":"after_work"}},"max_turns":N (2^30 without --max-turns)}
//
// When a Delivery with your_turn=true arrives, the agent sends a "text"
// envelope of --payload bytes with a fresh client_msg_id, and nothing else:
// in steady state no send is rejected. Agent names are "hl-RUN-aI" with a
// random RUN, so runs never see each other's sessions. After --warmup the
// measurement window opens for --duration (at most 10m); then no new send
// starts, sends in flight finish, each session is closed by its creator and
// the report is printed:
//
//   - accepted: acknowledged sends begun in the window, per second of it;
//   - send→ack: from just before Send to its SendResponse, for sends begun
//     in the window;
//   - send→next told: from just before Send to the moment the next speaker
//     receives the your_turn Delivery whose envelope is that send (matched
//     by session id and seq);
//   - rejected: failed Sends and broken Subscribe streams ("stream/"
//     REASON) of the whole run (warm-up and drain included), by
//     google.rpc.ErrorInfo reason, or by gRPC code when there is none
//     (UNAVAILABLE while the hub is down);
//   - CPU: the cores used in the window by hubload, by the hub (with
//     --hub-pid, from /proc/PID/stat) and by everything else on the
//     machine (from /proc/stat: other processes, and kernel work not
//     charged to either), and the microseconds of CPU per accepted
//     envelope. On a shared machine, "other processes" says how much the
//     numbers were disturbed;
//   - hub log (with --hub-http, the hub's HTTP address, from its
//     /metrics): the commits its write-ahead log made in the window, the
//     appends each held (group commit), and the mean fsync of its journal
//     (hubd_wal_sync_seconds_total / hubd_wal_syncs_total).
//
// Percentiles come from a log-bucketed histogram accurate to 0.8%. --json
// prints the report as one JSON object instead. A failed send whose code
// is UNAVAILABLE (or whose reason is DRAINING or SESSION_FAILED) is retried
// with the same client_msg_id until it is acknowledged or the run ends; a
// broken Subscribe stream is reopened with cursors. So a run survives a
// hub restart, and a retry answered as a duplicate counts as acknowledged
// (its latency counts from its last attempt).
//
// # Delegation
//
// --workload delegation measures a delegation round trip beside a turn,
// in the same sessions and the same window. Each of --sessions workflow
// sessions has a delegator and a peer taking turns in round robin, every
// agent served by agentsdk.Serve as an application would be (the default
// view on each turn). On each of its turns the delegator calls
// Turn.Delegate with a child workflow whose one worker, also served,
// finishes at once, and answers with the result; the peer answers at once.
// The report gives two latencies and the ratio of their medians:
//
//   - turn, handler to handler: from one handler's return to the next
//     speaker's handler being called;
//   - delegation round trip: Turn.Delegate from call to return (the
//     child's open and the delegation, one write; the worker's turn; the
//     child's close and its result in the parent, one write; the result
//     read by the delegator).
//
// When the window ends each delegator finishes its session on its next
// turn.
//
// # Transport
//
// --transport stream (the default, what agentsdk uses) has each agent send
// and be told over its own agent stream (agentsdk.Client.Connect: one
// bidirectional stream for its sends, their acks and its deliveries; the
// sessions workload's Serve reads its own); --transport unary has every
// send be a Send call and each agent read a Subscribe stream, as before
// the stream existed and as clients of other languages do. The report
// names the transport.
//
// Agents subscribe terse (agentsdk.SubscribeOptions.Terse; in the sessions
// workload, Serve without an observer): their streams carry their turns
// and the ends of their sessions, not every envelope addressed to them, as
// an agent that acts only on its turns would subscribe. --terse=false
// subscribes them to everything (the sessions workload's Serve with an
// observer), to measure what the other deliveries cost.
//
// # The sessions workload
//
// --workload sessions runs three agents, each an agentsdk.Client serving
// its turns with agentsdk.Serve as an application would (the default
// view fetched on every turn, a reply of --payload bytes). --conc openers
// each open a session as the first agent (the three auto-accepting, a
// round-robin graph with max_turns 3, so the hub closes the session after
// the third turn), wait until the first agent's stream delivers its
// session_closed, and open the next, until --sessions sessions have run.
// Sessions whose Open begins after --warmup are measured: sessions and
// turns per second over the window (which ends at the last close),
// open→closed (from before Open to the session_closed delivery) and
// handler→handler (from a handler's return to the next agent's handler
// starting in the same session) latencies. --duration is not used: the
// run lasts as long as its sessions take.
//
// # The --verify / --check contract
//
// hubload --verify FILE appends one line to FILE for every Send the hub
// acknowledged, written after the SendResponse was received and never
// before; no line is written for a send that failed or whose outcome is
// unknown. Lines are
//
//	SESSION_ID SEQ CLIENT_MSG_ID\n
//
// (the session's UUID, the acknowledged seq in decimal, the client_msg_id
// sent; single spaces, no other text). They are written in small batches
// (one write(2) per batch, a few milliseconds after the acknowledgement at
// most), so if hubload itself is killed, FILE holds every acknowledgement
// but those of the last few milliseconds, and only whole lines except
// possibly the last one. FILE is created if missing and appended to, never
// truncated: several runs may share one file. It runs until --duration ends
// or it is killed (SIGINT/SIGTERM end it like --duration does).
//
// hubload --check FILE, run against the hub restarted on the same data
// directory (typically after kill -9), reads FILE (ignoring a final line
// without a newline), waits up to 10s for the hub to accept connections,
// then, as the operator agent (--operator, default
// "operator", which has operator rights in development mode), reads the
// whole log of each session named in FILE with ReadLog, and checks:
//
//   - every line's seq is in its session's log with the same client_msg_id;
//   - each of these sessions' seqs is dense from 1 (no gap);
//   - nothing follows the envelope that ended a session (session_closed
//     or session_expired): a closed session never reopens.
//
// Its first line on stdout is exactly "acked N, found M" (N: lines of
// FILE, M: lines whose seq and client_msg_id were found). If M < N it
// then prints each missing line (the first 100) as "missing SESSION_ID SEQ
// CLIENT_MSG_ID (why)" and exits 1; a gap prints "gap SESSION_ID: seq A
// follows seq B", an envelope after the end "reopened SESSION_ID: seq A
// follows the session's end at seq B", and both exit 1. Exit 0 means every
// acknowledged send survived; an empty FILE gives "acked 0, found 0" and exit 0, so a test
// should also require N > 0. A missing or malformed FILE exits 2, a hub
// error (unreachable, ReadLog refused) exits 1, both with a message on
// stderr and nothing on stdout. With --json the result is one object:
// {"acked":N,"found":M,"missing":[...],"gaps":[...],"reopened":[...],"partial_last_line":bool}.
//
// A kill -9 test therefore runs: hubd serve --data DIR; hubload --verify
// FILE --duration D in the background; kill -9 hubd at any moment; then
// either restart hubd on DIR while hubload runs (it retries and goes on)
// or let hubload end (or kill it too); restart hubd on DIR if needed; and
// hubload --check FILE must print "acked N, found N" with N > 0 and exit
// 0. A --verify run whose hub is down at its end cannot close its sessions:
// it says so on stderr and still exits 0 when sends were acknowledged in
// the window.
//
// # Idle
//
// hubload --idle N opens N subscribed agent streams (with --transport
// unary: Subscribe streams) of distinct agents (by default
// each on its own connection), prints "idle: N subscriptions open" and
// keeps them open and idle until --duration ends or it is interrupted. With
// --hub-pid it also prints the hub process's VmRSS and thread count (from
// /proc) before and after opening them, and in load mode at start and end.
// With --hub-http ADDR (the hub's HTTP address) it also prints, from the
// hub's /metrics after a GC it forces through /debug/pprof (as --operator,
// so in development mode), the hub's goroutines before and after and its
// heap and stacks in use per subscription.
//
// # Exit status
//
// 0: success (load: at least one send acknowledged in the window); 1: the
// hub failed, nothing was acknowledged, or --check found a loss or a gap;
// 2: a usage error (bad flag, non-loopback --hub, unreadable --check file).
//
// main is tiny: everything happens in load.Run(ctx, args, stdout, stderr)
// (package load, hubload's engine), which the tests call directly.
package main
