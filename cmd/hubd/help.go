package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hubd/hubd/internal/exitcode"
)

// command is one line of the help: a command, its arguments and what it
// does. Every command's --help starts from its line.
type command struct {
	name    string // "sessions show"
	args    string // "ID"
	summary string
}

// commands lists every command in the order the help shows them. It is
// never changed.
var commands = []command{
	{"[serve]", "[flags]", "run the hub until interrupted (its flags: hubd serve --help)"},
	{"sessions list", "[--state S] [--participant P] [--creator C] [--label k=v]", "the sessions you may read, one per line, with their age"},
	{"sessions show", "ID", "a session in words: participants, state, expected speaker, holds, context, usage"},
	{"sessions tail", "ID [--from N]", "a session's timeline, one event per line, live, until it ends"},
	{"sessions export", "[ID ...]", "every envelope as JSON lines (default: of every session you may read)"},
	{"sessions tree", "ID", "a session's call tree: state, reason, turns, usage, duration per session"},
	{"sessions replay", "ID", "re-fold a session from its log, no agent called; exit 1 if not the live state"},
	{"sessions open", "[--type T] [--participants a,b] [--graph FILE] [--label k=v] [--knob k=v] [--expect E]",
		"open a session as its creator and print its id (every setting: hubd sessions open --help)"},
	{"sessions send", "ID [TEXT] [--packet]", "take a turn: TEXT, or stdin, as a text; with --packet a packet as JSON"},
	{"sessions close", "ID [--reason R]", "close a session (its creator, or an operator)"},
	{"sessions fork", "ID --at SEQ [--set k=v] [--delete k] [--next AGENT] [--label k=v]",
		"open a new session continuing ID from its seq SEQ, with context edits and a chosen next speaker; print its id"},
	{"sessions steer", "ID --reason R [--set k=v] [--unset k] [--next A] [--release-result T] [--extend NAME=D] [--cancel-timer NAME]",
		"steer a live session (operators): set context, choose the next speaker once, release a held turn, extend or cancel a timer"},
	{"sessions purge", "ID ...", "archive and purge ended sessions whose whole tree ended, now, whatever their retention (operators)"},
	{"sessions erase", "[ID ...] [--thread KEY --creator A] [--participant A] --reason R",
		"erase sessions for good, from the log, its files and the archives, leaving a tombstone (operators)"},
	{"sessions import", "ARCHIVE [--session ID ...]",
		"bring purged sessions back into the running hub from a file of its archive directory, labelled imported_from (operators)"},
	{"questions list", "[--answerer A] [--root ID]", "the pending questions you must answer (an operator: everyone's)"},
	{"questions answer", "QUESTION [OPTION ...] [--text T] [--session ID]", "answer a pending question with options or free text"},
	{"tasks cancel", "ID ...", "cancel delegated tasks: each child session closes with reason cancelled (its delegator, or an operator)"},
	{"log verify", "[--data DIR] [--on-damage P]", "say what a start on a data directory would do, and check all of it (the hub stopped); with --hub ADDR, a running hub's backup"},
	{"log migrate", "[--data DIR]", "convert a data directory of an older format in place (the hub stopped)"},
	{"log backup", "FILE", "write a consistent backup of a running hub's log to FILE (- for stdout; operators)"},
	{"log restore", "--data DIR [--sha256 HEX] FILE", "load a backup into DIR, which must be new or empty, and verify it (- reads stdin); a failed restore leaves nothing"},
	{"log archive read", "FILE", "print the sessions and envelopes of an archive file of purged sessions, checking its checksums"},
	{"log archive import", "--data DIR [--session ID] FILE", "bring purged sessions back from an archive file into a data directory (the hub stopped), labelled imported_from"},
	{"cluster status", "[--nats URLS] [--nats-creds FILE]", "a cluster's nodes, partition owners and lease ages, and partition streams"},
	{"cluster creds", "FILE", "new credentials for a cluster's nodes (hubd serve --nats-creds FILE), mode 0600"},
	{"graph validate", "[--participants a,b,c] FILE", "check a workflow graph; exit 2 names the offending node"},
	{"graph render", "FILE", "print a workflow graph as a Mermaid flowchart"},
	{"graph simulate", "--graph FILE --participants a,b,c [--creator a] [--context JSON] [--max-handoffs N] < envelopes.jsonl",
		"dry-run a workflow session: one JSON envelope per line on stdin, one JSON result per line on stdout"},
	{"mcp", "[--token T | --as NAME] [--hub ADDR] [--workflows DIR]", "serve the hub to an MCP host over stdio: its model takes part in sessions as the agent, through tools"},
	{"health", "[--hub ADDR] [--tls | --tls-ca FILE] [--tls-cert FILE --tls-key FILE]", "exit 0 if the hub takes writes, 1 if not, 3 if unreachable (a container's health check)"},
	{"completion", "bash|zsh|fish", "print the shell's completion script for hubd: source <(hubd completion bash)"},
	{"version", "", "print the module version, the commit and the Go version"},
	{"help", "[COMMAND]", "print this help, or a command's (the same as hubd COMMAND --help)"},
}

