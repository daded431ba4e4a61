package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/wiretest"
)

// openPair opens a conversation of alice with bob (auto-accepting) and
// returns its id.
func openPair(t *testing.T, alice hubsvc.HubClient) string {
	t.Helper()
	resp, err := alice.Open(context.Background(), &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetSession().GetMeta().GetSessionId()
}

// TestE2EOversizedEnvelopeReason: an envelope of 2 MiB under the default
// 1 MiB limit reaches the hub and is refused with TOO_LARGE naming the
// limit (gRPC refused it first, without a reason); one of 5 MiB, over the
// hub's request limit, is TOO_LARGE naming --max-request-bytes in its
// ErrorInfo; one beyond what gRPC reads at all is ErrTooLarge in agentsdk.
func TestE2EOversizedEnvelopeReason(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	ctx := context.Background()
	sdk, err := agentsdk.Dial(ctx, d.addr, agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Close()
	id := openPair(t, sdk.Raw())
	_, err = sdk.Raw().Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text(strings.Repeat("x", 2<<20))})
	if code, reason := wiretest.ReasonOf(err); code != codes.ResourceExhausted || reason != "TOO_LARGE" ||
		!strings.Contains(status.Convert(err).Message(), "the limit is 1048576") {
		t.Errorf("2 MiB envelope: %v %s %q; want ResourceExhausted TOO_LARGE naming the limit", code, reason, status.Convert(err).Message())
	}
	// Over the hub's request limit (4 MiB + 64 KiB) but within what gRPC
	// reads (twice that): TOO_LARGE with an ErrorInfo naming the limit.
	_, err = sdk.SendText(ctx, id, strings.Repeat("x", 5<<20))
	var ae *agentsdk.Error
	if !errors.Is(err, agentsdk.ErrTooLarge) || !errors.As(err, &ae) || ae.Reason != "TOO_LARGE" || ae.Metadata["limit"] != "max-request-bytes" ||
		ae.Metadata["value"] != "4259840" || !strings.Contains(ae.Message, "the limit is 4259840 (--max-request-bytes)") {
		t.Errorf("5 MiB envelope through agentsdk: %v; want ErrTooLarge naming --max-request-bytes", err)
	}
	// Past gRPC's own cap gRPC refuses it, from its length, with no
	// ErrorInfo: agentsdk still says ErrTooLarge, with gRPC's figures.
	_, err = sdk.SendText(ctx, id, strings.Repeat("x", 9<<20))
	if !errors.Is(err, agentsdk.ErrTooLarge) || !errors.As(err, &ae) || ae.Reason != "" ||
		!strings.Contains(ae.Message, "grpc: received message larger than max") || !strings.Contains(ae.Message, "vs. 8519680)") {
		t.Errorf("9 MiB envelope through agentsdk: %v; want ErrTooLarge with gRPC's message", err)
	}
	if _, err := sdk.SendText(ctx, id, "still fine"); err != nil {
		t.Errorf("a send after the refusals: %v", err)
	}
}

// TestE2EEnvelopeLimitFitsTheLog: an envelope limit above the log's
// default batch makes the log take it (a 2.5 MB envelope under 3,000,000
// was SESSION_FAILED for ever), and one the log cannot take in one write
// is refused at start.
func TestE2EEnvelopeLimitFitsTheLog(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "", "--max-envelope-bytes", "3000000")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := devClient(t, d.addr, "alice")
	id := openPair(t, alice)
	big := strings.Repeat("y", 2_500_000)
	ack, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text(big)})
	if err != nil {
		t.Fatalf("2.5 MB envelope under --max-envelope-bytes 3000000: %v", err)
	}
	_, err = alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: text(big + big)})
	if _, reason := wiretest.ReasonOf(err); reason != "TOO_LARGE" {
		t.Errorf("5 MB envelope: %v", err)
	}
	d.stop(15)
	d = startDaemon(t, data, "", "--max-envelope-bytes", "3000000")
	// A page holds the first envelope whatever its size (ReadLog's 2 MiB
	// cap applies past it): read from the big one's seq.
	log, err := devClient(t, d.addr, "alice").ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: ack.GetSeq()})
	if err != nil || len(log.GetEnvelopes()) != 1 || log.GetEnvelopes()[0].GetText().GetText() != big || log.GetNextSeq() != 0 {
		t.Fatalf("after a restart the 2.5 MB envelope is not the last: %d envelopes, next %d, %v", len(log.GetEnvelopes()), log.GetNextSeq(), err)
	}
	d.stop(15)
	code, _, errs := hubd(t, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--max-envelope-bytes", "40000000")
	if code != 2 || !strings.Contains(errs, "--max-envelope-bytes 40000000") || !strings.Contains(errs, "more than the log takes in one write") {
		t.Errorf("serve --max-envelope-bytes 40000000: exit %d\n%s", code, errs)
	}
}

