package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
)

// A listing (ListSessions, ListQuestions, PendingTurns), and an erasure
// by thread or participant, is gathered: the
// call, with the caller's identity, goes to every node that owns a
// partition (their node services), each answers from the partitions it
// serves and says which (a trailer), and the asked node merges the
// answers in the order and paging of one node. A listing that would miss
// a partition (it has no owner at the moment, or its node did not answer
// within gatherTimeout) fails with NOT_OWNER and no owner address: retry
// shortly. It is never silently partial.

// gatherTimeout bounds the wait for the other nodes' parts of a listing:
// they answer from memory.
const gatherTimeout = 5 * time.Second

// listPart is one node's answer to a gathered listing.
type listPart struct {
	node   string
	resp   proto.Message
	served []int
	err    error
}

// gather runs a listing on every node that owns a partition (this one
// locally) and merges their answers; a partition no answer covers makes
// NOT_OWNER (retry shortly) rather than a partial listing.
func (n *Node) gather(ctx context.Context, req proto.Message, method string, handler grpc.UnaryHandler) (any, error) {
	peerReq := proto.Clone(req) // the asked node's handler runs on req meanwhile
	var peers []string
	for _, o := range n.leases.Owners() { //hubd:orderless sorted below
		if o.NodeID != n.cfg.NodeID && !slices.Contains(peers, o.NodeID) {
			peers = append(peers, o.NodeID)
		}
	}
	slices.Sort(peers)
	gctx, cancel := context.WithTimeout(ctx, gatherTimeout)
	defer cancel()
	parts := make([]listPart, len(peers)+1)
	var wg sync.WaitGroup
	wg.Add(len(peers))
	for i, p := range peers {
		go func() {
			defer wg.Done()
			parts[i+1].node = p
			parts[i+1].resp, parts[i+1].served, parts[i+1].err = n.ask(gctx, ctx, p, method, peerReq)
		}()
	}
	before := n.servedNow()
	resp, err := handler(ctx, req)
	parts[0] = listPart{node: n.cfg.NodeID, served: intersect(before, n.servedNow()), err: err}
	if err == nil {
		parts[0].resp = resp.(proto.Message)
	}
	if err != nil {
		// The same request is refused alike on every node: the local
		// refusal is the answer.
		cancel()
		wg.Wait()
		return nil, err
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, hubgrpc.Status(n.logger, method, ctx.Err())
	}
	covered := make([]bool, len(n.serving))
	var silent []string
	var answered []proto.Message
	for _, p := range parts {
		if p.err != nil {
			silent = append(silent, fmt.Sprintf("%s: %v", p.node, p.err))
			continue
		}
		for _, k := range p.served {
			if k >= 0 && k < len(covered) {
				covered[k] = true
			}
		}
		answered = append(answered, p.resp)
	}
	var missing []int
	for k, ok := range covered {
		if !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		what := "listing"
		if method == methodErase {
			what = "erasing (what was served is erased: retry for the rest)"
		}
		why := fmt.Sprintf("%s across the cluster: partitions %v are not served at the moment (changing hands) or their node did not answer within %v", what, missing, gatherTimeout)
		if len(silent) > 0 {
			why += " (" + strings.Join(silent, "; ") + ")"
			n.logger.Warn().Strs("nodes", silent).Str("method", method).Msg("listing: nodes did not answer")
		}
		return nil, hubgrpc.Status(n.logger, method, &hub.NotOwnerError{Partition: missing[0], Why: why + "; retry shortly"})
	}
	switch method {
	case methodErase:
		return mergeErased(answered), nil
	case methodListSessions:
		return mergeSessions(req.(*hubpb.ListSessionsRequest), answered), nil
	case methodListQuestions:
		return mergeQuestions(answered), nil
	default:
		return mergeTurns(answered), nil
	}
}

// mergeErased merges the nodes' parts of an erasure by thread or
// participant, by session id.
func mergeErased(parts []proto.Message) *hubpb.EraseResponse {
	var all []*hubpb.ErasedSession
	for _, p := range parts {
		all = append(all, p.(*hubpb.EraseResponse).GetSessions()...)
	}
	slices.SortStableFunc(all, func(a, b *hubpb.ErasedSession) int { return cmp.Compare(a.GetSessionId(), b.GetSessionId()) })
	all = slices.CompactFunc(all, func(a, b *hubpb.ErasedSession) bool { return a.GetSessionId() == b.GetSessionId() })
	return &hubpb.EraseResponse{Sessions: all}
}

