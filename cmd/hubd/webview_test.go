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

// classOf is the class attribute of the first element sel (CSS) matches.
func classOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, 5*time.Second, "the class of "+sel, chromedp.JavascriptAttribute[string](chromedp.CSS(sel), "className"))
}

// until waits for a JavaScript condition to hold (within the action's
// time).
func until(cond string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(0))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, t)
		return chromedp.Void{}, err
	}
}

// visibleJS is a JavaScript expression: whether the element sel (CSS)
// matches is rendered (not hidden, nor inside something hidden).
func visibleJS(sel string) string {
	return fmt.Sprintf(`(document.querySelector(%q)?.checkVisibility() ?? false)`, sel)
}

// shown reports whether the element sel (CSS) matches is rendered.
func shown(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	return get(t, ctx, 5*time.Second, "whether "+sel+" shows", chromedp.Evaluate[bool](visibleJS(sel)))
}

// sessionID is the session id of an Open answer.
func sessionID(open map[string]any) string {
	return open["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)
}

// TestWebView drives the web view of the real hubd in headless Chromium:
// the page opening signed in as the development operator, the sessions
// list, a session page where a turn sent over gRPC appears live within a
// second and the graph
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
	act(t, ctx, 10*time.Second, "open the page, signed in as the development operator",
		chromedp.Navigate(base+"/"),
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
	if answer := textOf(t, ctx, `#timeline li[data-type=answer] .ev-body`); !strings.Contains(answer, "Yes") || !strings.Contains(answer, "by operator") {
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
	if reason, class := textOf(t, ctx, `#s-close-reason`), classOf(t, ctx, `#s-close-reason`); reason != "shipped" || !strings.Contains(class, "reason-ok") {
		t.Errorf("close reason shown: %q (class %q, want reason-ok: the caller's own reason is a normal end)", reason, class)
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
// name, no development sign-in or banner), refuses a wrong one (posted by the page's script), and a right
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
		until("!"+visibleJS("#devbar")),
		chromedp.SetValue(chromedp.CSS(`#signin-token input[name=token]`), "not-a-token"),
		chromedp.Click(chromedp.CSS(`#signin-token button`)), // the page's script posts it and shows the refusal
		chromedp.WaitVisible(chromedp.CSS(`#signin-error`)),
	)
	devHidden := !shown(t, ctx, `#signin-dev`)
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

// TestWebViewDevSignIn: in development mode the page opens signed in as
// the development operator, with no sign-in step, under a banner that
// says so; viewing as another agent shows what that agent's sign-in
// sees, and the way back restores the operator's view.
func TestWebViewDevSignIn(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	alices := sessionID(post(t, base+"/v1/sessions", "alice", `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`))
	carols := sessionID(post(t, base+"/v1/sessions", "carol", `{"type":"conversation@1","participants":[{"name":"dave","auto_accept":true}]}`))
	rowOf := func(id string) string { return fmt.Sprintf(`#sessions tr[data-session=%q]`, id) }
	act(t, ctx, 10*time.Second, "open the page",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#devbar`)),
		chromedp.WaitVisible(chromedp.CSS(rowOf(alices))),
		chromedp.WaitVisible(chromedp.CSS(rowOf(carols))),
	)
	signin := get(t, ctx, 5*time.Second, "a sign-in form", chromedp.Evaluate[bool](`!!document.querySelector("#signin-name, #signin-token")`))
	who, banner := textOf(t, ctx, `#who`), textOf(t, ctx, `#devbar`)
	if signin || who != "operator (operator)" || !strings.Contains(strings.ToLower(banner), "development mode") {
		t.Errorf("a sign-in form: %v; signed in as %q; banner %q", signin, who, banner)
	}
	signoutHidden := !shown(t, ctx, `#signout`)
	if !signoutHidden {
		t.Error("sign out is offered in development mode, where the page signs in again at once")
	}
	act(t, ctx, 10*time.Second, "view as carol",
		chromedp.SetValue(chromedp.CSS(`#view-as input[name=agent]`), "carol"),
		chromedp.Click(chromedp.CSS(`#view-as button`)),
		chromedp.WaitNotPresent(chromedp.CSS(rowOf(alices))),
		chromedp.WaitVisible(chromedp.CSS(rowOf(carols))),
		chromedp.WaitVisible(chromedp.CSS(`#dev-back`)),
	)
	who, banner = textOf(t, ctx, `#who`), textOf(t, ctx, `#devbar`)
	if who != "carol" || !strings.Contains(banner, "carol") {
		t.Errorf("viewing as carol: signed in as %q, banner %q", who, banner)
	}
	// carol's view survives a reload: it is her sign-in.
	act(t, ctx, 10*time.Second, "reload as carol",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(rowOf(carols))),
		chromedp.WaitVisible(chromedp.CSS(`#dev-back`)),
	)
	if n := len(get(t, ctx, 5*time.Second, "carol's sessions", chromedp.Nodes(chromedp.CSSAll(`#sessions tbody tr`)))); n != 1 {
		t.Errorf("carol sees %d sessions, want her 1", n)
	}
	act(t, ctx, 10*time.Second, "a bad name is refused on the banner",
		chromedp.SetValue(chromedp.CSS(`#view-as input[name=agent]`), "no such,name"),
		chromedp.Click(chromedp.CSS(`#view-as button`)),
		chromedp.WaitVisible(chromedp.CSS(`#dev-error`)),
	)
	if refused := textOf(t, ctx, `#dev-error`); !strings.Contains(refused, "UNAUTHENTICATED") && !strings.Contains(refused, "MALFORMED") {
		t.Errorf("a bad name: %q", refused)
	}
	act(t, ctx, 10*time.Second, "back to the operator",
		chromedp.Click(chromedp.CSS(`#dev-back`)),
		chromedp.WaitVisible(chromedp.CSS(rowOf(alices))),
		chromedp.WaitVisible(chromedp.CSS(rowOf(carols))),
		until("!"+visibleJS("#dev-back")),
	)
	if who = textOf(t, ctx, `#who`); who != "operator (operator)" {
		t.Errorf("back: signed in as %q", who)
	}
}

// TestWebViewClose: the session's creator and operators get a close
// button (a reason, then a confirmation), which closes the session
// through the JSON API and shows the result, or the refusal and its
// reason; another participant gets none.
func TestWebViewClose(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	id := sessionID(post(t, base+"/v1/sessions", "alice", `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`))
	act(t, ctx, 10*time.Second, "the session page, as the operator",
		chromedp.Navigate(base+"/#/s/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_opened]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-close-open`)),
	)
	formHidden := !shown(t, ctx, `#s-close-form`)
	if !formHidden {
		t.Error("the close form shows before the button is pressed")
	}
	act(t, ctx, 10*time.Second, "a refused close shows its reason",
		chromedp.Click(chromedp.CSS(`#s-close-open`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-close-form`)),
		chromedp.SetValue(chromedp.CSS(`#s-close-form input[name=reason]`), "done\u202e"), // a bidirectional control: MALFORMED
		chromedp.Click(chromedp.CSS(`#s-close-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-close-result.error`)),
	)
	if refused, state := textOf(t, ctx, `#s-close-result`), textOf(t, ctx, `#s-state`); !strings.Contains(refused, "MALFORMED") || state != "OPEN" {
		t.Errorf("a refused close reads %q; state %s", refused, state)
	}
	act(t, ctx, 10*time.Second, "close it",
		chromedp.SetValue(chromedp.CSS(`#s-close-form input[name=reason]`), "done by hand"),
		chromedp.Click(chromedp.CSS(`#s-close-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-close-result.ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_closed]`)),
		until("!"+visibleJS("#s-close-box")),
	)
	if result, reason := textOf(t, ctx, `#s-close-result`), textOf(t, ctx, `#s-close-reason`); !strings.Contains(result, "done by hand") || reason != "done by hand" {
		t.Errorf("the close reads %q, reason %q", result, reason)
	}
	// bob takes part in another of alice's sessions: no button for him;
	// alice, its creator, has one.
	other := sessionID(post(t, base+"/v1/sessions", "alice", `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`))
	for _, tc := range []struct {
		as     string
		button bool
	}{{"bob", false}, {"alice", true}} {
		act(t, ctx, 10*time.Second, "the other session as "+tc.as,
			chromedp.Navigate(base+"/#/"),
			chromedp.WaitVisible(chromedp.CSS(`#devbar`)),
			chromedp.SetValue(chromedp.CSS(`#view-as input[name=agent]`), tc.as),
			chromedp.Click(chromedp.CSS(`#view-as button`)),
			until(fmt.Sprintf(`document.querySelector("#who")?.textContent === %q`, tc.as)),
			chromedp.Navigate(base+"/#/s/"+other),
			chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_opened]`)),
			chromedp.WaitVisible(chromedp.CSS(`#s-state .state`)),
		)
		hidden := !shown(t, ctx, `#s-close-box`)
		if hidden == tc.button {
			t.Errorf("as %s: close button shown %v, want %v", tc.as, !hidden, tc.button)
		}
	}
}

// TestWebViewCloseReasons: the list and the session page color a close
// reason by what it means: a normal end (the session's own ends, a
// caller's reason), one cut short (explicit_close, cancelled, ...), or a
// failure (a timer, the TTL, a budget, ...).
func TestWebViewCloseReasons(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	open := func(body string) string {
		return sessionID(post(t, base+"/v1/sessions", "alice", body))
	}
	const conv = `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]`
	want := map[string]string{}
	for reason, class := range map[string]string{
		"shipped": "ok", "sequence_complete": "ok", "finished": "ok", "consulting_complete": "ok", "max_turns": "ok",
		"": "warn", "cancelled": "warn", "parent_closed": "warn", "max_handoffs": "warn",
		"ttl_expired": "bad", "budget_exceeded": "bad", "depth_exceeded": "bad", "invite_timeout": "bad",
	} {
		id := open(conv + `}`)
		post(t, base+"/v1/sessions/"+id+":close", "alice", fmt.Sprintf(`{"reason":%q}`, reason))
		want[id] = class
	}
	// A timer that really fires and closes its session.
	violated := open(conv + `,"expectations":{"items":[{"name":"max_silence","within":"1s","action":"auto_close"}]}}`)
	want[violated] = "bad"
	act(t, ctx, 10*time.Second, "the list",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#sessions tr[data-session=%q] .reason`, violated))),
	)
	classes := get(t, ctx, 5*time.Second, "the reasons' classes", chromedp.Evaluate[map[string]string](
		`Object.fromEntries([...document.querySelectorAll("#sessions tr[data-session]")].map((tr) => {
			const r = tr.querySelector(".reason");
			return [tr.dataset.session, r ? r.className + " " + r.textContent : ""];
		}))`))
	for id, class := range want {
		if !strings.Contains(classes[id], "reason-"+class+" ") {
			t.Errorf("session %s: %q, want reason-%s", id, classes[id], class)
		}
	}
	if !strings.HasSuffix(classes[violated], " expectation_violated:max_silence") {
		t.Errorf("the timer's close reads %q", classes[violated])
	}
	act(t, ctx, 10*time.Second, "a failed session's page",
		chromedp.Navigate(base+"/#/s/"+violated),
		chromedp.WaitVisible(chromedp.CSS(`#s-close-reason.reason-bad`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_closed].end-bad`)),
	)
}

// TestWebViewEnvelopes: a conversation's page shows its participants and
// whose turn it is instead of an empty graph; tool calls and results read
// as a call with its arguments and what it returned (a failure marked),
// packets' routing as what it does, and questions and answers by their
// text, options by label and who must answer, their ids kept out of the
// text (in a title, for operators).
func TestWebViewEnvelopes(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	conv := sessionID(post(t, base+"/v1/sessions", "alice", `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`))
	send := func(id, from, env string) { post(t, base+"/v1/sessions/"+id+"/envelopes", from, env) }
	send(conv, "alice", `{"type":"text","text":{"text":"shall we ship?"}}`)
	send(conv, "bob", `{"type":"tool_call","tool_call":{"call_id":"call-5f2a","name":"search_docs","arguments":{"query":"release notes","limit":5,"filters":{"lang":"go"}}}}`)
	send(conv, "bob", `{"type":"tool_result","tool_result":{"call_id":"call-5f2a","name":"search_docs","error":"the index is offline"}}`)
	send(conv, "bob", `{"type":"tool_result","tool_result":{"call_id":"call-6b1c","name":"count_open_bugs","result":{"open":0,"closed":12}}}`)
	send(conv, "bob", `{"type":"question","question":{"question_id":"q-7c1e5a","text":"Ship version 2 today?","answerer":"alice",`+
		`"options":[{"id":"opt-ship","label":"Ship it now"},{"id":"opt-wait","label":"Wait a day"}]}}`)
	act(t, ctx, 10*time.Second, "the conversation's page",
		chromedp.Navigate(base+"/#/s/"+conv),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=question]`)),
		chromedp.WaitVisible(chromedp.CSS(`#questions .question`)),
		chromedp.WaitVisible(chromedp.CSS(`#turns-card li[data-participant=bob]`)),
	)
	graphHidden := !shown(t, ctx, `#graph-card`)
	turns := textOf(t, ctx, `#turns-card`)
	if !graphHidden || !strings.Contains(turns, "alice") || !strings.Contains(turns, "bob") {
		t.Errorf("a conversation shows the graph card: %v; participants card %q", !graphHidden, turns)
	}
	call, failed, returned := textOf(t, ctx, `#timeline li[data-type=tool_call]`),
		textOf(t, ctx, `#timeline li[data-type=tool_result]:not(.ok) .ev-error`), textOf(t, ctx, `#timeline li[data-type=tool_result].ok`)
	for _, want := range []string{"search_docs", "query: release notes", "limit: 5", `filters: {"lang":"go"}`} {
		if !strings.Contains(call, want) {
			t.Errorf("the tool call reads %q, without %q", call, want)
		}
	}
	if strings.Contains(call, `"call_id"`) || strings.Contains(call, `"arguments"`) || failed != "the index is offline" ||
		!strings.Contains(returned, "open: 0") || !strings.Contains(returned, "closed: 12") {
		t.Errorf("tool call %q; failure %q; result %q", call, failed, returned)
	}
	question, pending := textOf(t, ctx, `#timeline li[data-type=question]`), textOf(t, ctx, `#questions .question`)
	for _, shown := range []string{question, pending} {
		if strings.Contains(shown, "q-7c1e5a") || strings.Contains(shown, "opt-") || !strings.Contains(shown, "Ship version 2 today?") ||
			!strings.Contains(shown, "Ship it now") || !strings.Contains(shown, "alice must answer") {
			t.Errorf("the question reads %q", shown)
		}
	}
	title := get(t, ctx, 5*time.Second, "the question's title", chromedp.Evaluate[string](`document.querySelector("#timeline li[data-type=question] [title]").title`))
	if !strings.Contains(title, "q-7c1e5a") {
		t.Errorf("the question's id is not kept for operators: title %q", title)
	}
	screenshot(t, ctx, artifacts(t), "webview-conversation.png")
	post(t, base+"/v1/sessions/"+conv+"/answers", "alice", `{"answer":{"question_id":"q-7c1e5a","option_ids":["opt-wait"]}}`)
	act(t, ctx, 5*time.Second, "the answer; bob's turn again",
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=answer]`)),
		chromedp.WaitVisible(chromedp.CSS(`#turns-card li[data-participant=bob].expected .turn`)),
	)
	if answer := textOf(t, ctx, `#timeline li[data-type=answer]`); strings.Contains(answer, "q-7c1e5a") || strings.Contains(answer, "opt-wait") ||
		!strings.Contains(answer, "Ship version 2 today?") || !strings.Contains(answer, "Wait a day") {
		t.Errorf("the answer reads %q", answer)
	}

	// A workflow: its graph shows; packets' routing reads as what it does.
	wf := sessionID(post(t, base+"/v1/sessions", "alice", `{"type":"workflow@1","participants":[{"name":"bob","auto_accept":true},{"name":"carol","auto_accept":true}],"graph":`+graphJSON+`}`))
	send(wf, "alice", `{"type":"text","text":{"text":"over to bob"}}`)
	send(wf, "bob", `{"type":"packet","packet":{"body":"carol should check","routing":{"kind":"handoff","target":"carol","tool":"transfer_to_carol","reason":"needs review"}}}`)
	send(wf, "carol", `{"type":"packet","packet":{"body":"looks right","routing":{"kind":"finish","reason":"approved","summary":"all good"}}}`)
	act(t, ctx, 10*time.Second, "the workflow's page",
		chromedp.Navigate(base+"/#/s/"+wf),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_closed]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph-card svg`)),
	)
	routes := get(t, ctx, 5*time.Second, "the routing lines", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#timeline li[data-type=packet] .ev-route")].map((e) => e.textContent)`))
	if len(routes) != 2 || !strings.Contains(routes[0], "hands off to carol") || !strings.Contains(routes[0], "needs review") ||
		!strings.Contains(routes[1], "finishes the session: approved") || !strings.Contains(routes[1], "all good") {
		t.Errorf("routing reads %q", routes)
	}
	turnsHidden := !shown(t, ctx, `#turns-card`)
	if !turnsHidden {
		t.Error("a workflow shows the participants card instead of its graph")
	}
}

