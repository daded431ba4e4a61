// Command hubd is the hubd session hub and its tools: the hub itself
// (hubd, or hubd serve), clients of a running hub built on agentsdk that
// read (hubd sessions list|show|tail|export|tree|replay, hubd questions
// list: a table or words for people, and with --output json the one JSON
// form of hub.proto for programs, output.go) and act (hubd sessions
// open|send|close|fork, hubd questions answer, hubd tasks cancel), offline work
// on a data directory (hubd log verify|migrate|restore) and backups of a
// running hub (hubd log backup), workflow graph tools that need no hub
// (hubd graph validate|render|simulate), shell completion scripts (hubd
// completion bash|zsh|fish), a probe of a running hub for health checks
// (hubd health), and hubd version and hubd help. The commands
// and their one-line help are the table in help.go; hubd --help prints it,
// the completion scripts are built from it and each command's flags, and
// the README's list of commands is checked against it.
//
// Flags may come before or after the positional arguments (parseFlags
// parses again after each one). Every flag of serve and every client flag
// may also be set by an environment variable, HUBD_ and the flag's name
// (env.go); the command line wins. An error carries its exit code (package
// internal/exitcode): 2 for a mistake on the command line or in its input
// (found before a hub is dialed), 3 for a hub that cannot be reached
// (reported at once when the connection is refused, reach.go), 1
// otherwise (a call the hub refused, which prints its stable reason, or
// nothing to act on).
//
// main is tiny: everything happens in run(ctx, args, stdin, stdout, stderr),
// which the tests call directly; the end-to-end tests build the binary in
// TestMain and run it.
package main
