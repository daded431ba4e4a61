package hubgrpc_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/session"
)

// field is a length-delimited field num holding b.
func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// deepValue is the wire form of a google.protobuf.Value: a null inside
// levels nested lists. It is written from the outside in, never built as
// a message (nor marshalled, whose recursion would be as deep).
func deepValue(levels int) []byte {
	// v[i] is the size of the Value i lists deep from the null, l[i] of its
	// ListValue.
	v, l := make([]int, levels+1), make([]int, levels+1)
	v[0] = 2 // null_value: tag, 0
	for i := 1; i <= levels; i++ {
		l[i] = 1 + protowire.SizeVarint(uint64(v[i-1])) + v[i-1]
		v[i] = 1 + protowire.SizeVarint(uint64(l[i])) + l[i]
	}
	b := make([]byte, 0, v[levels])
	for i := levels; i >= 1; i-- {
		b = protowire.AppendVarint(protowire.AppendTag(b, 6, protowire.BytesType), uint64(l[i]))   // Value.list_value
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.BytesType), uint64(v[i-1])) // ListValue.values
	}
	return protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 0) // Value.null_value
}

// wideValue is the wire form of a list of n nulls.
func wideValue(n int) []byte {
	var list []byte
	for range n {
		list = append(list, field(1, []byte{0x08, 0x00})...)
	}
	return field(6, list)
}

// contextSend is the wire form of a SendRequest to session id of a
// context_set envelope setting "k" to the value whose wire form is value.
func contextSend(id string, value []byte) []byte {
	entry := append(field(1, []byte("k")), field(2, value)...)
	env := append(field(6, []byte(session.EventContextSet)), field(12, field(3, entry))...)
	return append(field(1, []byte(id)), field(2, env)...)
}

// TestDeepValueNotBuilt: a request of 4 MB holding a JSON value nested
// half a million deep costs the codec what it reads, not the value: it is
// refused from its wire bytes (marked), nothing of it built. Decoding it
// built every level (tens of MB, with a stack as deep) before the check
// refused it.
func TestDeepValueNotBuilt(t *testing.T) {
	b := contextSend("0194a3b0-0000-7000-8000-000000000001", deepValue(480_000))
	if len(b) < 3<<20 {
		t.Fatalf("the request is %d bytes", len(b))
	}
	codec := hubgrpc.Codec()
	decode := func() *hubpb.SendRequest {
		req := &hubpb.SendRequest{}
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	decode() // warm
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req := decode()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("decoding a %d-byte deep request allocated %d bytes", len(b), got)
	}
	if req.GetEnvelope() != nil || req.GetSessionId() != "" {
		t.Errorf("the deep request was built: %v", req.GetSessionId())
	}
}

