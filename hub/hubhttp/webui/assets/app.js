// hubd's live web view: plain JavaScript, no build step. It talks to the
// JSON API (/v1/...), the event streams (EventSource on
// /v1/sessions/{id}/events) and the web view's own routes (/ui/...); the
// sign-in cookie stands for the credentials. envelopes.js, loaded first,
// says how envelopes and close reasons read.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
};
const tpl = (id) => document.getElementById(id).content.cloneNode(true);

// page holds what the current page must stop when it is left.
let page = { stop: [] };
function leave() {
  for (const f of page.stop) f();
  page = { stop: [] };
}

let me = { signed_in: false, dev: false };

async function api(path, opts = {}) {
  const init = { credentials: "same-origin", headers: { Accept: "application/json" }, ...opts };
  if (opts.body !== undefined && typeof opts.body !== "string") {
    init.body = JSON.stringify(opts.body);
    init.headers["Content-Type"] = "application/json";
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text }; }
  if (!r.ok) {
    const reason = (data && data.details || []).map((d) => d.reason).find(Boolean) || "";
    const err = new Error((data && data.message) || r.statusText);
    err.status = r.status; err.reason = reason;
    throw err;
  }
  return data;
}

function fmtTime(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  return isNaN(d) ? String(ts) : d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}
function fmtDate(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  return isNaN(d) ? String(ts) : d.toLocaleString([], { hour12: false });
}
function fmtDuration(ms) {
  const neg = ms < 0; ms = Math.abs(ms);
  const s = Math.round(ms / 1000);
  const out = s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m`
    : s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  return neg ? `${out} ago` : `in ${out}`;
}
const json = (v) => JSON.stringify(v);
const stateBadge = (st) => el("span", { class: `state state-${st}`, text: st });

// ---- sign-in -------------------------------------------------------------

// whoami asks who the page is signed in as. In development mode, on this
// machine, a page nobody is signed in on signs in as the development
// operator by itself (POST /v1/auth/dev): no sign-in step.
async function whoami() {
  try { me = await api("/v1/auth/whoami"); } catch { me = { signed_in: false, dev: false }; }
  if (!me.signed_in && me.dev_operator) {
    try {
      await api("/v1/auth/dev", { method: "POST" });
      me = await api("/v1/auth/whoami");
    } catch { /* the sign-in form stays */ }
  }
  const who = $("#who");
  who.textContent = me.signed_in ? `${me.agent}${me.operator ? " (operator)" : ""}` : "";
  // In development mode signing out would sign in again at once: the
  // banner switches agents instead.
  $("#signout").hidden = !me.signed_in || Boolean(me.dev_operator);
  renderDevBar();
}

// renderDevBar shows the development-mode banner, with who the page is
// signed in as and the switch to view as another agent.
function renderDevBar() {
  const bar = $("#devbar");
  bar.hidden = !(me.signed_in && me.dev_operator);
  if (bar.hidden) return;
  const viewing = me.agent !== me.dev_operator;
  $("#dev-as").textContent = viewing
    ? `Viewing as ${me.agent}: what its sign-in sees.`
    : `Signed in as ${me.agent}, the development operator, with no sign-in: this hub runs without tokens and this browser is on its machine.`;
  $("#dev-back").textContent = `Back to ${me.dev_operator}`;
  $("#dev-back").hidden = !viewing;
}

// switchTo signs the page in again: by name (view as another agent), or
// as the development operator (name ""), and shows the page anew.
async function switchTo(name) {
  const err = $("#dev-error");
  try {
    if (name) await api("/v1/auth/signin", { method: "POST", body: { agent: name } });
    else await api("/v1/auth/dev", { method: "POST" });
    err.hidden = true;
  } catch (e) {
    err.textContent = `Refused: ${e.message}${e.reason ? ` (${e.reason})` : ""}`;
    err.hidden = false;
    return;
  }
  await whoami();
  route();
}

function renderSignIn(message) {
  const app = $("#app");
  app.replaceChildren(tpl("t-signin"));
  $("#signin-dev").hidden = !me.dev;
  for (const f of app.querySelectorAll("form")) {
    f.querySelector("input[name=next]").value = "/" + location.hash;
    f.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const fd = new FormData(f);
      const body = fd.get("token") ? { token: fd.get("token") } : { agent: fd.get("agent") };
      try {
        await api("/v1/auth/signin", { method: "POST", body });
        await whoami();
        route();
      } catch (e) {
        const p = $("#signin-error");
        p.textContent = `Refused: ${e.message}${e.reason ? ` (${e.reason})` : ""}`;
        p.hidden = false;
      }
    });
  }
  if (message) { const p = $("#signin-error"); p.textContent = message; p.hidden = false; }
}

// ---- sessions list -------------------------------------------------------

const STATES = ["PENDING", "OPEN", "CLOSED", "EXPIRED"];

function renderList() {
  const app = $("#app");
  app.replaceChildren(tpl("t-list"));
  const form = $("#filters");
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  for (const k of ["state", "type", "participant", "label"]) if (params.has(k)) form.elements[k].value = params.get(k);
  let timer = null;
  const refresh = async () => {
    clearTimeout(timer);
    const f = Object.fromEntries(new FormData(form));
    const q = new URLSearchParams({ page_size: "1000" });
    if (f.participant) q.set("participant", f.participant.trim());
    let sessions = [];
    try {
      const data = await api(`/v1/sessions?${q}`);
      sessions = (data && data.sessions) || [];
      $("#list-error").hidden = true;
    } catch (e) {
      if (e.status === 401) { renderSignIn("Your sign-in is no longer valid."); return; }
      $("#list-error").textContent = e.message; $("#list-error").hidden = false;
    }
    const [lk, lv] = (f.label || "").split("=").map((s) => s.trim());
    const matches = sessions.filter((s) => {
      const m = s.meta || {};
      if (f.type && !(m.type || "").startsWith(f.type.trim())) return false;
      if (lk) {
        const v = (m.labels || {})[lk];
        if (v === undefined || (lv !== undefined && lv !== "" && v !== lv)) return false;
      }
      return true;
    });
    const counts = Object.fromEntries(STATES.map((s) => [s, 0]));
    for (const s of matches) counts[s.state] = (counts[s.state] || 0) + 1;
    $("#counts").replaceChildren(
      el("span", { class: "count", "data-state": "all" }, "all ", el("b", { text: matches.length })),
      ...STATES.map((s) => el("span", { class: "count", "data-state": s }, `${s.toLowerCase()} `, el("b", { text: counts[s] }))));
    const shown = matches.filter((s) => !f.state || s.state === f.state).reverse(); // newest first
    const tbody = $("#sessions tbody");
    tbody.replaceChildren(...shown.map((s) => {
      const m = s.meta || {};
      const id = m.session_id;
      return el("tr", { "data-session": id },
        el("td", {}, el("a", { href: `#/s/${id}` }, el("code", { text: id.slice(0, 8) + "…" + id.slice(-4) })),
          m.depth ? el("span", { class: "muted", text: ` child (depth ${m.depth})` }) : null),
        el("td", { text: m.type }),
        el("td", {}, stateBadge(s.state)),
        el("td", { text: (m.participants || []).map((p) => p.name).join(", ") }),
        el("td", {}, Object.entries(m.labels || {}).map(([k, v]) => el("span", { class: "label", text: `${k}=${v}` }))),
        el("td", { text: s.seq || "0" }),
        el("td", { text: fmtDate(m.created_at) }),
        el("td", { class: "close-reason" }, s.close_reason ? reasonBadge(s.close_reason) : null));
    }));
    $("#list-empty").hidden = shown.length > 0;
    timer = setTimeout(refresh, 2000);
  };
  form.addEventListener("input", () => {
    const f = Object.fromEntries([...new FormData(form)].filter(([, v]) => v));
    history.replaceState(null, "", "#/" + (Object.keys(f).length ? "?" + new URLSearchParams(f) : ""));
    refresh();
  });
  page.stop.push(() => clearTimeout(timer));
  refresh();
}

