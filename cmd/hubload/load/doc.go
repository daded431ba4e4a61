// Package load is hubload's engine: the workloads it drives a hub with
// (steady turns, sessions served by agentsdk.Serve, delegation), the idle
// mode, --verify and --check, the soak, and what they measure. Run is the
// whole command line (cmd/hubload's doc describes it); Parse, Turns and
// Sessions let another program, the laboratory in bench/, run the same
// workloads with the same instruments (Stats, Latency) and read their
// reports, to set them beside figures of its own.
package load