// rawCodec sends pre-encoded requests as they are (protobuf's encoder
// would refuse invalid UTF-8 before it left the client).
type rawCodec struct{}

type rawRequest struct{ data []byte }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*rawRequest); ok {
		return mem.BufferSlice{mem.SliceBuffer(r.data)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// corrupt encodes m with the first "PLACEHOLDER" in it made invalid UTF-8.
func corrupt(t *testing.T, m proto.Message) *rawRequest {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("PLACEHOLDER")) {
		t.Fatal("no PLACEHOLDER to corrupt")
	}
	return &rawRequest{bytes.Replace(b, []byte("PLACEHOLDER"), []byte("\xffLACEHOLDE\xfe"), 1)}
}

// TestE2EInvalidUTF8Reason: requests with invalid UTF-8 in a string (which
// gRPC answered with Internal before hubd saw them) are MALFORMED, naming
// the field, and write nothing.
func TestE2EInvalidUTF8Reason(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	ctx := context.Background()
	alice := devClient(t, d.addr, "alice")
	id := openPair(t, alice)
	conn, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	md := metadata.AppendToOutgoingContext(ctx, hubgrpc.AgentHeader, "alice")
	for _, tc := range []struct {
		name, method string
		req          proto.Message
		field        string
	}{
		{"text", hubsvc.Hub_Send_FullMethodName, &hubpb.SendRequest{SessionId: id, Envelope: text("PLACEHOLDER")}, "envelope.text.text is not valid UTF-8"},
		{"context value", hubsvc.Hub_Send_FullMethodName, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "context_set",
			Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"k": structpb.NewStringValue("PLACEHOLDER")}}}}},
			`envelope.context_set.set["k"].string_value is not valid UTF-8`},
		{"label", hubsvc.Hub_Open_FullMethodName, &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "bob"}},
			Labels: map[string]string{"team": "PLACEHOLDER"}}, `labels["team"] is not valid UTF-8`},
		{"close reason", hubsvc.Hub_Close_FullMethodName, &hubpb.CloseRequest{SessionId: id, Reason: "PLACEHOLDER"}, "reason is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := conn.Invoke(md, tc.method, corrupt(t, tc.req), &hubpb.SendResponse{})
			code, reason := wiretest.ReasonOf(err)
			if code != codes.InvalidArgument || reason != "MALFORMED" || !strings.Contains(status.Convert(err).Message(), tc.field) {
				t.Errorf("got %v %s %q; want InvalidArgument MALFORMED naming %q", code, reason, status.Convert(err).Message(), tc.field)
			}
		})
	}
	err = conn.Invoke(md, hubsvc.Hub_Send_FullMethodName, &rawRequest{[]byte{0x0a, 0xff, 0xff}}, &hubpb.SendResponse{})
	if code, reason := wiretest.ReasonOf(err); code != codes.InvalidArgument || reason != "MALFORMED" || !strings.Contains(status.Convert(err).Message(), "not a hubd.v1.SendRequest") {
		t.Errorf("bytes that are no request: %v %s %q", code, reason, status.Convert(err).Message())
	}
	info, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || info.GetSeq() != 2 || info.GetState() != "OPEN" {
		t.Errorf("after the refusals: seq %d, state %s, %v; want seq 2, OPEN", info.GetSeq(), info.GetState(), err)
	}
	if list, err := alice.ListSessions(ctx, &hubpb.ListSessionsRequest{}); err != nil || len(list.GetSessions()) != 1 {
		t.Errorf("ListSessions: %v, %d sessions", err, len(list.GetSessions()))
	}
}