// groups are the commands that have subcommands, with a sentence each.
var groups = map[string]string{
	"sessions":  "Read, open, send to, close, fork and purge the sessions of a running hub. These commands take the client flags below.",
	"questions": "List and answer the questions agents ask people. These commands take the client flags below.",
	"tasks":     "Act on delegated tasks (child sessions) of a running hub. These commands take the client flags below.",
	"log":       "Check, convert, back up and restore the write-ahead log: a directory offline, or a running hub through --hub; read archive files of purged sessions.",
	"cluster":   "Inspect a cluster of hubd nodes on NATS JetStream (docs/SCALING.md).",
	"graph":     "Check, draw and dry-run workflow graphs (the JSON of the graph knob); no hub needed.",
}

// lookup returns the help line of a command.
func lookup(name string) command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return command{name: name, args: "[flags]"}
}

// writeCommands writes the help lines of the commands whose name starts
// with prefix, aligned.
func writeCommands(w io.Writer, prefix string) {
	const col = 44
	for _, c := range commands {
		if !strings.HasPrefix(c.name, prefix) {
			continue
		}
		syn := strings.TrimSpace("hubd " + c.name + " " + c.args)
		if len(syn) < col-3 {
			fmt.Fprintf(w, "  %-*s %s\n", col-3, syn, c.summary)
			continue
		}
		fmt.Fprintf(w, "  %s\n  %-*s %s\n", syn, col-3, "", c.summary)
	}
}

// topHelp writes the whole program's help: every command, the client
// flags, and the flags of serve.
func topHelp(w io.Writer) {
	fmt.Fprint(w, "hubd: a session hub for multi-agent systems\n\nusage:\n")
	writeCommands(w, "")
	fmt.Fprint(w, "\nFlags may come before or after the arguments: hubd sessions show ID --hub ADDR.\n")
	fmt.Fprint(w, "The sessions, questions and tasks commands and cluster status take --output: table or text,\n"+
		"for people (the default), or json, for programs (the one JSON form of hub.proto; a listing prints\n"+
		"one message per line, a command of one message indents it); --json is --output json.\n")
	fmt.Fprint(w, "Each client flag and each flag of serve may also be set by the variable in brackets after it:\n"+
		"HUBD_ and the flag's name in capitals, '_' for '-' (HUBD_MAX_DEPTH=4 is --max-depth 4,\n"+
		"HUBD_HUB, HUBD_TOKEN and HUBD_TLS_CA the client's); a flag on the command line wins.\n")
	fmt.Fprint(w, "\nclient flags (sessions, questions and tasks commands, log backup, log verify --hub):\n")
	fs := newFlags("sessions", w)
	var c clientFlags
	c.register(fs)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nserve flags:\n")
	fs = newFlags("serve", w)
	var f serveFlags
	f.register(fs)
	fs.PrintDefaults()
}

// groupHelp writes the help of a command group ("sessions", "graph",
// "log").
func groupHelp(w io.Writer, group string) {
	fmt.Fprintf(w, "usage: hubd %s COMMAND [ARGS] [flags]\n\n%s\n\ncommands:\n", group, groups[group])
	writeCommands(w, group+" ")
	if group == "sessions" || group == "questions" || group == "tasks" {
		fmt.Fprint(w, "\nclient flags (before or after the arguments):\n")
		fs := newFlags("sessions", w)
		var c clientFlags
		c.register(fs)
		fs.PrintDefaults()
	}
	fmt.Fprintf(w, "\nhubd %s COMMAND --help lists a command's flags.\n", group)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// runHelp is "hubd help [COMMAND ...]": the help of the program, of a
// group, or of one command (which is the command's own --help).
func runHelp(ctx context.Context, args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0 || isHelp(args[0]):
		topHelp(stdout)
		return nil
	case groups[args[0]] != "" && len(args) == 1:
		groupHelp(stdout, args[0])
		return nil
	}
	err := run(ctx, append(slices.Clone(args), "--help"), nil, stdout, stdout)
	var e *exitcode.Error
	if errors.As(err, &e) && e.Code == 0 {
		return nil
	}
	return err
}

// wantGroupCommand is the error of a group run without a command: its
// help on stderr, exit 2.
func wantGroupCommand(group string, stderr io.Writer) error {
	groupHelp(stderr, group)
	return exitcode.Usage("%s: want a command", group)
}

// unknownGroupCommand is the error of a group given a command it lacks.
func unknownGroupCommand(group, name string) error {
	var names []string
	for _, c := range commands {
		if g, sub, ok := strings.Cut(c.name, " "); ok && g == group {
			names = append(names, sub)
		}
	}
	return exitcode.Usage("%s: unknown command %q (want %s; see hubd %s --help)", group, name, strings.Join(names, ", "), group)
}
