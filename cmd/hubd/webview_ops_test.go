package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestWebViewForkAndSteer drives the session page of the real hubd in
// headless Chromium as the development operator: the operator actions set
// a context variable, choose the next speaker over the graph (the session
// then expects carol), extend and cancel a timer, each logged with its
// reason and shown in the timeline; releasing a turn nobody holds shows
// the hub's refusal (NOTHING_TO_STEER). "fork from here" on a timeline
// item opens the fork's page, forked at that seq. Viewing as bob, a
// participant, the page offers forks but no operator actions.
func TestWebViewForkAndSteer(t *testing.T) {
	ctx := browser(t)
	d := startDaemon(t, t.TempDir(), "", "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr(t)
	bg := context.Background()
	alice := dialAs(t, d.addr, "alice")
	s, err := alice.Open(bg, agentsdk.OpenOptions{Graph: agentsdk.RoundRobin([]string{"alice", "bob", "carol"}, 20),
		Participants: agentsdk.AutoAccepted("bob", "carol"),
		Expectations: []*hubpb.Expectation{session.Expect(session.TurnWithin, 10*time.Minute, session.ActionWarn)}})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	turn, err := alice.SendText(bg, id, "over to bob")
	if err != nil {
		t.Fatal(err)
	}
	steer := func(form string, fields map[string]string, button string) chromedp.Action[chromedp.Void] {
		var steps []chromedp.Action[chromedp.Void]
		for name, v := range fields {
			steps = append(steps, chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`#steer-card form[data-steer=%s] [name=%s]`, form, name)), v))
		}
		return chromedp.Steps(append(steps, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#steer-card form[data-steer=%s] %s`, form, button))))...)
	}
	act(t, ctx, 10*time.Second, "the session page, as the operator",
		chromedp.Navigate(base+"/#/s/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=text] button.fork`)),
		chromedp.WaitVisible(chromedp.CSS(`#steer-card`)),
		until(`!!document.querySelector("#steer-card form[data-steer=next] option[value=carol]")`),
	)
	act(t, ctx, 5*time.Second, "set a context variable",
		steer("context", map[string]string{"key": "priority", "value": "1", "reason": "escalated"}, `button`),
		chromedp.WaitVisible(chromedp.CSS(`#context tr[data-key=priority]`)),
		chromedp.WaitVisible(chromedp.CSS(`#steer-result.ok`)),
	)
	act(t, ctx, 5*time.Second, "choose carol to speak next",
		steer("next", map[string]string{"agent": "carol", "reason": "carol has the logs"}, `button`),
		until(`document.querySelector("#s-expected")?.textContent === "carol"`),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=operator_action]:nth-last-of-type(1)`)),
	)
	act(t, ctx, 5*time.Second, "extend, then cancel the timer",
		steer("timer", map[string]string{"name": "turn_within", "seconds": "120", "reason": "carol is slow"}, `button[value=extend]`),
		until(`document.querySelectorAll("#timeline li[data-type=operator_action]").length === 3`),
		steer("timer", map[string]string{"name": "turn_within", "reason": "no hurry"}, `button[value=cancel]`),
		until(`document.querySelectorAll("#timeline li[data-type=operator_action]").length === 4`),
	)
	act(t, ctx, 5*time.Second, "release a turn nobody holds: refused",
		steer("release", map[string]string{"result": "go", "reason": "unstick"}, `button`),
		chromedp.WaitVisible(chromedp.CSS(`#steer-result.error`)),
	)
	screenshot(t, ctx, artifacts(t), "webview-steer.png")
	if refused := textOf(t, ctx, `#steer-result`); !strings.Contains(refused, "no turn is held") || !strings.Contains(refused, "NOTHING_TO_STEER") {
		t.Errorf("the refused release reads %q", refused)
	}
	items := get(t, ctx, 5*time.Second, "the operator actions in the timeline",
		chromedp.Evaluate[[]string](`[...document.querySelectorAll("#timeline li[data-type=operator_action]")].map((li) => li.innerText)`))
	for i, want := range []string{"context: priority=1", "next speaker carol", "extends turn_within by 120s", "cancels turn_within"} {
		if i >= len(items) || !strings.Contains(items[i], "operator operator: "+want) {
			t.Errorf("operator action %d reads %q, want %q", i, items, want)
		}
	}
	info := showSession(t, d.addr, id)
	if got, exp := info.GetContext()["priority"].GetNumberValue(), info.GetExpected(); got != 1 || len(exp) != 1 || exp[0] != "carol" {
		t.Errorf("after the page's actions: priority %v, expected %v", got, exp)
	}

	act(t, ctx, 10*time.Second, "fork from alice's turn",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#timeline li[data-seq="%d"] button.fork`, turn.GetSeq()))),
		until(fmt.Sprintf(`/^#\/s\/[0-9a-f-]{36}$/.test(location.hash) && location.hash !== %q`, "#/s/"+id)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=session_forked]`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-labels .label`)),
	)
	forkID := strings.TrimPrefix(get(t, ctx, 5*time.Second, "the fork's page", chromedp.Evaluate[string](`location.hash`)), "#/s/")
	fork := showSession(t, d.addr, forkID)
	if o := fork.GetMeta().GetForkedFrom(); o.GetSessionId() != id || o.GetAtSeq() != turn.GetSeq() {
		t.Errorf("the fork's origin: %v, want %s at %d", o, id, turn.GetSeq())
	}
	if labels, forked := textOf(t, ctx, `#s-labels`), textOf(t, ctx, `#timeline li[data-type=session_forked] .ev-body`); !strings.Contains(labels, "forked_from="+id) ||
		!strings.Contains(forked, fmt.Sprintf("at #%d", turn.GetSeq())) {
		t.Errorf("the fork's page: labels %q, first item %q", labels, forked)
	}

	act(t, ctx, 10*time.Second, "the session as bob",
		chromedp.Navigate(base+"/#/"),
		chromedp.WaitVisible(chromedp.CSS(`#devbar`)),
		chromedp.SetValue(chromedp.CSS(`#view-as input[name=agent]`), "bob"),
		chromedp.Click(chromedp.CSS(`#view-as button`)),
		until(`document.querySelector("#who")?.textContent === "bob"`),
		chromedp.Navigate(base+"/#/s/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-type=text] button.fork`)),
		chromedp.WaitVisible(chromedp.CSS(`#s-state .state`)),
	)
	if shown(t, ctx, `#steer-card`) {
		t.Error("bob, a participant, is offered the operator actions")
	}
}