// ---- one session ---------------------------------------------------------

function renderSession(id) {
  const app = $("#app");
  app.replaceChildren(tpl("t-session"));
  $("#s-id").textContent = id;
  let info = null, deadlines = [], ended = false;
  const enc = encodeURIComponent(id);
  const known = new Map(); // question id → question, for the answers

  const refreshInfo = async () => {
    try {
      info = await api(`/v1/sessions/${enc}`);
    } catch (e) {
      if (e.status === 401) { renderSignIn("Sign in to see this session."); return; }
      $("#s-live").textContent = e.message; return;
    }
    const m = info.meta || {};
    $("#s-type").textContent = m.type;
    $("#s-state").replaceChildren(stateBadge(info.state));
    $("#s-turn").textContent = info.turn || "0";
    $("#s-expected").textContent = (info.expected || []).join(", ") || "—";
    $("#s-creator").textContent = m.creator || "";
    $("#s-participants").textContent = (m.participants || []).map((p) => p.name).join(", ");
    $("#s-labels").replaceChildren(...Object.entries(m.labels || {}).map(([k, v]) => el("span", { class: "label", text: `${k}=${v}` })));
    if (m.parent_session_id) {
      const a = $("#s-parent a"); a.href = `#/s/${m.parent_session_id}`; a.textContent = m.parent_session_id.slice(0, 8) + "…";
      $("#s-parent").hidden = false;
    }
    showCloseReason(info.close_reason);
    renderTurns(info);
    updateClose(info);
    updateSteer(info);
    const ctx = Object.entries(info.context || {});
    $("#context tbody").replaceChildren(...(ctx.length ? ctx.map(([k, v]) => el("tr", { "data-key": k }, el("td", { text: k }), el("td", {}, el("code", { text: json(v) }))))
      : [el("tr", {}, el("td", { class: "muted", text: "none" }))]));
    const sel = $("#view-form select[name=as]");
    if (!sel.options.length) {
      const names = (m.participants || []).map((p) => p.name);
      const mine = names.includes(me.agent) ? [me.agent] : [];
      for (const n of me.operator ? names : mine) sel.append(el("option", { text: n, selected: n === me.agent }));
      if (!sel.options.length) sel.append(el("option", { value: "", text: "(not a participant)" }));
      sel.disabled = !me.operator;
    }
    renderExpectations();
  };

  const renderExpectations = () => {
    const m = (info && info.meta) || {};
    const rows = (m.expectations || []).map((x, i) => {
      const d = deadlines.find((d) => d.name === x.name && d.action === x.action);
      return el("tr", { "data-expectation": x.name },
        el("td", { text: `${x.name} ${x.within || ""}` }),
        el("td", {}, x.action, " · ", d ? el("span", { class: "deadline", title: d.at, text: `next ${fmtDuration(new Date(d.at) - Date.now())}${d.violators ? " (" + d.violators.join(", ") + ")" : ""}` })
          : el("span", { class: "muted", text: ended ? "ended" : "not running" })));
    });
    for (const d of deadlines.filter((d) => !(m.expectations || []).some((x) => x.name === d.name && x.action === d.action))) {
      rows.push(el("tr", { "data-expectation": d.name }, el("td", { text: d.name }),
        el("td", {}, d.action, " · ", el("span", { class: "deadline", title: d.at, text: `next ${fmtDuration(new Date(d.at) - Date.now())}` }))));
    }
    $("#expectations tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "muted", text: "no timers" }))]));
  };

  const refreshDeadlines = async () => {
    try { deadlines = (await api(`/ui/sessions/${enc}/deadlines`)).deadlines || []; } catch { deadlines = []; }
    renderExpectations();
  };

  const refreshGraph = async () => {
    if (!hasGraph(info)) return;
    try {
      const r = await fetch(`/ui/sessions/${enc}/graph.svg`, { credentials: "same-origin" });
      if (r.ok) {
        const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
        $("#graph").replaceChildren(document.importNode(doc.documentElement, true));
      }
    } catch { /* the next event retries */ }
  };

  const refreshQuestions = async () => {
    let qs = [];
    try {
      const root = (info && info.meta && info.meta.root_session_id) || id;
      qs = ((await api(`/v1/questions?root_session_id=${encodeURIComponent(root)}`)).questions || []).filter((q) => q.session_id === id);
    } catch { qs = []; }
    const box = $("#questions");
    if (!qs.length) { box.replaceChildren(el("p", { class: "muted", text: "None." })); return; }
    box.replaceChildren(...qs.map((pq) => {
      const q = pq.envelope.question || {};
      const form = el("form", { "data-question": q.question_id });
      if (q.options && q.options.length) {
        for (const o of q.options) {
          form.append(el("label", {}, el("input", { type: q.multiple ? "checkbox" : "radio", name: "option", value: o.id }), ` ${o.label || o.id}`));
        }
      } else {
        form.append(el("textarea", { name: "text", placeholder: "your answer", required: true }));
      }
      const err = el("p", { class: "error", hidden: true });
      form.append(el("button", { type: "submit", text: "Answer" }), err);
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        const answer = { question_id: q.question_id };
        const opts = fd.getAll("option");
        if (opts.length) answer.option_ids = opts; else answer.text = fd.get("text") || "";
        try {
          await api(`/v1/sessions/${enc}/answers`, { method: "POST", body: { answer } });
          refreshQuestions();
        } catch (e) { err.textContent = `${e.message}${e.reason ? " (" + e.reason + ")" : ""}`; err.hidden = false; }
      });
      known.set(q.question_id, q);
      return el("div", { class: "question", title: `question ${q.question_id}` },
        el("div", {}, el("b", { text: pq.asker || pq.envelope.from }), " asks · ", el("b", { text: answererOf(q) }), " must answer"),
        el("div", { class: "ev-body", text: q.text }), form);
    }));
  };

  const refreshTree = async () => {
    const m = (info && info.meta) || {};
    if (!m.parent_session_id && !(info && info.open_children) && !treeShown && !delegated) return;
    let tree;
    try { tree = await api(`/v1/sessions/${enc}/tree`); } catch { return; }
    const kids = tree.children || [];
    if (!kids.length && !m.parent_session_id) return;
    treeShown = true;
    const item = (n) => {
      const s = n.session || {}, sm = s.meta || {};
      return el("li", { "data-session": sm.session_id },
        el("a", { href: `#/s/${sm.session_id}` }, el("code", { text: (sm.session_id || "").slice(0, 8) + "…" })),
        " ", sm.type, " ", stateBadge(s.state), " ", (sm.participants || []).map((p) => p.name).join(", "),
        s.close_reason ? el("span", { class: "muted" }, " — ", reasonBadge(s.close_reason)) : null,
        (n.children || []).length ? el("ul", {}, n.children.map(item)) : null);
    };
    $("#tree-card").hidden = false;
    $("#tree").replaceChildren(...(kids.length ? kids.map(item) : [el("li", { class: "muted", text: "no children" })]));
  };
  let treeShown = false, delegated = false;

  const refreshView = async () => {
    const f = Object.fromEntries(new FormData($("#view-form")));
    const list = $("#view");
    if (!f.as) { list.replaceChildren(el("li", { class: "muted", text: "Views are for participants and operators." })); return; }
    try {
      const v = await api(`/ui/sessions/${enc}/views?as=${encodeURIComponent(f.as)}&name=${encodeURIComponent(f.name)}`);
      const items = (v.items || []).map((it) => el("li", {}, el("b", { text: it.from || "hub" }), ` `, el("span", { class: "muted", text: `#${it.seq} ${it.type}` }), " ", it.text || ""));
      if (v.older_total) items.unshift(el("li", { class: "muted", text: `${v.older_total} earlier: ` + (v.older || []).map((c) => `${c.speaker} ×${c.count}`).join(", ") }));
      list.replaceChildren(...(items.length ? items : [el("li", { class: "muted", text: "empty" })]));
    } catch (e) { list.replaceChildren(el("li", { class: "error", text: e.message })); }
  };
  $("#view-form").addEventListener("change", refreshView);
  wireClose(enc, () => refreshAll());
  wireSteer(enc, () => refreshAll());
  wireFork(enc, $("#timeline"));

  let pending = null;
  const refreshAll = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      await refreshInfo();
      await Promise.all([refreshGraph(), refreshDeadlines(), refreshQuestions(), refreshView(), refreshTree()]);
    }, 60);
  };

  const timeline = $("#timeline");
  const live = $("#s-live");
  let caughtUp = false;
  const es = new EventSource(`/v1/sessions/${enc}/events?from=1&deltas=true`);
  // Replies being written (deltas, never logged): one growing line per
  // reply, replaced by its final envelope (same client_msg_id).
  const streaming = new Map();
  es.addEventListener("delta", (ev) => {
    const d = JSON.parse(ev.data);
    let li = streaming.get(d.stream_id);
    if (d.abandoned) { if (li) li.remove(); streaming.delete(d.stream_id); return; }
    if (!li) {
      li = el("li", { class: "ev streaming", "data-stream": d.stream_id },
        el("b", { text: d.from || "" }), " ", el("span", { class: "muted", text: "writing… " }), el("span", { class: "stream-text" }));
      streaming.set(d.stream_id, li);
      timeline.append(li);
    }
    li.querySelector(".stream-text").textContent += d.text || "";
  });
  es.addEventListener("open", () => { live.textContent = "● live"; live.className = "live on"; });
  es.addEventListener("envelope", (ev) => {
    const env = JSON.parse(ev.data);
    if (timeline.querySelector(`li[data-seq="${env.seq}"]`)) return;
    if (env.type === "delegation") delegated = true;
    const writing = env.client_msg_id && streaming.get(env.client_msg_id);
    if (writing) { writing.remove(); streaming.delete(env.client_msg_id); }
    timeline.append(renderEnvelope(env, caughtUp, known));
    refreshAll();
  });
  es.addEventListener("end", (ev) => {
    const end = JSON.parse(ev.data);
    if (end.resume) {
      // The hub cut the stream off (DRAINING, SLOW_SUBSCRIBER): the
      // EventSource reconnects by itself with Last-Event-ID and goes on.
      live.textContent = `cut off (${end.reason}); reconnecting…`; live.className = "live off";
      return;
    }
    es.close();
    if (end.reason === "session_ended") {
      ended = true;
      live.textContent = `ended (${end.state})`; live.className = "live off";
      showCloseReason(end.close_reason);
      $("#s-close-box").hidden = true;
    } else {
      live.textContent = `stopped: ${end.reason}${end.message ? " — " + end.message : ""}`; live.className = "live off";
    }
    refreshAll();
  });
  es.addEventListener("error", () => {
    if (es.readyState === EventSource.CLOSED) { live.textContent = "disconnected"; live.className = "live off"; }
    else { live.textContent = "reconnecting…"; live.className = "live off"; }
  });
  setTimeout(() => { caughtUp = true; }, 300);
  const tick = setInterval(renderExpectations, 1000);
  page.session = id;
  page.stop.push(() => es.close(), () => clearInterval(tick), () => clearTimeout(pending));
  refreshAll();
}