// bigWorkflow is the body of an Open of a workflow of n agents a00, a01,
// ... (a00 opens it): each hands on to the next when a context key says
// so, or jumps ahead, the last ends it.
func bigWorkflow(n int) string {
	name := func(i int) string { return fmt.Sprintf("a%02d", i%n) }
	var ts, ps []string
	for i := range n {
		from := fmt.Sprintf(`{"name":"from_speaker","args":{"agent_id":%q}}`, name(i))
		ts = append(ts,
			fmt.Sprintf(`{"when":{"name":"all_of","args":{"conditions":[%s,{"name":"context_equals","args":{"key":"step","value":%d}}]}},"then":{"name":"agent","args":{"agent_id":%q}}}`, from, i, name(i+1)),
			fmt.Sprintf(`{"when":%s,"then":{"name":"agent","args":{"agent_id":%q}}}`, from, name(i*7+3)))
		if i > 0 {
			ps = append(ps, fmt.Sprintf(`{"name":%q,"auto_accept":true}`, name(i)))
		}
	}
	ts = append(ts, fmt.Sprintf(`{"when":{"name":"from_speaker","args":{"agent_id":%q}},"then":{"name":"terminate","args":{"reason":"done"}}}`, name(n-1)))
	return fmt.Sprintf(`{"type":"workflow@1","participants":[%s],"graph":{"version":1,"initial_speaker":"a00","transitions":[%s]}}`,
		strings.Join(ps, ","), strings.Join(ts, ","))
}

