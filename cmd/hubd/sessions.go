package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
)

// clientFlags are the flags of the commands that talk to a running hub.
// Each may also be set by its variable (env.go): HUBD_HUB, HUBD_AS,
// HUBD_TOKEN, HUBD_TLS_CA, HUBD_CONNECT_TIMEOUT.
type clientFlags struct {
	hub, as, token, caFile string
	connectTimeout         time.Duration

	fs  *flag.FlagSet // where they are registered
	env []string      // the flags its variables may set
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	c.fs, c.env = fs, envFlags(fs, c.define)
}

func (c *clientFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&c.hub, "hub", DefaultListen, "the hub's gRPC `address`")
	fs.StringVar(&c.as, "as", "operator", "the agent `name` to act as (development mode; ignored with --token)")
	fs.StringVar(&c.token, "token", "", "bearer `token`")
	fs.StringVar(&c.caFile, "tls-ca", "", "verify the hub's TLS certificate with this CA (PEM `file`); without it the connection is plaintext")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", 10*time.Second, "how long to wait for the hub to answer")
}

// dial connects to the hub as the flags say, through agentsdk. Flags the
// command line left unset are first taken from their variables (read
// here, not as the flags' defaults, so --help never prints a token).
func (c *clientFlags) dial(ctx context.Context, cmd string) (*agentsdk.Client, error) {
	if err := fromEnv(c.fs, c.env); err != nil {
		return nil, err
	}
	if c.as == "" && c.token == "" {
		return nil, exitcode.Usage("%s: want --as NAME or --token TOKEN", cmd)
	}
	opts := agentsdk.Options{Name: c.as, Token: c.token}
	if c.token != "" {
		opts.Name = "" // the token names the agent
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, exitcode.Usage("%s: --tls-ca: %v", cmd, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, exitcode.Usage("%s: --tls-ca: %s holds no PEM certificate", cmd, c.caFile)
		}
		opts.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if _, _, err := net.SplitHostPort(c.hub); err != nil && !hasScheme(c.hub) {
		return nil, exitcode.Usage("%s: --hub %q: want host:port", cmd, c.hub)
	}
	dctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	defer cancel()
	r := &reach{cancel: cancel}
	target, watch := r.watch(c.hub, opts.TLS)
	opts.DialOptions = watch
	opts.Transport = agentsdk.TransportUnary // one call or a few: no stream to open
	client, err := agentsdk.Dial(dctx, target, opts)
	switch {
	case err == nil:
		return client, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", cmd, ctx.Err()) // interrupted
	case r.failure() != nil:
		return nil, exitcode.Unreachable(fmt.Errorf("%s: %w", cmd, unreachable(c.hub, r.failure())))
	case dctx.Err() != nil:
		return nil, exitcode.Unreachable(fmt.Errorf("%s: cannot reach hubd at %s: no connection within %v (--connect-timeout)", cmd, c.hub, c.connectTimeout))
	}
	// Dial refused what the flags ask for (a token in cleartext to a
	// remote address) before connecting.
	return nil, exitcode.Usage("%s: %v", cmd, err)
}

// callError is a refused call as the CLI prints it: the command, the
// hub's message and its stable reason ("sessions show: no session …
// (UNKNOWN_SESSION)"). It matches the agentsdk sentinel with errors.Is.
type callError struct {
	cmd string
	err *agentsdk.Error
}

func (e *callError) Error() string {
	tag := e.err.Reason
	if tag == "" {
		tag = e.err.Code.String()
	}
	return fmt.Sprintf("%s: %s (%s)", e.cmd, e.err.Message, tag)
}

func (e *callError) Unwrap() error { return e.err }

// wrapCall names the command in an error of a call. A call the hub
// refused carries its stable reason (exit 1); one that lost the hub
// (Unavailable from gRPC itself, no reason) exits 3.
func wrapCall(cmd string, err error) error {
	var e *agentsdk.Error
	if errors.As(err, &e) {
		if e.Reason == "" && e.Code == codes.Unavailable {
			return exitcode.Unreachable(&callError{cmd: cmd, err: e})
		}
		return &callError{cmd: cmd, err: e}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// subcommand is one of "hubd sessions ..." after its flags are parsed.
type subcommand func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error

// clientCommand is a command of a group that talks to a running hub, its
// flags registered.
type clientCommand struct {
	run subcommand
	// nargs is how many positional arguments it takes: n, or -1 for any
	// number, or -1-n for at least n.
	nargs int
	// check, when set, checks the arguments and reads the input before the
	// hub is dialed: a mistake exits 2 whether or not a hub answers.
	check func(fs *flag.FlagSet) error
}

// clientGroup returns a group's command name, its flags registered on
// fs, reading stdin if it reads anything; nil for an unknown name.
type clientGroup func(name string, fs *flag.FlagSet, stdin io.Reader) *clientCommand

func runSessions(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runClientGroup(ctx, "sessions", sessionsCommand, args, stdin, stdout, stderr)
}

// runClientGroup runs a command of a group that talks to a running hub
// ("sessions", "questions", "tasks").
func runClientGroup(ctx context.Context, group string, commands clientGroup, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return wantGroupCommand(group, stderr)
	}
	if isHelp(args[0]) {
		groupHelp(stdout, group)
		return nil
	}
	info := lookup(group + " " + args[0])
	fs := newCommand(info.name, info.args, info.summary, stdout)
	var c clientFlags
	c.register(fs)
	cmd := commands(args[0], fs, stdin)
	if cmd == nil {
		return unknownGroupCommand(group, args[0])
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if err := checkArgs(fs, info, cmd.nargs); err != nil {
		return err
	}
	if cmd.check != nil {
		if err := cmd.check(fs); err != nil {
			return err
		}
	}
	client, err := c.dial(ctx, fs.Name())
	if err != nil {
		return err
	}
	defer client.Close()
	w := bufio.NewWriter(stdout)
	err = cmd.run(ctx, client, fs, w)
	return errors.Join(wrapCall(fs.Name(), err), w.Flush())
}

// checkArgs checks the number of positional arguments (see
// clientCommand.nargs).
func checkArgs(fs *flag.FlagSet, info command, nargs int) error {
	switch {
	case nargs == 0 && fs.NArg() > 0:
		return exitcode.Usage("%s: unexpected argument %q (see hubd %s --help)", fs.Name(), fs.Arg(0), fs.Name())
	case nargs < -1 && fs.NArg() >= -nargs-1, nargs == -1, nargs >= 0 && fs.NArg() == nargs:
		return nil
	}
	return exitcode.Usage("%s: want %s, got %d arguments (see hubd %s --help)", fs.Name(), strings.TrimSpace(info.args), fs.NArg(), fs.Name())
}

// sessionsCommand returns a sessions command (see clientGroup).
func sessionsCommand(name string, fs *flag.FlagSet, stdin io.Reader) *clientCommand {
	switch name {
	case "list":
		return &clientCommand{run: listFlags(fs)}
	case "show":
		return &clientCommand{run: showFlags(fs), nargs: 1}
	case "tail":
		return &clientCommand{run: tailFlags(fs), nargs: 1}
	case "export":
		return &clientCommand{run: exportFlags(fs), nargs: -1}
	case "tree":
		return &clientCommand{run: treeFlags(fs), nargs: 1}
	case "replay":
		return &clientCommand{run: replayFlags(fs), nargs: 1}
	case "open":
		return openFlags(fs)
	case "send":
		return sendFlags(fs, stdin)
	case "close":
		return closeFlags(fs)
	case "fork":
		return forkFlags(fs)
	case "steer":
		return steerFlags(fs)
	case "purge":
		return purgeFlags(fs)
	case "erase":
		return eraseFlags(fs)
	case "import":
		return sessionsImportFlags(fs)
	}
	return nil
}

// listFlags registers the filters of "sessions list" and --output, and
// returns it: a table of the sessions, or one SessionInfo per line.
func listFlags(fs *flag.FlagSet) subcommand {
	var opts agentsdk.ListOptions
	fs.StringVar(&opts.State, "state", "", "only sessions in this `state` (PENDING, OPEN, CLOSED, EXPIRED, or QUARANTINED: those found damaged)")
	fs.StringVar(&opts.Participant, "participant", "", "only sessions with this participant")
	fs.StringVar(&opts.Creator, "creator", "", "only sessions this agent created")
	fs.Var((*labelFlag)(&opts.Labels), "label", "only sessions with this label (`k=v`; repeatable)")
	out := outputFlags(fs, "the output `format`: table (for people: id, type, state, reason, creator, participants, created, age) "+
		"or json (for programs: one SessionInfo per line)", formatTable, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, _ *flag.FlagSet, w *bufio.Writer) error {
		opts.State = strings.ToUpper(opts.State)
		if out.json() {
			return eachSession(ctx, c, opts, func(s *agentsdk.Session) error { return writeJSON(w, s.SessionInfo) })
		}
		return sessionsTable(ctx, c, opts, w)
	}
}

// sessionsTable writes the sessions a listing returns as a table, or
// nothing if the listing fails: the table is empty only when no session
// matches.
func sessionsTable(ctx context.Context, c *agentsdk.Client, opts agentsdk.ListOptions, w io.Writer) error {
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tSTATE\tREASON\tCREATOR\tPARTICIPANTS\tCREATED\tAGE")
	err := eachSession(ctx, c, opts, func(s *agentsdk.Session) error {
		m := s.GetMeta()
		var names []string
		for _, p := range m.GetParticipants() {
			names = append(names, p.GetName())
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.GetSessionId(), m.GetType(), s.GetState(), cell(s.GetCloseReason()),
			m.GetCreator(), cell(strings.Join(names, ",")), timeCell(m.GetCreatedAt()), ageCell(m.GetCreatedAt(), now))
		return err
	})
	if err != nil {
		return err
	}
	return tw.Flush()
}

// eachSession calls fn for every session the listing returns, page by
// page.
func eachSession(ctx context.Context, c *agentsdk.Client, opts agentsdk.ListOptions, fn func(*agentsdk.Session) error) error {
	opts.PageSize = 1000
	for {
		page, next, err := c.ListSessions(ctx, opts)
		if err != nil {
			return err
		}
		for _, s := range page {
			if err := fn(s); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		opts.PageToken = next
	}
}

type labelFlag map[string]string

func (l *labelFlag) String() string { return fmt.Sprint(map[string]string(*l)) }
func (l *labelFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return errors.New("want k=v")
	}
	if *l == nil {
		*l = labelFlag{}
	}
	(*l)[k] = val
	return nil
}

// showFlags registers --output and returns "sessions show": a session in
// words, or its SessionInfo as indented JSON.
func showFlags(fs *flag.FlagSet) subcommand {
	out := outputFlags(fs, "the output `format`: text (for people: the session in words) or json (for programs: its SessionInfo, indented)",
		formatText, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		s, err := c.GetSession(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if out.json() {
			return writeIndented(w, s.SessionInfo)
		}
		return writeSummary(w, s.SessionInfo, time.Now())
	}
}

// tailFlags registers --from, --timestamps and --output and returns
// "sessions tail": a session's envelopes from a seq, as a timeline or as
// JSON lines, following it live (through hub restarts) until it ends or
// the command is interrupted.
func tailFlags(fs *flag.FlagSet) subcommand {
	from := fs.Uint64("from", 1, "the first `seq` to print")
	stamps := fs.Bool("timestamps", false, "begin each line of the timeline with the time the hub accepted the envelope (UTC)")
	deltas := fs.Bool("deltas", false, "also print the pieces of replies as they are written (deltas, never logged: a \"~ AGENT is writing: TEXT\" line, or the delta's JSON), before each reply's envelope")
	out := outputFlags(fs, "the output `format`: text (for people: a timeline, one event per line) or json (for programs: one envelope per line)",
		formatText, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		id := fs.Arg(0)
		s, err := c.GetSession(ctx, id)
		if err != nil {
			return err
		}
		if s.Ended() && *from > s.GetSeq() {
			return nil // nothing more will come
		}
		write := func(e *hubpb.Envelope) error { return writeEvent(w, e, *stamps) }
		if out.json() {
			write = func(e *hubpb.Envelope) error { return writeJSON(w, e) }
		}
		each := func(e *hubpb.Envelope) error {
			if err := write(e); err != nil {
				return err
			}
			return w.Flush()
		}
		if *deltas {
			_, err = c.FollowDeltas(ctx, id, *from, each, func(d *agentsdk.Delta) error { return writeDelta(w, d, out.json()) })
		} else {
			_, err = c.Follow(ctx, id, *from, each)
		}
		if ctx.Err() != nil {
			return nil // interrupted: a normal end of a tail
		}
		return err
	}
}

// writeDelta prints a delta of sessions tail --deltas: its JSON, or a
// line of the timeline.
func writeDelta(w *bufio.Writer, d *agentsdk.Delta, asJSON bool) error {
	var err error
	if asJSON {
		err = writeJSON(w, d)
	} else {
		_, err = fmt.Fprintf(w, "~ %s is writing: %q\n", d.GetFrom(), d.GetText())
	}
	if err != nil {
		return err
	}
	return w.Flush()
}

// exportFlags registers --output and returns "sessions export". An export
// is for programs and archives: JSON lines only (--output json, the
// default, is taken so that every printing command takes --output).
func exportFlags(fs *flag.FlagSet) subcommand {
	outputFlags(fs, "the output `format`: json only (one envelope per line; a session's timeline in words: hubd sessions tail ID)", formatJSON)
	return sessionsExport
}

// sessionsExport writes every envelope of the named sessions (default: of
// every session the caller may list) as JSON lines, in seq order per
// session.
func sessionsExport(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
	ids := fs.Args()
	if len(ids) == 0 {
		err := eachSession(ctx, c, agentsdk.ListOptions{}, func(s *agentsdk.Session) error {
			ids = append(ids, s.ID())
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range ids {
		if err := exportOne(ctx, c, id, w); err != nil {
			return err
		}
	}
	return nil
}

// exportOne writes one session's envelopes, reading its log page by page.
func exportOne(ctx context.Context, c *agentsdk.Client, id string, w io.Writer) error {
	const page = 1000
	from := uint64(1)
	for {
		es, err := c.ReadLog(ctx, id, from, page)
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := writeJSON(w, e); err != nil {
				return err
			}
			from = e.GetSeq() + 1
		}
		if len(es) < page {
			return nil
		}
	}
}
