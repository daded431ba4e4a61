// hubd's web view: forks and operator actions on the session page. Every
// timeline item offers "fork from here" (POST /v1/sessions/{id}:fork with
// that item's seq, then the fork's page); an operator (whoami says so) gets
// the operator actions card (POST /v1/sessions/{id}:steer), each action
// with the reason it asks for, and the hub's refusal shown as it answered.
// Loaded before app.js; uses its helpers (el, $, api, me) once the page runs.
"use strict";

// ---- fork ----------------------------------------------------------------

// wireFork gives each item of the timeline (a list item with a seq),
// however it was added, a "fork from here" button: it forks the session
// at that seq and goes to the fork; a refusal shows in the item.
function wireFork(enc, timeline) {
  const decorate = (li) => {
    if (!li.dataset || !li.dataset.seq || li.querySelector(":scope > .fork-box")) return;
    li.append(el("div", { class: "fork-box" }, el("button", { type: "button", class: "fork", title: `a new session continuing this one from #${li.dataset.seq}`, text: "fork from here" })));
  };
  new MutationObserver((changes) => {
    for (const c of changes) for (const n of c.addedNodes) if (n instanceof HTMLLIElement) decorate(n);
  }).observe(timeline, { childList: true });
  for (const li of timeline.children) decorate(li);
  timeline.addEventListener("click", async (ev) => {
    const button = ev.target.closest("button.fork");
    if (!button) return;
    const li = button.closest("li[data-seq]");
    button.disabled = true;
    try {
      const r = await api(`/v1/sessions/${enc}:fork`, { method: "POST", body: { at_seq: Number(li.dataset.seq) } });
      location.hash = `#/s/${r.session.meta.session_id}`;
    } catch (e) {
      let err = li.querySelector(":scope > .fork-box .error");
      if (!err) { err = el("span", { class: "error" }); button.after(err); }
      err.textContent = ` Refused: ${e.message}${e.reason ? ` (${e.reason})` : ""}`;
      button.disabled = false;
    }
  });
}

// describeFork reads a fork's first record (session_forked).
function describeFork(f, out) {
  const o = f.origin || {};
  out.body = el("span", {}, "forked from ", el("a", { href: `#/s/${o.session_id}` }, el("code", { text: (o.session_id || "").slice(0, 8) + "…" })), ` at #${o.at_seq}`);
  if (f.forked_by) out.extra.push(`by ${f.forked_by}`);
  if (f.next_speaker) out.extra.push(`next speaker ${f.next_speaker}`);
  const cu = f.context;
  if (cu && (cu.set || cu.delete)) out.extra.push(contextLine(cu));
}

// ---- operator actions (steer) ----------------------------------------------

// describeOperatorAction reads an operator_action: who, what and why.
function describeOperatorAction(a, out) {
  let what = "";
  if (a.context) what = contextLine(a.context);
  else if (a.next_speaker !== undefined) what = `next speaker ${a.next_speaker}`;
  else if (a.release_result !== undefined) what = `releases the held turn: ${a.release_result}`;
  else if (a.timer) what = a.timer.cancel ? `cancels ${a.timer.name}` : `extends ${a.timer.name} by ${a.timer.extend}`;
  out.body = `operator ${a.operator}: ${what}`;
  out.extra.push(`why: ${a.reason}`);
}

// steerValue is what the context form's value field means: JSON when it
// parses, else the text itself.
function steerValue(text) {
  try { return JSON.parse(text); } catch { return text; }
}

// steerActions builds each form's action from its fields (and, for the
// timer form, from the button pressed).
const steerActions = {
  context: (f) => ({ context: { set: { [f.get("key").trim()]: steerValue(f.get("value")) } } }),
  next: (f) => ({ next_speaker: f.get("agent") }),
  release: (f) => ({ release_result: f.get("result") }),
  timer: (f, how) => ({ timer: how === "cancel" ? { name: f.get("name"), cancel: true } : { name: f.get("name"), extend: `${Number(f.get("seconds"))}s` } }),
};

// wireSteer makes the operator actions card work: each form sends its
// action with its reason and shows the hub's answer (the seq, or the
// refusal with its reason).
function wireSteer(enc, refresh) {
  const result = $("#steer-result");
  for (const form of document.querySelectorAll("#steer-card form[data-steer]")) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const fd = new FormData(form);
      const how = ev.submitter ? ev.submitter.value : "";
      const action = { reason: fd.get("reason").trim(), ...steerActions[form.dataset.steer](fd, how) };
      try {
        const r = await api(`/v1/sessions/${enc}:steer`, { method: "POST", body: { action } });
        result.className = "steer-result ok";
        result.textContent = `Done${r && r.seq ? ` (#${r.seq})` : ""}: ${form.dataset.steer}${how ? " " + how : ""} — ${action.reason}`;
        form.reset();
        refresh();
      } catch (e) {
        result.className = "steer-result error";
        result.textContent = `Refused: ${e.message}${e.reason ? ` (${e.reason})` : ""}`;
      }
      result.hidden = false;
    });
  }
}

// updateSteer shows the operator actions card to an operator while the
// session is open, with its participants and expectations to choose from.
function updateSteer(info) {
  const card = $("#steer-card");
  card.hidden = !(me.operator && info.state === "OPEN");
  if (card.hidden) return;
  const m = info.meta || {};
  fill($("#steer-card select[name=agent]"), (m.participants || []).map((p) => p.name));
  const timers = [...new Set((m.expectations || []).map((x) => x.name))];
  fill($("#steer-card select[name=name]"), timers);
  $("#steer-card form[data-steer=timer]").hidden = !timers.length;
}

// fill sets a select's options to names, keeping the chosen one.
function fill(sel, names) {
  if ([...sel.options].map((o) => o.value).join("\n") === names.join("\n")) return;
  const chosen = sel.value;
  sel.replaceChildren(...names.map((n) => el("option", { value: n, text: n, selected: n === chosen })));
}
