package hubmcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// tool is one RPC served as an MCP tool.
type tool struct {
	name     string
	rpc      string // the method of hubsvc.Hub
	desc     string
	readOnly bool
	req      func() proto.Message
	resp     proto.Message // a prototype, for the output schema
	call     func(ctx context.Context, c hubsvc.HubClient, req proto.Message) (proto.Message, error)
}

// unary makes a tool of one unary RPC.
func unary[Req, Resp proto.Message](name, rpc, desc string, readOnly bool, newReq func() Req, resp Resp,
	call func(c hubsvc.HubClient) func(context.Context, Req, ...grpc.CallOption) (Resp, error)) tool {
	return tool{name: name, rpc: rpc, desc: desc, readOnly: readOnly, resp: resp,
		req: func() proto.Message { return newReq() },
		call: func(ctx context.Context, c hubsvc.HubClient, req proto.Message) (proto.Message, error) {
			return call(c)(ctx, req.(Req))
		}}
}

// tools are the hub's RPCs an MCP host's model uses to take part in
// sessions, in the order the host lists them.
func tools() []tool {
	return []tool{
		unary("pending_turns", "PendingTurns", "The sessions where it is your turn now, each with its view: what to answer next.", true,
			func() *hubpb.PendingTurnsRequest { return &hubpb.PendingTurnsRequest{} }, &hubpb.PendingTurnsResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.PendingTurnsRequest, ...grpc.CallOption) (*hubpb.PendingTurnsResponse, error) {
				return c.PendingTurns
			}),
		unary("list_sessions", "ListSessions", "The sessions you take part in (all, for an operator), newest first, with filters.", true,
			func() *hubpb.ListSessionsRequest { return &hubpb.ListSessionsRequest{} }, &hubpb.ListSessionsResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.ListSessionsRequest, ...grpc.CallOption) (*hubpb.ListSessionsResponse, error) {
				return c.ListSessions
			}),
		unary("get_session", "GetSession", "One session's metadata and state: who speaks next, its context, whether it ended and why.", true,
			func() *hubpb.GetSessionRequest { return &hubpb.GetSessionRequest{} }, &hubpb.SessionInfo{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.GetSessionRequest, ...grpc.CallOption) (*hubpb.SessionInfo, error) {
				return c.GetSession
			}),
		unary("get_view", "GetView", "What you see of a session: its recent envelopes as your turn would show them.", true,
			func() *hubpb.GetViewRequest { return &hubpb.GetViewRequest{} }, &hubpb.View{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.GetViewRequest, ...grpc.CallOption) (*hubpb.View, error) {
				return c.GetView
			}),
		unary("read_log", "ReadLog", "A session's log from a seq: every envelope, in order.", true,
			func() *hubpb.ReadLogRequest { return &hubpb.ReadLogRequest{} }, &hubpb.ReadLogResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.ReadLogRequest, ...grpc.CallOption) (*hubpb.ReadLogResponse, error) {
				return c.ReadLog
			}),
		unary("send", "Send", "Send an envelope into a session: your reply on your turn ({\"session_id\": ID, \"envelope\": {\"type\": \"text\", \"text\": {\"text\": ...}}}), a packet, a question.", false,
			func() *hubpb.SendRequest { return &hubpb.SendRequest{} }, &hubpb.SendResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.SendRequest, ...grpc.CallOption) (*hubpb.SendResponse, error) {
				return c.Send
			}),
		unary("accept_invite", "AckInvite", "Accept an invitation to a pending session.", false,
			func() *hubpb.InviteRequest { return &hubpb.InviteRequest{} }, &hubpb.SendResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.InviteRequest, ...grpc.CallOption) (*hubpb.SendResponse, error) {
				return c.AckInvite
			}),
		unary("list_questions", "ListQuestions", "The pending questions you are asked to answer (an operator may name another answerer).", true,
			func() *hubpb.ListQuestionsRequest { return &hubpb.ListQuestionsRequest{} }, &hubpb.ListQuestionsResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.ListQuestionsRequest, ...grpc.CallOption) (*hubpb.ListQuestionsResponse, error) {
				return c.ListQuestions
			}),
		unary("answer_question", "Answer", "Answer a pending question with some of its options or free text.", false,
			func() *hubpb.AnswerRequest { return &hubpb.AnswerRequest{} }, &hubpb.SendResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.AnswerRequest, ...grpc.CallOption) (*hubpb.SendResponse, error) {
				return c.Answer
			}),
		unary("delegate", "Delegate", "On your turn, hand tasks to child sessions, blocking (your turn waits for their results) or in the background.", false,
			func() *hubpb.DelegateRequest { return &hubpb.DelegateRequest{} }, &hubpb.DelegateResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.DelegateRequest, ...grpc.CallOption) (*hubpb.DelegateResponse, error) {
				return c.Delegate
			}),
		unary("get_tree", "GetTree", "A session's tree of delegated tasks with each one's state and result: poll a task here.", true,
			func() *hubpb.GetTreeRequest { return &hubpb.GetTreeRequest{} }, &hubpb.TreeNode{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.GetTreeRequest, ...grpc.CallOption) (*hubpb.TreeNode, error) {
				return c.GetTree
			}),
		unary("close_session", "Close", "End a session you created (or any, for an operator), with a reason.", false,
			func() *hubpb.CloseRequest { return &hubpb.CloseRequest{} }, &hubpb.SendResponse{},
			func(c hubsvc.HubClient) func(context.Context, *hubpb.CloseRequest, ...grpc.CallOption) (*hubpb.SendResponse, error) {
				return c.Close
			}),
	}
}

// result is a tool's answer: the hub's answer as structured content and
// as its JSON text, or the hub's refusal as an error result.
func result(resp proto.Message, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return refusal(err), nil
	}
	b, err := hubpb.MarshalJSON(resp)
	if err != nil {
		return nil, fmt.Errorf("hubmcp: encoding the answer: %w", err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// refusal is the hub's refusal as a tool error: "REASON: message", the
// stable reason of hubd's ErrorInfo first, for the model to act on.
func refusal(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: refusalReason(err) + ": " + status.Convert(err).Message()}}}
}
