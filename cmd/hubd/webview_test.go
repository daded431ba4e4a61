package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// chromium returns the path of a Chromium (or Chrome) binary: $HUBD_CHROMIUM,
// or the first of the usual names on PATH. The browser tests skip, saying
// so, only when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HUBD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium binary found (install Debian's chromium, or set HUBD_CHROMIUM): the web view's browser tests are skipped")
	return ""
}

// artifacts is where the browser tests write their screenshots:
// $HUBD_ARTIFACTS, or a temporary directory (logged).
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HUBD_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a headless Chromium and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// act runs browser actions within d, failing the test with what it was
// doing.
func act(t *testing.T, ctx context.Context, d time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, ctx, d, what, chromedp.Steps(steps...))
}

// get runs a browser action that returns a value within d.
func get[T any](t *testing.T, ctx context.Context, d time.Duration, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// textOf is the text of the first element sel (CSS) matches.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, 5*time.Second, "the text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// screenshot writes a full-page PNG to the artifacts directory.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := get(t, ctx, 10*time.Second, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// httpAddr is the HTTP address of the daemon's "hubd listening" line.
func (d *daemon) httpAddr(t *testing.T) string {
	t.Helper()
	for _, l := range strings.Split(d.log(), "\n") {
		var line struct{ Message, HTTP string }
		if json.Unmarshal([]byte(l), &line) == nil && line.Message == "hubd listening" && line.HTTP != "" {
			return line.HTTP
		}
	}
	t.Fatalf("hubd serves no HTTP:\n%s", d.log())
	return ""
}

// graphJSON is a two-agent workflow: alice hands to bob, bob to alice.
const graphJSON = `{"version":1,"initial_speaker":"alice","transitions":[` +
	`{"when":{"name":"from_speaker","args":{"agent_id":"alice"}},"then":{"name":"agent","args":{"agent_id":"bob"}}},` +
	`{"when":{"name":"from_speaker","args":{"agent_id":"bob"}},"then":{"name":"agent","args":{"agent_id":"alice"}}}],` +
	`"default_target":{"name":"terminate","args":{"reason":"done"}}}`

// TestWebView drives the web view of the real hubd in headless Chromium:
// sign-in by name in development mode, the sessions list, a session page
// where a turn sent over gRPC appears live within a second and the graph
// moves to the new speaker, a question answered from the page, and a
// close with its reason; screenshots of the list and the session page are
// written as artifacts.
func TestWebView(t *testing.T) {
	ctx := browser(t)
	out := artifacts(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	open := post(t, base+"/v1/sessions", "alice", `{"type":"workflow@1","participants":[{"name":"bob","auto_accept":true}],`+
		`"labels":{"demo":"webview"},"graph":`+graphJSON+`}`)
	id := open["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)
	other := post(t, base+"/v1/sessions", "carol", `{"type":"conversation@1","participants":[{"name":"dave","auto_accept":true}]}`)
	otherID := other["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)
	bg := context.Background()
	alice, err := agentsdk.Dial(bg, d.addr, agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := agentsdk.Dial(bg, d.addr, agentsdk.Options{Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()

	row := fmt.Sprintf(`#sessions tr[data-session=%q]`, id)
	act(t, ctx, 10*time.Second, "sign in by name",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#signin-name`)),
		chromedp.SetValue(chromedp.CSS(`#signin-name input[name=agent]`), "operator"),
		chromedp.Submit(chromedp.CSS(`#signin-name`)),
		chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#sessions tr[data-session=%q]`, otherID))),
	)
	who, openCount := textOf(t, ctx, `#who`), textOf(t, ctx, `#counts [data-state=OPEN] b`)
	if who != "operator (operator)" || openCount != "2" {
		t.Errorf("signed in as %q; %s open sessions counted, want 2", who, openCount)
	}
	// A filter by label leaves the one session, and counts it alone.
	act(t, ctx, 5*time.Second, "filter by label",
		chromedp.SendKeys(chromedp.CSS(`#filters input[name=label]`), "demo=webview"),
		chromedp.WaitNotPresent(chromedp.CSS(fmt.Sprintf(`#sessions tr[data-session=%q]`, otherID))),
		chromedp.WaitVisible(chromedp.CSS(row)),
	)
	if openCount = textOf(t, ctx, `#counts [data-state=all] b`); openCount != "1" {
		t.Errorf("%s sessions counted under the label filter, want 1", openCount)
	}
	screenshot(t, ctx, out, "webview-list.png")

	act(t, ctx, 10*time.Second, "open the session page",
		chromedp.Click(chromedp.CSS(row+` a`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_opened]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-live.on`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph g.node.current[data-node=alice]`)),
	)
	// A turn over gRPC appears on the open page within a second, and the
	// graph moves to bob by the transition that fired.
	if _, err := alice.SendText(bg, id, "hello bob, over to you"); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	act(t, ctx, time.Second, "the turn appears live within 1 s",
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=text]`)))
	t.Logf("the turn appeared on the page %v after Send returned", time.Since(sent).Round(time.Millisecond))
	act(t, ctx, 5*time.Second, "the graph marks the new speaker",
		chromedp.WaitVisible(chromedp.CSS(`#graph g.node.current[data-node=bob]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph g.edge.fired[data-edge="transitions[0]"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#graph g.node.current[data-node=alice]`)),
		chromedp.WaitVisible(chromedp.CSS(`#expectations .deadline`)),
	)
	body, rule := textOf(t, ctx, `#timeline li[data-type=text] .ev-body`), textOf(t, ctx, `#timeline li[data-type=text] .ev-rule`)
	if body != "hello bob, over to you" || !strings.Contains(rule, "transitions[0]") {
		t.Errorf("timeline shows %q, rule %q", body, rule)
	}
	// bob asks alice a question; the operator answers it from the page.
	if _, err := bob.Send(bg, id, &hubpb.Envelope{Type: "question", Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Text: "Ship it?", Answerer: "alice", Options: []*hubpb.Option{{Id: "yes", Label: "Yes"}, {Id: "no", Label: "No"}}}}}); err != nil {
		t.Fatal(err)
	}
	act(t, ctx, 5*time.Second, "answer the question from the page",
		chromedp.WaitVisible(chromedp.CSS(`#questions form[data-question=q1]`)),
		chromedp.Click(chromedp.CSS(`#questions form[data-question=q1] input[value=yes]`)),
		chromedp.Click(chromedp.CSS(`#questions form[data-question=q1] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=answer]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#questions form[data-question=q1]`)),
	)
	if answer := textOf(t, ctx, `#timeline li[data-type=answer] .ev-body`); !strings.Contains(answer, "yes") || !strings.Contains(answer, "by operator") {
		t.Errorf("the answer reads %q", answer)
	}
	act(t, ctx, 5*time.Second, "bob's view, as the operator sees it",
		chromedp.SetValue(chromedp.CSS(`#view-form select[name=as]`), "bob"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#view-form").dispatchEvent(new Event("change")), undefined`),
		chromedp.WaitVisible(chromedp.CSS(`#view li b`)),
	)
	// A child bob opens on his turn shows in the session's tree, linked.
	child := post(t, base+"/v1/sessions", "bob", `{"type":"conversation@1","participants":[{"name":"carol","auto_accept":true}],"parent_session_id":"`+id+`"}`)
	childID := child["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)
	act(t, ctx, 5*time.Second, "the child in the tree",
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#tree li[data-session=%q] a`, childID))))
	screenshot(t, ctx, out, "webview-session.png")

	if _, err := alice.CloseSession(bg, id, "shipped"); err != nil {
		t.Fatal(err)
	}
	act(t, ctx, 5*time.Second, "the close and its reason",
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_closed]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-close`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph g.node.current[data-node=end]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-live.off`)),
	)
	if reason := textOf(t, ctx, `#s-close-reason`); reason != "shipped" {
		t.Errorf("close reason shown: %q", reason)
	}
	screenshot(t, ctx, out, "webview-closed.png")
	// A fresh load of the ended session shows its reason too.
	act(t, ctx, 10*time.Second, "reload the ended session",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_closed]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-close`)),
	)
	if reason := textOf(t, ctx, `#s-close-reason`); reason != "shipped" {
		t.Errorf("close reason after a reload: %q", reason)
	}
}

// TestWebViewToken: with tokens, the page asks for one (no sign-in by
// name), refuses a wrong one (posted by the page's script), and a right
// one (a plain form post) signs in, kept in an HTTP-only cookie the page's
// script cannot read, and shows the caller's sessions; signing out asks
// again.
func TestWebViewToken(t *testing.T) {
	ctx := browser(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice alice-secret-token-1\nbob bob-secret-token-22\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir(), "", "--tokens", tokens, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	bob, err := agentsdk.Dial(context.Background(), d.addr, agentsdk.Options{Name: "bob", Token: "bob-secret-token-22"})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	s, err := bob.Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice")})
	if err != nil {
		t.Fatal(err)
	}
	act(t, ctx, 10*time.Second, "a wrong token is refused",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#signin-token`)),
		chromedp.SetValue(chromedp.CSS(`#signin-token input[name=token]`), "not-a-token"),
		chromedp.Click(chromedp.CSS(`#signin-token button`)), // the page's script posts it and shows the refusal
		chromedp.WaitVisible(chromedp.CSS(`#signin-error`)),
	)
	devHidden := get(t, ctx, 5*time.Second, "the sign-in by name", chromedp.JavascriptAttribute[bool](chromedp.CSS(`#signin-dev`), "hidden"))
	refused := textOf(t, ctx, `#signin-error`)
	if !devHidden || !strings.Contains(refused, "UNAUTHENTICATED") {
		t.Errorf("sign in by name shown: %v; a wrong token: %q", !devHidden, refused)
	}
	act(t, ctx, 10*time.Second, "sign in with a token",
		chromedp.SetValue(chromedp.CSS(`#signin-token input[name=token]`), "alice-secret-token-1"),
		chromedp.Submit(chromedp.CSS(`#signin-token`)), // a plain form post, as without the script: 303 to the page
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#sessions tr[data-session=%q]`, s.ID()))),
	)
	who := textOf(t, ctx, `#who`)
	cookies := get(t, ctx, 5*time.Second, "document.cookie", chromedp.Evaluate[string](`document.cookie`))
	nodes := get(t, ctx, 5*time.Second, "the listed sessions", chromedp.Nodes(chromedp.CSSAll(`#sessions tbody tr`)))
	if who != "alice" || cookies != "" || len(nodes) != 1 {
		t.Errorf("signed in as %q, script sees cookies %q, %d sessions listed", who, cookies, len(nodes))
	}
	act(t, ctx, 10*time.Second, "sign out",
		chromedp.Click(chromedp.CSS(`#signout`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-token`)),
	)
}
