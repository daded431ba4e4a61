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

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

func runGraph(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitcode.Usage("graph: no subcommand (validate, render, simulate)")
	}
	switch args[0] {
	case "validate":
		return graphValidate(args[1:], stdout, stderr)
	case "render":
		return graphRender(args[1:], stdout, stderr)
	case "simulate":
		return graphSimulate(ctx, args[1:], stdin, stdout, stderr)
	}
	return exitcode.Usage("graph: unknown subcommand %q (validate, render, simulate)", args[0])
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args, turning a flag error into an exit-2 error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitcode.New(0, err)
		}
		return exitcode.Usage("%s: %v", fs.Name(), err)
	}
	return nil
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

func splitNames(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func graphValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("graph validate", stderr)
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
	participants := splitNames(*parts)
	if len(participants) == 0 {
		participants = g.Agents()
	}
	if err := g.Validate(participants); err != nil {
		return exitcode.Usage("%s: %v", fs.Arg(0), err)
	}
	fmt.Fprintln(stdout, summary(g, participants))
	return nil
}

func summary(g *transition.Graph, participants []string) string {
	def := "terminate(after_work)"
	if g.DefaultTarget != nil {
		def = transition.Describe(g.DefaultTarget)
	}
	turns := "no max_turns"
	if g.MaxTurns > 0 {
		turns = fmt.Sprintf("max_turns %d", g.MaxTurns)
	}
	return fmt.Sprintf("ok: %d transitions, initial speaker %s, participants %s, default %s, %s",
		len(g.Transitions), g.InitialSpeaker, strings.Join(participants, ", "), def, turns)
}

func graphRender(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("graph render", stderr)
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

func graphSimulate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("graph simulate", stderr)
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

// meta builds the dry-run session's metadata from the flags.
func (f *simulateFlags) meta() (*session.Meta, error) {
	if f.graph == "" || f.participants == "" {
		return nil, exitcode.Usage("graph simulate: --graph and --participants are required")
	}
	_, data, err := loadGraph(f.graph)
	if err != nil {
		return nil, err
	}
	names := splitNames(f.participants)
	if f.creator == "" && len(names) > 0 {
		f.creator = names[0]
	}
	meta := &session.Meta{Type: session.Type{Kind: workflow.Kind, Version: workflow.Version}, Creator: f.creator,
		Knobs: map[string]json.RawMessage{workflow.KnobGraph: data}}
	for _, n := range names {
		meta.Participants = append(meta.Participants, session.Participant{Name: n})
	}
	if f.context != "" {
		if !json.Valid([]byte(f.context)) {
			return nil, exitcode.Usage("graph simulate: --context is not JSON")
		}
		meta.Knobs[adapters.KnobContext] = json.RawMessage(f.context)
	}
	if f.maxHandoffs != 0 {
		meta.Knobs[workflow.KnobMaxHandoffs] = session.MustJSON(f.maxHandoffs)
	}
	return meta, nil
}

// simulate reads one envelope per line and writes one result per line. A
// rejected envelope is output; a line that is not JSON stops with exit 2.
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
		var step adapters.Step
		var env session.Envelope
		switch err := json.Unmarshal(line, &env); {
		case err != nil:
			step = adapters.Step{Code: adapters.ReasonMalformed, Err: err}
		case env.From == "":
			step = adapters.Step{Code: adapters.ReasonMalformed, Err: errors.New("envelope needs a \"from\"")}
		default:
			step = dr.Try(&env)
		}
		b, _ := json.Marshal(step)
		out.Write(append(b, '\n'))
	}
	if err := sc.Err(); err != nil {
		return exitcode.Usage("graph simulate: reading stdin: %v", err)
	}
	return nil
}