// rawCall makes a unary gRPC call over a bare HTTP/2 connection, with
// header values gRPC's client would refuse to send, and returns the
// status.
func rawCall(t *testing.T, addr, method string, req proto.Message, header map[string]string) *status.Status {
	t.Helper()
	msg, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	protocols := &http.Protocols{}
	protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge, as gRPC speaks
	tr := &http.Transport{Protocols: protocols}
	defer tr.CloseIdleConnections()
	r, err := http.NewRequest(http.MethodPost, "http://"+addr+method, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("content-type", "application/grpc")
	r.Header.Set("te", "trailers")
	for k, v := range header {
		r.Header[k] = []string{v}
	}
	resp, err := tr.RoundTrip(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	get := func(k string) string {
		if v := resp.Trailer.Get(k); v != "" {
			return v
		}
		return resp.Header.Get(k)
	}
	if det := get("grpc-status-details-bin"); det != "" {
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(det, "="))
		if err != nil {
			t.Fatal(err)
		}
		p := &spb.Status{}
		if err := proto.Unmarshal(raw, p); err != nil {
			t.Fatal(err)
		}
		return status.FromProto(p)
	}
	n, err := strconv.Atoi(get("grpc-status"))
	if err != nil {
		t.Fatalf("no grpc-status: %v %v", resp.Header, resp.Trailer)
	}
	return status.New(codes.Code(n), get("grpc-message"))
}

// TestE2ENonUTF8AgentName: an agent name that is not UTF-8, or has a
// bidirectional override, sent in raw HTTP/2 metadata (development mode)
// is refused as unauthenticated; no session is made and listings stay
// whole.
func TestE2ENonUTF8AgentName(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	open := &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}}
	if st := rawCall(t, d.addr, hubsvc.Hub_Open_FullMethodName, open, map[string]string{"x-hubd-agent": "carol"}); st.Code() != codes.OK {
		t.Fatalf("the raw call itself: %v", st)
	}
	for _, name := range []string{"al\xffice", "evil\u202egnp", "zero\u200bwidth"} {
		st := rawCall(t, d.addr, hubsvc.Hub_Open_FullMethodName, open, map[string]string{"x-hubd-agent": name})
		if code, reason := wiretest.ReasonOf(st.Err()); code != codes.Unauthenticated || reason != "UNAUTHENTICATED" {
			t.Errorf("open as %q: %v %s %q; want Unauthenticated UNAUTHENTICATED", name, code, reason, st.Message())
		}
	}
	list, err := devClient(t, d.addr, "operator").ListSessions(context.Background(), &hubpb.ListSessionsRequest{})
	if err != nil || len(list.GetSessions()) != 1 || list.GetSessions()[0].GetMeta().GetCreator() != "carol" {
		t.Fatalf("ListSessions: %v %v; want carol's session alone", err, list)
	}
}

// TestE2EHTTPTooLarge: over HTTP a body past the request limit is refused
// with 413 and TOO_LARGE naming the limit, as a JSON value nested too deep
// is with MALFORMED, neither decoded; nothing is written.
func TestE2EHTTPTooLarge(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	id := openPair(t, devClient(t, d.addr, "alice"))
	url := "http://" + d.httpAddr(t) + "/v1/sessions/" + id + "/envelopes"
	for _, tc := range []struct {
		name, body, reason, msg string
		status                  int
	}{
		{"5 MiB", `{"type":"text","text":{"text":"` + strings.Repeat("x", 5<<20) + `"}}`, "TOO_LARGE", "the limit is 4259840 (--max-request-bytes)", 413},
		{"a million deep", `{"type":"context_set","context_set":{"set":{"k":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}}}`,
			"MALFORMED", "nested deeper than 80", 400},
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hubd-Agent", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), `"reason":"`+tc.reason+`"`) || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s: %d %.300s", tc.name, resp.StatusCode, b)
		}
	}
	info, err := devClient(t, d.addr, "alice").GetSession(context.Background(), &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || info.GetSeq() != 2 {
		t.Fatalf("after the refusals: seq %d, %v", info.GetSeq(), err)
	}
}
