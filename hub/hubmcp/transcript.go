package hubmcp

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
)

// transcriptPrefix begins a transcript's URI:
// hubd://sessions/{session_id}/transcript.
const transcriptPrefix = "hubd://sessions/"

// transcript reads a session's transcript resource: its whole log, page
// by page, one envelope per line.
func transcript(c hubsvc.HubClient, forward []string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, okPrefix := strings.CutPrefix(uri, transcriptPrefix)
		id, okSuffix := strings.CutSuffix(id, "/transcript")
		if !okPrefix || !okSuffix || id == "" || strings.Contains(id, "/") {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		ctx = outgoing(ctx, req.Extra, forward)
		var out bytes.Buffer
		for from := uint64(1); ; {
			page, err := c.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: from})
			if err != nil {
				st := status.Convert(err)
				return nil, fmt.Errorf("%s: %s", refusalReason(err), st.Message())
			}
			for _, e := range page.GetEnvelopes() {
				b, err := hubpb.MarshalJSON(e)
				if err != nil {
					return nil, err
				}
				out.Write(b)
				out.WriteByte('\n')
			}
			if page.GetNextSeq() == 0 || page.GetNextSeq() <= from || len(page.GetEnvelopes()) == 0 {
				break
			}
			from = page.GetNextSeq()
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/x-ndjson", Text: out.String()}}}, nil
	}
}

// refusalReason is the hub's stable reason of err, or its gRPC code.
func refusalReason(err error) string {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if r, ok := reasonOf(d); ok {
			return r
		}
	}
	return st.Code().String()
}