// BenchmarkDecodeDeepValue reports what the codec allocates for a 4 MB
// request holding a value nested half a million deep.
func BenchmarkDecodeDeepValue(b *testing.B) {
	data := contextSend("0194a3b0-0000-7000-8000-000000000001", deepValue(480_000))
	codec := hubgrpc.Codec()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for range b.N {
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &hubpb.SendRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// rawCodec sends requests given as wire bytes as they are.
type rawCodec struct{}

type rawRequest []byte

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(rawRequest); ok {
		return mem.BufferSlice{mem.SliceBuffer(r)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// limitInfo is a status's hubd ErrorInfo metadata.
func limitInfo(err error) map[string]string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	return nil
}

// TestWireLimits sends requests past the hub's limits on what it decodes
// over gRPC: each is refused with its reason and a message naming the
// limit, and writes nothing; a request past gRPC's own cap is refused by
// gRPC without an ErrorInfo.
func TestWireLimits(t *testing.T) {
	f := start(t, "") // 4096-byte envelopes: requests of 4 MiB + 64 KiB
	alice := f.agent("alice")
	id := openConversation(t, alice)
	conn := f.dial(hubgrpc.AgentHeader, "alice")
	defer conn.Close()
	send := func(b []byte) error {
		return conn.Invoke(context.Background(), "/hubd.v1.Hub/Send", rawRequest(b), &hubpb.SendResponse{}, grpc.ForceCodecV2(rawCodec{}))
	}
	seq := func() uint64 {
		s, err := alice.GetSession(context.Background(), &hubpb.GetSessionRequest{SessionId: id})
		if err != nil {
			t.Fatal(err)
		}
		return s.GetSeq()
	}
	before := seq()
	text := func(n int) []byte {
		env := append(field(6, []byte("text")), field(10, field(1, []byte(strings.Repeat("x", n))))...)
		return append(field(1, []byte(id)), field(2, env)...)
	}
	for _, tc := range []struct {
		name         string
		req          []byte
		code         codes.Code
		reason, msg  string
		limit, value string
	}{
		{"65 deep", contextSend(id, deepValue(65)), codes.InvalidArgument, "MALFORMED", "nested deeper than 64", "", ""},
		{"400,000 deep", contextSend(id, deepValue(400_000)), codes.InvalidArgument, "MALFORMED", "nested deeper than 64", "", ""},
		{"more values than an envelope holds", contextSend(id, wideValue(1100)), codes.ResourceExhausted, "TOO_LARGE",
			"more than 1024 JSON values", "max-envelope-bytes", "4096"},
		{"over the hub's request limit", text(5 << 20), codes.ResourceExhausted, "TOO_LARGE",
			"the request is 5242", "max-request-bytes", "4259840"},
		{"over gRPC's own cap", text(9 << 20), codes.ResourceExhausted, "", "grpc: received message larger than max", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(tc.req)
			code, reason := wiretest.ReasonOf(err)
			md := limitInfo(err)
			if code != tc.code || reason != tc.reason || !strings.Contains(status.Convert(err).Message(), tc.msg) ||
				md["limit"] != tc.limit || md["value"] != tc.value {
				t.Fatalf("got %v %s %q %v; want %v %s with %q, limit %q = %q", code, reason, status.Convert(err).Message(), md,
					tc.code, tc.reason, tc.msg, tc.limit, tc.value)
			}
			if tc.limit != "" && !strings.Contains(status.Convert(err).Message(), "the limit is "+tc.value+" (--"+tc.limit+")") {
				t.Fatalf("the message does not name the limit: %q", status.Convert(err).Message())
			}
		})
	}
	if after := seq(); after != before {
		t.Fatalf("refused requests wrote: seq %d → %d", before, after)
	}
	// Within the limits the same shapes pass.
	if err := send(contextSend(id, deepValue(64))); err != nil {
		t.Fatalf("a value 64 deep: %v", err)
	}
	if err := send(contextSend(id, wideValue(500))); err != nil {
		t.Fatalf("500 values: %v", err)
	}
}

// TestWireLimitsOnAStream: a agent-stream frame past the request limit is
// answered with TOO_LARGE naming it, one with a value nested too deep
// with MALFORMED, neither decoded, and the stream goes on.
func TestWireLimitsOnAStream(t *testing.T) {
	f := start(t, "")
	alice := f.agent("alice")
	id := openConversation(t, alice)
	conn := f.dial(hubgrpc.AgentHeader, "alice")
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/hubd.v1.Hub/AgentStream", grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&hubpb.HubFrame{}); err != nil { // ready
		t.Fatal(err)
	}
	frame := func(ref uint64, env []byte) []byte {
		send := append(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), ref), field(2, []byte(id))...)
		return field(1, append(send, field(3, env)...)) // AgentFrame.send
	}
	text := func(s string) []byte { return append(field(6, []byte("text")), field(10, field(1, []byte(s)))...) }
	deep := append(field(6, []byte(session.EventContextSet)), field(12, field(3, append(field(1, []byte("k")), field(2, deepValue(100_000))...)))...)
	for _, f := range [][]byte{frame(1, text(strings.Repeat("x", 5<<20))), frame(2, deep), frame(3, text("fine"))} {
		if err := s.SendMsg(rawRequest(f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []struct {
		ref    uint64
		reason hubpb.Reason
	}{{1, hubpb.Reason_TOO_LARGE}, {2, hubpb.Reason_MALFORMED}, {3, 0}} {
		got := &hubpb.HubFrame{}
		if err := s.RecvMsg(got); err != nil {
			t.Fatal(err)
		}
		ack := got.GetAck()
		if ack.GetRef() != want.ref || ack.GetError().GetReason() != want.reason ||
			(want.reason == hubpb.Reason_TOO_LARGE && (ack.GetError().GetMetadata()["limit"] != "max-request-bytes" || !strings.Contains(ack.GetError().GetMessage(), "(--max-request-bytes)"))) {
			t.Fatalf("ack %v; want ref %d with %v", got, want.ref, want.reason)
		}
	}
}
