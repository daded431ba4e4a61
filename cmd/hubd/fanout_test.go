package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/internal/wiretest"
)

// limitOf returns the "limit" and "value" of a refusal's hubd ErrorInfo.
func limitOf(err error) (limit, value string) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["limit"], info.GetMetadata()["value"]
		}
	}
	return "", ""
}

// delegateBackground delegates n conversations with c in the background
// from session parent.
func delegateBackground(ctx context.Context, c hubsvc.HubClient, parent string, n int) (*hubpb.DelegateResponse, error) {
	kids := make([]*hubpb.OpenRequest, n)
	for i := range kids {
		kids[i] = &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "c", AutoAccept: true}}}
	}
	return c.Delegate(ctx, &hubpb.DelegateRequest{SessionId: parent, Mode: "background", Children: kids})
}

// wantRefused checks a LIMIT_REACHED refusal naming flag and its value,
// as the message says and the ErrorInfo's metadata.
func wantRefused(t *testing.T, err error, flag, value string) {
	t.Helper()
	code, reason := wiretest.ReasonOf(err)
	limit, v := limitOf(err)
	if code != codes.ResourceExhausted || reason != "LIMIT_REACHED" || limit != strings.TrimPrefix(flag, "--") || v != value ||
		!strings.Contains(status.Convert(err).Message(), "the limit is "+value+" ("+flag+")") {
		t.Fatalf("got %v %s %q (limit %q = %q); want ResourceExhausted LIMIT_REACHED naming %s %s", code, reason,
			status.Convert(err).Message(), limit, v, flag, value)
	}
}

// TestE2EFanOutRefusedByDefault reproduces a fan-out on the real binary
// with its default flags: one agent's background delegations of 64
// children, repeated on one turn, then one level down in the children.
// The turn's children stop at --max-children-per-turn and the tree at
// --max-tree-sessions, each refused with LIMIT_REACHED naming the flag,
// and /metrics counts the refusals by limit.
func TestE2EFanOutRefusedByDefault(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := devClient(t, d.addr, "alice")
	root := openPair(t, alice)
	var kids []string
	for range hub.DefaultMaxChildrenPerTurn / hub.MaxChildren {
		resp, err := delegateBackground(ctx, alice, root, hub.MaxChildren)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range resp.GetChildren() {
			kids = append(kids, k.GetMeta().GetSessionId())
		}
	}
	_, err := delegateBackground(ctx, alice, root, hub.MaxChildren)
	wantRefused(t, err, "--max-children-per-turn", "256")
	// One level down: the children fan out until the tree is full.
	opened, refused := 1+len(kids), error(nil)
	for _, k := range kids {
		for range hub.DefaultMaxChildrenPerTurn / hub.MaxChildren {
			if _, refused = delegateBackground(ctx, alice, k, hub.MaxChildren); refused != nil {
				break
			}
			opened += hub.MaxChildren
		}
		if refused != nil {
			break
		}
	}
	wantRefused(t, refused, "--max-tree-sessions", "1000")
	if opened > hub.DefaultMaxTreeSessions || opened+hub.MaxChildren <= hub.DefaultMaxTreeSessions {
		t.Fatalf("%d sessions opened before the tree was full", opened)
	}
	resp, err := http.Get("http://" + d.httpAddr(t) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`hubd_limit_refusals_total{limit="max-children-per-turn"} 1`, `hubd_limit_refusals_total{limit="max-tree-sessions"} 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics has no %s:\n%s", want, grepLines(string(b), "hubd_limit"))
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServeLimitFlags: the limits' flags reach the hub's configuration,
// their defaults the hub's, 0 meaning none; a negative one, or a request
// limit below the envelope limit, is refused at start.
func TestServeLimitFlags(t *testing.T) {
	parse := func(args ...string) (server.Config, error) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		var f serveFlags
		f.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.config(zerolog.Nop())
	}
	cfg, err := parse()
	d, fd := hub.Config{}.WithDefaults(), feed.Config{}.WithDefaults()
	if err != nil || cfg.Hub.MaxOpenPerAgent != d.MaxOpenPerAgent || cfg.Hub.MaxTreeSessions != d.MaxTreeSessions ||
		cfg.Hub.MaxChildrenPerTurn != d.MaxChildrenPerTurn || cfg.Feed.SubscriberBufferBytes != fd.SubscriberBufferBytes ||
		cfg.Feed.AgentBufferBytes != fd.AgentBufferBytes || cfg.Feed.TotalBufferBytes != fd.TotalBufferBytes || cfg.MaxMsgBytes != 0 {
		t.Fatalf("defaults: %+v %+v, request %d, %v", cfg.Hub, cfg.Feed, cfg.MaxMsgBytes, err)
	}
	cfg, err = parse("--max-open-per-agent", "0", "--max-tree-sessions", "5", "--max-children-per-turn", "7",
		"--agent-buffer-bytes", "0", "--total-buffer-bytes", "1000000", "--max-request-bytes", "2000000")
	if err != nil || cfg.Hub.MaxOpenPerAgent != -1 || cfg.Hub.MaxTreeSessions != 5 || cfg.Hub.MaxChildrenPerTurn != 7 ||
		cfg.Feed.AgentBufferBytes != -1 || cfg.Feed.TotalBufferBytes != 1000000 || cfg.MaxMsgBytes != 2000000 {
		t.Fatalf("set: %+v %+v, request %d, %v", cfg.Hub, cfg.Feed, cfg.MaxMsgBytes, err)
	}
	for _, args := range [][]string{{"--max-tree-sessions", "-1"}, {"--agent-buffer-bytes", "-5"}, {"--max-request-bytes", "1000"}} {
		if _, err := parse(args...); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v; want a refusal naming the flag", args, err)
		}
	}
}