// mergeSessions merges the nodes' pages of a listing into one page as one
// node gives it: by session id, at most the page size, the next page's
// token the last id when any node had more.
func mergeSessions(req *hubpb.ListSessionsRequest, parts []proto.Message) *hubpb.ListSessionsResponse {
	limit := int(req.GetPageSize())
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var all []*hubpb.SessionInfo
	more := false
	for _, p := range parts {
		r := p.(*hubpb.ListSessionsResponse)
		all = append(all, r.GetSessions()...)
		more = more || r.GetNextPageToken() != ""
	}
	slices.SortStableFunc(all, func(a, b *hubpb.SessionInfo) int {
		return cmp.Compare(a.GetMeta().GetSessionId(), b.GetMeta().GetSessionId())
	})
	// A partition changing hands during the call may be listed by both
	// nodes: keep the later state.
	uniq := all[:0]
	for _, x := range all {
		if k := len(uniq) - 1; k >= 0 && uniq[k].GetMeta().GetSessionId() == x.GetMeta().GetSessionId() {
			if x.GetSeq() > uniq[k].GetSeq() {
				uniq[k] = x
			}
			continue
		}
		uniq = append(uniq, x)
	}
	all = uniq
	if len(all) > limit {
		all, more = all[:limit], true
	}
	out := &hubpb.ListSessionsResponse{Sessions: all}
	if more && len(all) > 0 {
		out.NextPageToken = all[len(all)-1].GetMeta().GetSessionId()
	}
	return out
}

// mergeQuestions merges the nodes' pending questions, oldest first (ties
// by session id, then as their session lists them), as one node orders
// them.
func mergeQuestions(parts []proto.Message) *hubpb.ListQuestionsResponse {
	var all []*hubpb.PendingQuestion
	seen := map[[2]string]bool{}
	for _, p := range parts {
		for _, q := range p.(*hubpb.ListQuestionsResponse).GetQuestions() {
			k := [2]string{q.GetSessionId(), q.GetEnvelope().GetId()}
			if !seen[k] {
				seen[k] = true
				all = append(all, q)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b *hubpb.PendingQuestion) int {
		if c := a.GetEnvelope().GetAcceptedAt().AsTime().Compare(b.GetEnvelope().GetAcceptedAt().AsTime()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetSessionId(), b.GetSessionId())
	})
	return &hubpb.ListQuestionsResponse{Questions: all}
}

// mergeTurns merges the nodes' pending turns by session id, as one node
// orders them.
func mergeTurns(parts []proto.Message) *hubpb.PendingTurnsResponse {
	var all []*hubpb.Delivery
	for _, p := range parts {
		all = append(all, p.(*hubpb.PendingTurnsResponse).GetTurns()...)
	}
	slices.SortStableFunc(all, func(a, b *hubpb.Delivery) int {
		return cmp.Compare(a.GetEnvelope().GetSessionId(), b.GetEnvelope().GetSessionId())
	})
	all = slices.CompactFunc(all, func(a, b *hubpb.Delivery) bool {
		return a.GetEnvelope().GetSessionId() == b.GetEnvelope().GetSessionId()
	})
	return &hubpb.PendingTurnsResponse{Turns: all}
}

// ask runs a listing on node p for the client of from, and returns its
// answer and the partitions it served throughout.
func (n *Node) ask(ctx, from context.Context, p, method string, req proto.Message) (proto.Message, []int, error) {
	cc, err := n.peer(p)
	if err != nil {
		return nil, nil, err
	}
	reply := n.methods[method].reply.New().Interface()
	var trailer metadata.MD
	if err := cc.Invoke(outgoing(ctx, from), method, req, reply, grpc.Trailer(&trailer)); err != nil {
		return nil, nil, err
	}
	served, err := parseInts(trailer.Get(mdServed))
	if err != nil {
		return nil, nil, fmt.Errorf("node %s's served partitions: %w", p, err)
	}
	return reply, served, nil
}

// servedNow returns the partitions served (hydrated) at this moment,
// ascending.
func (n *Node) servedNow() []int {
	var out []int
	for k := range n.serving {
		if n.serving[k].Load() {
			out = append(out, k)
		}
	}
	return out
}

// intersect returns the partitions in both ascending lists.
func intersect(a, b []int) []int {
	var out []int
	for _, k := range a {
		if _, found := slices.BinarySearch(b, k); found {
			out = append(out, k)
		}
	}
	return out
}

// formatInts writes partitions as a trailer value: "0,3,7".
func formatInts(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ",")
}

// parseInts reads formatInts's values.
func parseInts(vs []string) ([]int, error) {
	var out []int
	for _, v := range vs {
		for _, f := range strings.Split(v, ",") {
			if f == "" {
				continue
			}
			k, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", v, err)
			}
			out = append(out, k)
		}
	}
	return out, nil
}
