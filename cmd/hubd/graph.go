package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

func runGraph(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return wantGroupCommand("graph", stderr)
	}
	if isHelp(args[0]) {
		groupHelp(stdout, "graph")
		return nil
	}
	info := lookup("graph " + args[0])
	fs := newCommand(info.name, info.args, info.summary, stdout)
	switch args[0] {
	case "validate":
		return graphValidate(fs, args[1:], stdout)
	case "render":
		return graphRender(fs, args[1:], stdout)
	case "simulate":
		return graphSimulate(ctx, fs, args[1:], stdin, stdout)
	}
	return unknownGroupCommand("graph", args[0])
}

// loadGraph reads and decodes a graph file; any failure is exit 2.
func loadGraph(path string) (*transition.Graph, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, exitcode.Usage("%v", err)
	}
	g, err := transition.NewRegistry().Decode(data)
	if err != nil {
		return nil, nil, exitcode.Usage("%s: %v", path, err)
	}
	return g, data, nil
}

func graphValidate(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	parts := fs.String("participants", "", "comma-separated participants to check the graph against (default: the agents the graph names)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Usage("graph validate: want one FILE, got %d arguments", fs.NArg())
	}
	g, _, err := loadGraph(fs.Arg(0))
	if err != nil {
		return err
	}
	participants, inferred := splitNames(*parts), ""
	if len(participants) == 0 {
		participants, inferred = g.Agents(), " (inferred from the graph; give --participants to check it against a session's)"
	}
	if err := g.Validate(participants); err != nil {
		return exitcode.Usage("%s: %v", fs.Arg(0), err)
	}
	fmt.Fprintln(stdout, summary(g, participants, inferred))
	return nil
}

func summary(g *transition.Graph, participants []string, inferred string) string {
	def := "terminate(after_work)"
	if g.DefaultTarget != nil {
		def = transition.Describe(g.DefaultTarget)
	}
	turns := "no max_turns"
	if g.MaxTurns > 0 {
		turns = fmt.Sprintf("max_turns %d", g.MaxTurns)
	}
	return fmt.Sprintf("ok: %d transitions, initial speaker %s, participants %s%s, default %s, %s",
		len(g.Transitions), g.InitialSpeaker, strings.Join(participants, ", "), inferred, def, turns)
}

func graphRender(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Usage("graph render: want one FILE, got %d arguments", fs.NArg())
	}
	g, _, err := loadGraph(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, g.Mermaid())
	return nil
}

type simulateFlags struct {
	graph, participants, creator, context string
	maxHandoffs                           int
}

func graphSimulate(ctx context.Context, fs *flag.FlagSet, args []string, stdin io.Reader, stdout io.Writer) error {
	var f simulateFlags
	fs.StringVar(&f.graph, "graph", "", "the graph `FILE` (required)")
	fs.StringVar(&f.participants, "participants", "", "comma-separated participants in session order (required)")
	fs.StringVar(&f.creator, "creator", "", "the session's creator (default: the first participant)")
	fs.StringVar(&f.context, "context", "", "initial context variables, a JSON object")
	fs.IntVar(&f.maxHandoffs, "max-handoffs", 0, "the session's max_handoffs knob (0: none)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("graph simulate: unexpected argument %q (envelopes are read from stdin)", fs.Arg(0))
	}
	meta, err := f.meta()
	if err != nil {
		return err
	}
	dr, err := adapters.NewDryRun(workflow.New(nil), meta)
	if err != nil {
		return exitcode.Usage("graph simulate: %v", err)
	}
	return simulate(ctx, dr, stdin, stdout)
}

// dryRunID is the session id of a dry run.
const dryRunID = "00000000-0000-0000-0000-000000000000"

// meta builds the dry-run session's metadata from the flags.
func (f *simulateFlags) meta() (*hubpb.SessionMeta, error) {
	if f.graph == "" || f.participants == "" {
		return nil, exitcode.Usage("graph simulate: --graph and --participants are required")
	}
	_, data, err := loadGraph(f.graph)
	if err != nil {
		return nil, err
	}
	graph, err := session.JSONValue(data)
	if err != nil {
		return nil, exitcode.Usage("graph simulate: %s: %v", f.graph, err)
	}
	names := splitNames(f.participants)
	if f.creator == "" && len(names) > 0 {
		f.creator = names[0]
	}
	meta := &hubpb.SessionMeta{SessionId: dryRunID, Type: session.Type{Kind: workflow.Kind, Version: workflow.Version}.String(), Creator: f.creator,
		Knobs: map[string]*structpb.Value{workflow.KnobGraph: graph}}
	for _, n := range names {
		meta.Participants = append(meta.Participants, &hubpb.Participant{Name: n})
	}
	if f.context != "" {
		v, err := session.JSONValue([]byte(f.context))
		if err != nil {
			return nil, exitcode.Usage("graph simulate: --context is not JSON: %v", err)
		}
		meta.Knobs[adapters.KnobContext] = v
	}
	if f.maxHandoffs != 0 {
		meta.Knobs[workflow.KnobMaxHandoffs] = structpb.NewNumberValue(float64(f.maxHandoffs))
	}
	return meta, nil
}

// simulate reads one envelope per line (hubpb.Envelope in the one JSON
// form) and writes one result per line (adapters.Step's JSON). A rejected
// envelope is a result; a line that is not JSON at all stops with exit 2.
func simulate(ctx context.Context, dr *adapters.DryRun, stdin io.Reader, stdout io.Writer) error {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	for n := 1; sc.Scan(); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return exitcode.Usage("graph simulate: stdin line %d is not JSON: %.60q", n, line)
		}
		b, err := json.Marshal(tryLine(dr, line))
		if err != nil {
			return err
		}
		out.Write(append(b, '\n'))
	}
	if err := sc.Err(); err != nil {
		return exitcode.Usage("graph simulate: reading stdin: %v", err)
	}
	return nil
}

// tryLine decodes one line as an envelope and tries it.
func tryLine(dr *adapters.DryRun, line []byte) adapters.Step {
	malformed := hubpb.Reason_MALFORMED.String()
	env := &hubpb.Envelope{}
	if err := hubpb.UnmarshalJSON(line, env); err != nil {
		return adapters.Step{Code: malformed, Err: fmt.Errorf(`not an envelope (want e.g. {"from":"a","type":"text","text":{"text":"hi"}}): %v`, err)}
	}
	if env.GetFrom() == "" {
		return adapters.Step{Code: malformed, Err: errors.New(`the envelope needs a "from"`)}
	}
	return dr.Try(env)
}