// showCloseReason shows why the session ended, colored by what it means.
function showCloseReason(reason) {
  if (!reason) return;
  const r = $("#s-close-reason");
  r.textContent = reason;
  r.className = `reason reason-${closeClass(reason)}`;
  r.title = CLOSE_MEANING[closeClass(reason)];
  $("#s-close").hidden = false;
}

// hasGraph reports whether a session has a graph to draw (a workflow's).
const hasGraph = (info) => Boolean(info && info.meta && info.meta.knobs && info.meta.knobs.graph);

// How turns go in the session types without a graph.
const TURN_RULES = {
  conversation: "Free turns: either may speak at any time; the one who did not speak last is expected next.",
  discussion: "Strict round robin, from the creator.",
  consulting: "A question, then its answer.",
};

// renderTurns shows, for a session without a graph, its participants and
// whose turn it is, in place of the graph; a session with one shows its
// graph.
function renderTurns(info) {
  const m = info.meta || {};
  const graph = hasGraph(info);
  $("#graph-card").hidden = !graph;
  $("#turns-card").hidden = graph;
  if (graph) return;
  const ended = info.state === "CLOSED" || info.state === "EXPIRED";
  const next = new Set(ended ? [] : info.expected || []);
  $("#turns").replaceChildren(...(m.participants || []).map((p) => el("li", { "data-participant": p.name, class: next.has(p.name) ? "expected" : null },
    el("b", { text: p.name }),
    p.name === m.creator ? el("span", { class: "muted", text: " · creator" }) : null,
    p.role && p.role !== "creator" ? el("span", { class: "muted", text: ` · ${p.role}` }) : null,
    next.has(p.name) ? el("span", { class: "turn", text: "to speak" }) : null)));
  const rule = TURN_RULES[(m.type || "").split("@")[0]] || "Turns follow the session type.";
  $("#turns-rule").textContent = ended ? "Ended: nobody's turn."
    : info.state === "PENDING" ? `${rule} Waiting for the invitees to accept.`
      : next.size ? rule : `${rule} Nobody may speak now: a turn is held (by a pending question or a delegation).`;
}

