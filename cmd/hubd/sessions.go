package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
	"github.com/hubd/hubd/session"
)

// clientFlags are the flags of the commands that talk to a running hub.
type clientFlags struct {
	hub, as, token, caFile string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.hub, "hub", DefaultListen, "the hub's gRPC address")
	fs.StringVar(&c.as, "as", "operator", "the agent to act as (development mode, or with a client certificate)")
	fs.StringVar(&c.token, "token", os.Getenv("HUBD_TOKEN"), "bearer token (default $HUBD_TOKEN)")
	fs.StringVar(&c.caFile, "tls-ca", "", "verify the hub's TLS certificate with this CA (PEM `file`); without it the connection is plaintext")
}

// dial connects to the hub with the caller's credentials on every call.
func (c *clientFlags) dial() (hubpb.HubClient, func(), error) {
	creds := insecure.NewCredentials()
	if c.caFile != "" {
		tc, err := credentials.NewClientTLSFromFile(c.caFile, "")
		if err != nil {
			return nil, nil, exitcode.Usage("--tls-ca: %v", err)
		}
		creds = tc
	}
	md := []string{hubgrpc.AgentHeader, c.as}
	if c.token != "" {
		md = []string{"authorization", "Bearer " + c.token}
	}
	conn, err := grpc.NewClient(c.hub, grpc.WithTransportCredentials(creds),
		grpc.WithUnaryInterceptor(func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return inv(metadata.AppendToOutgoingContext(ctx, md...), m, req, reply, cc, o...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, d *grpc.StreamDesc, cc *grpc.ClientConn, m string, s grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			return s(metadata.AppendToOutgoingContext(ctx, md...), d, cc, m, o...)
		}))
	if err != nil {
		return nil, nil, err
	}
	return hubpb.NewHubClient(conn), func() { conn.Close() }, nil
}

// callError makes a gRPC error readable: its message and reason.
func callError(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return fmt.Errorf("%s: %s", st.Code(), st.Message())
}

func runSessions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return exitcode.Usage("sessions: want list, show, tail or export")
	}
	var c clientFlags
	fs := newFlags("sessions "+args[0], stderr)
	c.register(fs)
	switch args[0] {
	case "list":
		return sessionsList(ctx, fs, &c, args[1:], stdout)
	case "show":
		return sessionsShow(ctx, fs, &c, args[1:], stdout)
	case "tail":
		return sessionsTail(ctx, fs, &c, args[1:], stdout)
	case "export":
		return sessionsExport(ctx, fs, &c, args[1:], stdout)
	}
	return exitcode.Usage("sessions: unknown subcommand %q (list, show, tail, export)", args[0])
}

func sessionsList(ctx context.Context, fs *flag.FlagSet, c *clientFlags, args []string, stdout io.Writer) error {
	state := fs.String("state", "", "only sessions in this state (PENDING, OPEN, CLOSED, EXPIRED)")
	participant := fs.String("participant", "", "only sessions with this participant")
	creator := fs.String("creator", "", "only sessions this agent created")
	var labels labelFlag
	fs.Var(&labels, "label", "only sessions with this label (k=v; repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	client, done, err := c.dial()
	if err != nil {
		return err
	}
	defer done()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tTYPE\tSTATE\tCREATOR\tPARTICIPANTS\tSEQ\tREASON")
	token := ""
	for {
		resp, err := client.ListSessions(ctx, &hubpb.ListSessionsRequest{State: *state, Participant: *participant, Creator: *creator,
			Labels: labels, PageToken: token, PageSize: 1000})
		if err != nil {
			return callError(err)
		}
		for _, s := range resp.GetSessions() {
			var names []string
			for _, p := range s.GetParticipants() {
				names = append(names, p.GetName())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.GetSessionId(), s.GetType(), s.GetState(), s.GetCreator(),
				strings.Join(names, ","), s.GetSeq(), s.GetCloseReason())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	return tw.Flush()
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

func oneID(fs *flag.FlagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", exitcode.Usage("%s: want one session id", fs.Name())
	}
	return fs.Arg(0), nil
}

func sessionsShow(ctx context.Context, fs *flag.FlagSet, c *clientFlags, args []string, stdout io.Writer) error {
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	client, done, err := c.dial()
	if err != nil {
		return err
	}
	defer done()
	info, err := client.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil {
		return callError(err)
	}
	b, _ := protoJSON(info)
	_, err = fmt.Fprintln(stdout, string(b))
	return err
}

// sessionsTail prints a session's envelopes as JSON lines from a seq,
// following it live until it ends (or the command is interrupted).
func sessionsTail(ctx context.Context, fs *flag.FlagSet, c *clientFlags, args []string, stdout io.Writer) error {
	from := fs.Uint64("from", 1, "first seq")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	client, done, err := c.dial()
	if err != nil {
		return err
	}
	defer done()
	stream, err := client.Watch(ctx, &hubpb.WatchRequest{SessionId: id, FromSeq: *from})
	if err != nil {
		return callError(err)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for {
		d, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return callError(err)
		}
		e, err := hubgrpc.EnvelopeFromPB(d.GetEnvelope())
		if err != nil {
			return err
		}
		if err := writeJSONLine(w, e); err != nil {
			return err
		}
		w.Flush()
		if e.Type.Ends() {
			return nil
		}
	}
}

// sessionsExport writes every envelope of the named sessions (default: all
// the caller may list) as JSON lines, in seq order per session.
func sessionsExport(ctx context.Context, fs *flag.FlagSet, c *clientFlags, args []string, stdout io.Writer) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	client, done, err := c.dial()
	if err != nil {
		return err
	}
	defer done()
	ids := fs.Args()
	if len(ids) == 0 {
		if ids, err = allSessions(ctx, client); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, id := range ids {
		if err := exportOne(ctx, client, id, w); err != nil {
			return err
		}
	}
	return nil
}

func allSessions(ctx context.Context, client hubpb.HubClient) ([]string, error) {
	var ids []string
	token := ""
	for {
		resp, err := client.ListSessions(ctx, &hubpb.ListSessionsRequest{PageToken: token, PageSize: 1000})
		if err != nil {
			return nil, callError(err)
		}
		for _, s := range resp.GetSessions() {
			ids = append(ids, s.GetSessionId())
		}
		if token = resp.GetNextPageToken(); token == "" {
			return ids, nil
		}
	}
}

func exportOne(ctx context.Context, client hubpb.HubClient, id string, w io.Writer) error {
	from := uint64(1)
	for {
		resp, err := client.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: from, Limit: 1000})
		if err != nil {
			return callError(err)
		}
		es := resp.GetEnvelopes()
		for _, p := range es {
			e, err := hubgrpc.EnvelopeFromPB(p)
			if err != nil {
				return err
			}
			if err := writeJSONLine(w, e); err != nil {
				return err
			}
			from = e.Seq + 1
		}
		if len(es) < 1000 {
			return nil
		}
	}
}

func writeJSONLine(w io.Writer, e *session.Envelope) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
