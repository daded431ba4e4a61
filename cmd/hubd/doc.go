// Command hubd is the hubd session hub and its tools: the hub itself
// (hubd, or hubd serve), clients of a running hub built on agentsdk (hubd
// sessions list|show|tail|export, printing the one JSON form of hub.proto),
// offline work on a data directory (hubd log verify|migrate), workflow
// graph tools that need no hub (hubd graph validate|render|simulate), and
// a probe of a running hub for health checks (hubd health), hubd version
// and hubd help. The commands and their one-line help are
// the table in help.go; hubd --help prints it, and the README's list of
// commands is checked against it.
//
// Flags may come before or after the positional arguments (parseFlags
// parses again after each one). An error carries its exit code (package
// internal/exitcode): 2 for a mistake on the command line, 3 for a hub
// that cannot be reached, 1 otherwise (a call the hub refused, which
// prints its stable reason, or nothing to act on).
//
// main is tiny: everything happens in run(ctx, args, stdin, stdout, stderr),
// which the tests call directly; the end-to-end tests build the binary in
// TestMain and run it.
package main
