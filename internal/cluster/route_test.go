package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/session"
)

// TestClusterRouting: two nodes share the partitions and a third serves
// none (a gateway). Listings asked of any node are the cluster's, in one
// node's order, paged across nodes; a call for a session another node
// serves is run there on the caller's behalf, its refusals unchanged; a
// node that stops answering makes listings and forwarded calls fail with
// NOT_OWNER (retry shortly) rather than answer partly.
func TestClusterRouting(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and three nodes")
	}
	c := natstest.RunServer(t)
	a := startClusterNode(t, c, "a")
	b := startClusterNode(t, c, "b")
	g := startClusterNode(t, c, "g", func(cc *cluster.Config) { cc.Gateway = true })
	waitUntil(t, "two partitions each", 15*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	ca, cb, cg := rawClient(t, a.Addr()), rawClient(t, b.Addr()), rawClient(t, g.Addr())
	clients := map[string]hubsvc.HubClient{"a": ca, "b": cb, "g": cg}
	order3 := []string{"a", "b", "g"}

	// Three sessions opened on each node (each in its own partitions), and
	// three through the gateway (forwarded to a node that serves some).
	parts := []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}
	var ids []string
	for _, name := range []string{"a", "b", "g"} {
		for i := range 3 {
			resp, err := clients[name].Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1", Participants: parts,
				Labels: map[string]string{"via": name, "i": fmt.Sprint(i)}})
			if err != nil {
				t.Fatalf("open through %s: %v", name, err)
			}
			ids = append(ids, resp.GetSession().GetMeta().GetSessionId())
		}
	}
	slices.Sort(ids)
	owners := map[string][]string{}
	for _, id := range ids {
		k := a.PartitionOf(session.MustParseID(id))
		switch {
		case slices.Contains(a.Served(), k):
			owners["a"] = append(owners["a"], id)
		case slices.Contains(b.Served(), k):
			owners["b"] = append(owners["b"], id)
		}
	}
	if len(owners["a"]) < 3 || len(owners["b"]) < 3 || len(owners["a"])+len(owners["b"]) != len(ids) {
		t.Fatalf("sessions by owner: %v", owners)
	}
	// A question in a session of each node, for carol (no participant).
	var asked []string
	for _, id := range []string{owners["a"][0], owners["b"][0]} {
		if _, err := cg.Send(as("bob"), &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventQuestion,
			Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{QuestionId: "q-" + id[:8], Text: "ok?", Answerer: "carol"}}}}); err != nil {
			t.Fatalf("question through the gateway: %v", err)
		}
		asked = append(asked, id)
	}

	// Every node lists the cluster's sessions, in id order.
	for name, cl := range clients {
		for _, who := range []string{"alice", "operator", "bob"} {
			resp, err := cl.ListSessions(as(who), &hubpb.ListSessionsRequest{})
			if err != nil {
				t.Fatalf("ListSessions on %s as %s: %v", name, who, err)
			}
			if got := idsOf(resp.GetSessions()); !slices.Equal(got, ids) || resp.GetNextPageToken() != "" {
				t.Fatalf("ListSessions on %s as %s: %v (next %q), want %v", name, who, got, resp.GetNextPageToken(), ids)
			}
		}
		// Nobody else sees them; a filter applies everywhere.
		if resp, err := cl.ListSessions(as("mallory"), &hubpb.ListSessionsRequest{}); err != nil || len(resp.GetSessions()) != 0 {
			t.Fatalf("ListSessions on %s as mallory: %v, %v", name, resp, err)
		}
		if resp, err := cl.ListSessions(as("alice"), &hubpb.ListSessionsRequest{Labels: map[string]string{"via": "b"}}); err != nil || len(resp.GetSessions()) != 3 {
			t.Fatalf("ListSessions on %s by label: %v, %v", name, resp, err)
		}
		// A refusal is the same as on one node.
		if _, err := cl.ListSessions(as("alice"), &hubpb.ListSessionsRequest{PageToken: "nope"}); errorInfo(t, err).GetReason() != "MALFORMED" {
			t.Fatalf("ListSessions on %s with a bad token: %v", name, err)
		}
		qs, err := cl.ListQuestions(as("carol"), &hubpb.ListQuestionsRequest{})
		if err != nil || len(qs.GetQuestions()) != 2 || qs.GetQuestions()[0].GetSessionId() != asked[0] || qs.GetQuestions()[1].GetSessionId() != asked[1] { // oldest first
			t.Fatalf("ListQuestions on %s: %v, %v", name, qs, err)
		}
		if _, err := cl.ListQuestions(as("alice"), &hubpb.ListQuestionsRequest{Answerer: "carol"}); errorInfo(t, err).GetReason() != "PERMISSION_DENIED" {
			t.Fatalf("ListQuestions for another on %s: %v", name, err)
		}
	}
	// Pending turns: the same from every node, in session order: alice's
	// in every session but the two where bob's question holds the turn.
	for _, who := range []string{"alice", "bob"} {
		var first []string
		for _, name := range order3 {
			resp, err := clients[name].PendingTurns(as(who), &hubpb.PendingTurnsRequest{})
			if err != nil {
				t.Fatalf("PendingTurns on %s: %v", name, err)
			}
			var got []string
			for _, d := range resp.GetTurns() {
				got = append(got, d.GetEnvelope().GetSessionId())
			}
			if first == nil {
				first = got
			}
			if !slices.IsSorted(got) || !slices.Equal(got, first) {
				t.Fatalf("PendingTurns of %s on %s: %v, on %s: %v", who, name, got, order3[0], first)
			}
		}
		if want := map[string]int{"alice": len(ids) - len(asked), "bob": 0}[who]; len(first) != want {
			t.Fatalf("PendingTurns of %s: %d, want %d", who, len(first), want)
		}
	}
	// Pages of 4, each asked of the next node: the whole list once.
	var paged []string
	token, order := "", []string{"g", "a", "b"}
	for i := 0; ; i++ {
		resp, err := clients[order[i%3]].ListSessions(as("alice"), &hubpb.ListSessionsRequest{PageSize: 4, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, idsOf(resp.GetSessions())...)
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
		if i > 5 {
			t.Fatalf("paging does not end: %v", paged)
		}
	}
	if !slices.Equal(paged, ids) {
		t.Fatalf("paged: %v, want %v", paged, ids)
	}

	// A raw client sends and reads through the nodes that do not serve a
	// session: the owner runs the calls.
	for _, id := range []string{owners["a"][1], owners["b"][1]} {
		for name, cl := range clients {
			ack, err := cl.Send(as("alice"), &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventText,
				ClientMsgId: "m-" + name, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "via " + name}}}})
			if err != nil {
				t.Fatalf("send through %s: %v", name, err)
			}
			// The same client message id through another node: the same seq.
			again, err := clients[order[(slices.Index(order, name)+1)%3]].Send(as("alice"), &hubpb.SendRequest{SessionId: id,
				Envelope: &hubpb.Envelope{Type: session.EventText, ClientMsgId: "m-" + name, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "via " + name}}}})
			if err != nil || again.GetSeq() != ack.GetSeq() {
				t.Fatalf("resend through another node: %v, %v; want seq %d", again, err, ack.GetSeq())
			}
			info, err := cl.GetSession(as("bob"), &hubpb.GetSessionRequest{SessionId: id})
			if err != nil || info.GetSeq() != ack.GetSeq() {
				t.Fatalf("GetSession through %s: %v, %v; want seq %d", name, info, err, ack.GetSeq())
			}
		}
		var logs [][]byte
		for _, cl := range clients {
			lg, err := cl.ReadLog(as("alice"), &hubpb.ReadLogRequest{SessionId: id})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(lg)
			logs = append(logs, b)
		}
		if string(logs[0]) != string(logs[1]) || string(logs[1]) != string(logs[2]) || len(logs[0]) == 0 {
			t.Fatalf("ReadLog of %s differs between nodes", id)
		}
		// The owner's refusals come back unchanged: mallory may not read,
		// a closed session takes no more.
		_, err := cg.GetSession(as("mallory"), &hubpb.GetSessionRequest{SessionId: id})
		if st := status.Convert(err); st.Code() != codes.PermissionDenied || errorInfo(t, err).GetReason() != "PERMISSION_DENIED" {
			t.Fatalf("GetSession as mallory through the gateway: %v", err)
		}
	}
	// The caller's trace context reaches the envelope the owner writes.
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := metadata.AppendToOutgoingContext(as("alice"), "traceparent", tp)
	ack, err := cb.Send(traced, &hubpb.SendRequest{SessionId: owners["a"][2], Envelope: &hubpb.Envelope{Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "traced"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if lg, err := ca.ReadLog(as("alice"), &hubpb.ReadLogRequest{SessionId: owners["a"][2], FromSeq: ack.GetSeq()}); err != nil ||
		len(lg.GetEnvelopes()) != 1 || !strings.Contains(lg.GetEnvelopes()[0].GetTraceparent(), "4bf92f3577b34da6a3ce929d0e0e4736") {
		t.Fatalf("the forwarded send's envelope: %v, %v; want trace 4bf92f35...", lg, err)
	}

	// Large calls and answers: an envelope near the log's limit sent
	// through the node that does not serve its session, and a log of
	// 1.6 MB read back through it.
	big := owners["a"][2]
	sizes := []int{600_000, a.Node().MaxRecordBytes() - 2048}
	for i, n := range sizes {
		if _, err := cb.Send(as("alice"), &hubpb.SendRequest{SessionId: big, Envelope: &hubpb.Envelope{Type: session.EventText,
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: strings.Repeat(string(rune('x'+i)), n)}}}}); err != nil {
			t.Fatalf("a send of %d bytes through b: %v", n, err)
		}
	}
	lg, err := cb.ReadLog(as("bob"), &hubpb.ReadLogRequest{SessionId: big})
	if err != nil {
		t.Fatalf("reading 1.6 MB through b: %v", err)
	}
	if n := len(lg.GetEnvelopes()); n < 2 || lg.GetEnvelopes()[n-1].GetText().GetText() != strings.Repeat("y", sizes[1]) ||
		lg.GetEnvelopes()[n-2].GetText().GetText() != strings.Repeat("x", sizes[0]) {
		t.Fatalf("the log read through b: %d envelopes", n)
	}
	if _, err := cg.Close(as("alice"), &hubpb.CloseRequest{SessionId: owners["b"][2], Reason: "done"}); err != nil {
		t.Fatalf("close through the gateway: %v", err)
	}
	_, err = cg.Send(as("alice"), &hubpb.SendRequest{SessionId: owners["b"][2], Envelope: &hubpb.Envelope{Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "late"}}}})
	if errorInfo(t, err).GetReason() != "SESSION_CLOSED" {
		t.Fatalf("send to a closed session through the gateway: %v", err)
	}
	if _, err := cg.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: "0190a0b0-0000-7000-8000-000000000000"}); errorInfo(t, err).GetReason() != "UNKNOWN_SESSION" {
		t.Fatalf("GetSession of no session through the gateway: %v", err)
	}

	// b stops answering calls: listings fail rather than answer partly,
	// and a call for b's sessions says to retry shortly.
	b.Node().StopCalls()
	for name, cl := range map[string]hubsvc.HubClient{"a": ca, "g": cg} {
		_, err := cl.ListSessions(as("alice"), &hubpb.ListSessionsRequest{})
		info := errorInfo(t, err)
		if status.Code(err) != codes.Unavailable || info.GetReason() != "NOT_OWNER" || info.GetMetadata()["owner_addr"] != "" {
			t.Fatalf("ListSessions on %s with b silent: %v %v", name, err, info)
		}
	}
	// A call waits for b within its deadline, then says to retry.
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = cg.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: owners["b"][1]})
	if info := errorInfo(t, err); status.Code(err) != codes.Unavailable || info.GetReason() != "NOT_OWNER" || info.GetMetadata()["owner_addr"] != "" {
		t.Fatalf("GetSession through the gateway with b silent: %v %v", err, info)
	}
	if took := time.Since(start); took < time.Second || took > 2*time.Second {
		t.Fatalf("GetSession through the gateway with b silent answered after %v, want after retrying within its 2s deadline", took)
	}
}

func idsOf(infos []*hubpb.SessionInfo) []string {
	var out []string
	for _, s := range infos {
		out = append(out, s.GetMeta().GetSessionId())
	}
	return out
}
