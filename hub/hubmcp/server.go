package hubmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// errorDomain is the ErrorInfo domain of the hub's refusals.
const errorDomain = "hubd"

// Options configure a server.
type Options struct {
	// Version is the server's version, as the host sees it.
	Version string
	// Workflows are transition graphs by name: open_session takes
	// "workflow": NAME for a workflow@1 session with that graph.
	Workflows map[string]*structpb.Struct
	// Forward names the HTTP request headers each call carries to the hub
	// as metadata (lower case): the HTTP endpoint forwards the caller's
	// credentials, so that every call is the caller's own. Over stdio the
	// client's credentials are used and nothing is forwarded.
	Forward []string
}

// New returns an MCP server whose tools call the hub through c.
func New(c hubsvc.HubClient, opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hubd", Title: "hubd session hub", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "You are an agent of a hubd session hub. Call pending_turns to find the sessions where it is your turn, " +
			"get_view to read one, and send to reply on your turn. A refusal starts with the hub's reason (OUT_OF_TURN, " +
			"NOT_PARTICIPANT, ...) and says what it expected.",
	})
	for _, t := range tools() {
		s.AddTool(mcpTool(t, nil), handler(c, t, opts.Forward, nil))
	}
	open := unary("open_session", "Open", "Open a session: a type (\"workflow@1\", \"conversation@1\", ...) with its participants, "+
		"or \"workflow\": NAME, one of the hub's named workflows, which sets the type and the graph.", false,
		func() *hubpb.OpenRequest { return &hubpb.OpenRequest{} }, &hubpb.OpenResponse{},
		func(c hubsvc.HubClient) func(context.Context, *hubpb.OpenRequest, ...grpc.CallOption) (*hubpb.OpenResponse, error) {
			return c.Open
		})
	s.AddTool(mcpTool(open, workflowProperty(opts.Workflows)), handler(c, open, opts.Forward, workflowArgument(opts.Workflows)))
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "transcript",
		Title:       "A session's transcript",
		Description: "Every envelope of the session, one JSON object (hubpb.Envelope) per line, as read_log gives them.",
		URITemplate: transcriptPrefix + "{session_id}/transcript",
		MIMEType:    "application/x-ndjson",
	}, transcript(c, opts.Forward))
	return s
}

// mcpTool describes t to the host: its input and output schemas are its
// messages' (extra: more input properties, beside the message's fields).
func mcpTool(t tool, extra map[string]any) *mcp.Tool {
	in := Schema(t.req().ProtoReflect().Descriptor())
	if len(extra) > 0 {
		props := in["properties"].(map[string]any)
		maps.Copy(props, extra)
	}
	return &mcp.Tool{
		Name:         t.name,
		Description:  t.desc + " (hubd.v1.Hub/" + t.rpc + ")",
		InputSchema:  in,
		OutputSchema: Schema(t.resp.ProtoReflect().Descriptor()),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly, OpenWorldHint: ptr(false)},
	}
}

func ptr[T any](v T) *T { return &v }

// argument rewrites a tool's JSON arguments before they are read as its
// request (nil: as they are).
type argument func(args map[string]json.RawMessage) error

// handler runs t: the arguments are its request's JSON form; the hub's
// answer is the result, its refusal an error result.
func handler(c hubsvc.HubClient, t tool, forward []string, arg argument) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in := t.req()
		if err := decode(req.Params.Arguments, in, arg); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("MALFORMED: the arguments are not a %s: %v", in.ProtoReflect().Descriptor().FullName(), err)}}}, nil
		}
		resp, err := t.call(outgoing(ctx, req.Extra, forward), c, in)
		return result(resp, err)
	}
}

// decode reads a tool's arguments into m.
func decode(raw json.RawMessage, m proto.Message, arg argument) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if arg != nil {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(raw, &args); err != nil {
			return err
		}
		if err := arg(args); err != nil {
			return err
		}
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		raw = b
	}
	return hubpb.UnmarshalJSON(raw, m)
}

// outgoing is ctx carrying the forwarded headers of the call's HTTP
// request as metadata.
func outgoing(ctx context.Context, extra *mcp.RequestExtra, forward []string) context.Context {
	if extra == nil || extra.Header == nil {
		return ctx
	}
	md := metadata.MD{}
	for _, h := range forward {
		if v := extra.Header.Values(h); len(v) > 0 {
			md.Set(h, v...)
		}
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// workflowProperty is open_session's "workflow" argument.
func workflowProperty(wf map[string]*structpb.Struct) map[string]any {
	if len(wf) == 0 {
		return nil
	}
	names := make([]any, 0, len(wf))
	for _, n := range slices.Sorted(maps.Keys(wf)) {
		names = append(names, n)
	}
	return map[string]any{"workflow": map[string]any{"type": "string", "enum": names,
		"description": "a named workflow of this hub: the session is workflow@1 with its graph (type and graph must then be left out)"}}
}

// workflowArgument replaces "workflow": NAME with the type and graph.
func workflowArgument(wf map[string]*structpb.Struct) argument {
	return func(args map[string]json.RawMessage) error {
		raw, ok := args["workflow"]
		if !ok {
			return nil
		}
		delete(args, "workflow")
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return fmt.Errorf("workflow: want a name: %w", err)
		}
		g, ok := wf[name]
		if !ok {
			return fmt.Errorf("workflow %q: this hub's workflows are %s", name, strings.Join(slices.Sorted(maps.Keys(wf)), ", "))
		}
		if _, ok := args["graph"]; ok {
			return fmt.Errorf("workflow %q and a graph: give one", name)
		}
		b, err := g.MarshalJSON()
		if err != nil {
			return err
		}
		args["graph"], args["type"] = b, json.RawMessage(`"workflow@1"`)
		return nil
	}
}

// reasonOf is the hub's stable reason in an error detail.
func reasonOf(d any) (string, bool) {
	info, ok := d.(*errdetails.ErrorInfo)
	if !ok || info.GetDomain() != errorDomain {
		return "", false
	}
	return info.GetReason(), true
}