// TestWebViewGraphLabels: in the real browser, no two edge labels of a
// drawn workflow graph overlap, nor a label and a node, up to 50 nodes:
// the boxes Chromium renders (getBBox) are compared.
func TestWebViewGraphLabels(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	const overlaps = `(() => {
		const boxes = (sel) => [...document.querySelectorAll(sel)].map((e) => {
			const b = e.getBBox();
			return { x: b.x, y: b.y, w: b.width, h: b.height, what: e.textContent || e.closest("g").dataset.node };
		});
		const labels = boxes("#graph svg g.edge text"), nodes = boxes("#graph svg g.node rect");
		const meet = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
		const out = [];
		labels.forEach((a, i) => {
			if (!(a.w > 0 && a.h > 0)) out.push("empty label " + a.what);
			labels.slice(i + 1).forEach((b) => { if (meet(a, b)) out.push(a.what + " / " + b.what); });
			nodes.forEach((b) => { if (meet(a, b)) out.push(a.what + " / node " + b.what); });
		});
		return { labels: labels.length, nodes: nodes.length, overlaps: out };
	})()`
	for _, n := range []int{5, 12, 25, 50} {
		id := sessionID(post(t, base+"/v1/sessions", "a00", bigWorkflow(n)))
		act(t, ctx, 10*time.Second, fmt.Sprintf("the graph of %d agents", n),
			chromedp.Navigate(base+"/#/s/"+id),
			until(fmt.Sprintf(`document.querySelector("#s-id")?.textContent === %q && document.querySelectorAll("#graph svg g.edge text").length > 0`, id)),
		)
		got := get(t, ctx, 10*time.Second, "the label boxes", chromedp.Evaluate[struct {
			Labels, Nodes int
			Overlaps      []string
		}](overlaps))
		// Two edges an agent (three for the last), the default edge; the
		// agents, the end and "any speaker".
		if got.Labels != 2*n+2 || got.Nodes != n+2 || len(got.Overlaps) > 0 {
			t.Errorf("%d agents: %d labels, %d nodes; overlapping: %q", n, got.Labels, got.Nodes, got.Overlaps)
		}
	}
	screenshot(t, ctx, artifacts(t), "webview-graph-50.png")
}