// updateClose offers the close button to the session's creator and to
// operators (who may close it) while it runs.
function updateClose(info) {
  const running = info.state === "PENDING" || info.state === "OPEN";
  $("#s-close-box").hidden = !(running && (me.operator || me.agent === (info.meta || {}).creator));
}

// wireClose makes the close button work: it asks for a reason and a
// confirmation, then closes the session through the JSON API, and shows
// the result or the refusal with its reason.
function wireClose(enc, refresh) {
  const open = $("#s-close-open"), form = $("#s-close-form"), result = $("#s-close-result");
  const ask = (yes) => { form.hidden = !yes; open.hidden = yes; if (yes) form.elements.reason.focus(); };
  open.addEventListener("click", () => ask(true));
  $("#s-close-cancel").addEventListener("click", () => ask(false));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const reason = form.elements.reason.value.trim();
    try {
      const r = await api(`/v1/sessions/${enc}:close`, { method: "POST", body: reason ? { reason } : {} });
      result.className = "close-result ok";
      result.textContent = `Closed: ${reason || "explicit_close"}${r && r.seq ? ` (#${r.seq})` : ""}`;
      $("#s-close-box").hidden = true;
      refresh();
    } catch (e) {
      result.className = "close-result error";
      result.textContent = `Refused: ${e.message}${e.reason ? ` (${e.reason})` : ""}`;
    }
    result.hidden = false;
  });
}

// ---- routing -------------------------------------------------------------

async function route() {
  leave();
  if (!me.signed_in) { renderSignIn(); return; }
  const m = location.hash.match(/^#\/s\/([0-9a-fA-F-]{36})/);
  if (m) renderSession(m[1]); else renderList();
}

$("#view-as").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const name = new FormData(ev.target).get("agent").trim();
  if (name) switchTo(name);
});
$("#dev-back").addEventListener("click", () => switchTo(""));
$("#signout").addEventListener("click", async () => {
  await fetch("/v1/auth/signout", { method: "POST", credentials: "same-origin" });
  await whoami();
  route();
});
// The list keeps its filters in the hash with replaceState, which fires no
// hashchange: a hashchange is a change of page.
window.addEventListener("hashchange", route);
(async () => { await whoami(); route(); })();