// TestWebViewDeltas: on the session page a reply being written grows as
// its deltas come, then its final envelope replaces it.
func TestWebViewDeltas(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	id := sessionID(post(t, base+"/v1/sessions", "alice", `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`))
	act(t, ctx, 10*time.Second, "the session page",
		chromedp.Navigate(base+"/#/s/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_opened]`)),
		until(`document.querySelector("#s-live")?.textContent === "● live"`),
	)
	post(t, base+"/v1/sessions/"+id+"/deltas", "alice", `{"stream_id":"r1","index":0,"text":"Hel"}`)
	post(t, base+"/v1/sessions/"+id+"/deltas", "alice", `{"stream_id":"r1","index":1,"text":"lo"}`)
	act(t, ctx, 10*time.Second, "the reply grows",
		until(`document.querySelector("#timeline li.streaming .stream-text")?.textContent === "Hello"`),
	)
	post(t, base+"/v1/sessions/"+id+"/envelopes", "alice", `{"type":"text","client_msg_id":"r1","text":{"text":"Hello!"}}`)
	act(t, ctx, 10*time.Second, "the final envelope replaces it",
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=text]`)),
		until(`document.querySelector("#timeline li.streaming") === null`),
	)
	if got := textOf(t, ctx, `#timeline li[data-type=text]`); !strings.Contains(got, "Hello!") {
		t.Errorf("the final envelope reads %q", got)
	}
}
