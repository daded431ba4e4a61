// hubd's live web view: plain JavaScript, no build step. It talks to the
// JSON API (/v1/...), the event streams (EventSource on
// /v1/sessions/{id}/events) and the web view's own routes (/ui/...); the
// sign-in cookie stands for the credentials.
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

async function whoami() {
  try { me = await api("/v1/auth/whoami"); } catch { me = { signed_in: false, dev: false }; }
  const who = $("#who");
  who.textContent = me.signed_in ? `${me.agent}${me.operator ? " (operator)" : ""}` : "";
  $("#signout").hidden = !me.signed_in;
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
        el("td", { text: s.close_reason || "" }));
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

function describe(env) {
  const body = [], extra = [];
  const t = env.type;
  const kv = (o) => Object.entries(o || {}).map(([k, v]) => `${k}=${json(v)}`).join(", ");
  switch (t) {
    case "text": case "message":
      body.push((env.text || env.message || {}).text || ""); break;
    case "packet": {
      const p = env.packet || {};
      body.push(p.body || "");
      const r = p.routing || {};
      if (r.kind && r.kind !== "text") extra.push(`routing: ${r.kind}${r.target ? " → " + r.target : ""}${r.tool ? " tool " + r.tool : ""}${r.reason ? " (" + r.reason + ")" : ""}`);
      const cu = p.context_updates;
      if (cu && (cu.set || cu.delete)) extra.push(`context: ${kv(cu.set)}${cu.delete ? " delete " + cu.delete.join(", ") : ""}`);
      if (p.usage) extra.push(`usage: ${p.usage.input_tokens || 0} in, ${p.usage.output_tokens || 0} out`);
      break;
    }
    case "context_set": {
      const cu = env.context_set || {};
      body.push(`context: ${kv(cu.set)}${cu.delete ? " delete " + cu.delete.join(", ") : ""}`); break;
    }
    case "expectation_violated": {
      const v = env.violation || {};
      body.push(`timer fired: ${v.expectation} (${v.action})${v.violators ? " — " + v.violators.join(", ") : ""}`);
      if (v.detail) extra.push(v.detail);
      break;
    }
    case "session_closed": case "session_expired": case "session_invite_reject": {
      const e = env.ended || {};
      body.push(`${t === "session_expired" ? "expired" : t === "session_invite_reject" ? "rejected" : "closed"}: ${e.reason || ""}`);
      if (e.detail) extra.push(e.detail);
      break;
    }
    case "question": {
      const q = env.question || {};
      body.push(`Q: ${q.text || ""}`);
      if (q.options) extra.push("options: " + q.options.map((o) => `${o.id} (${o.label || o.id})`).join(", "));
      extra.push(`answerer: ${q.answerer || "(the root's creator)"}`);
      break;
    }
    case "answer": {
      const a = env.answer || {};
      body.push(`answer to ${a.question_id}: ${a.option_ids ? a.option_ids.join(", ") : ""}${a.text || ""}${a.defaulted ? " (default)" : ""}${a.by ? " by " + a.by : ""}`);
      break;
    }
    case "delegation": {
      const d = env.delegation || {};
      body.push(`delegated to ${(d.child_session_ids || []).length} child session(s), ${d.mode || ""} ${d.await || ""}`);
      break;
    }
    case "delegation_result": {
      const d = env.delegation_result || {};
      body.push(`child ${d.child_session_id} ${d.state}: ${d.reason}${d.summary ? " — " + d.summary : ""}`);
      break;
    }
    case "session_invite":
      body.push(`invited ${((env.invite || {}).invitees || []).join(", ") || "(everyone auto-accepted)"}`); break;
    default: {
      const skip = new Set(["session_id", "seq", "id", "from", "audience", "type", "call", "accepted_at", "rule", "traceparent", "client_msg_id", "causation_id"]);
      const rest = Object.fromEntries(Object.entries(env).filter(([k]) => !skip.has(k)));
      if (Object.keys(rest).length) body.push(json(rest));
    }
  }
  return { body: body.join("\n"), extra };
}

function renderEnvelope(env, fresh) {
  const { body, extra } = describe(env);
  const to = env.audience ? ` → ${(env.audience.names || []).join(", ") || "(log only)"}` : "";
  return el("li", { class: `t-${env.type}${fresh ? " new" : ""}`, "data-seq": env.seq, "data-type": env.type },
    el("div", { class: "ev-head" },
      el("span", { text: `#${env.seq}` }),
      el("span", { text: fmtTime(env.accepted_at) }),
      el("span", { class: "from", text: (env.from || "hub") + to }),
      el("span", { class: "type", text: env.type })),
    body ? el("div", { class: "ev-body", text: body }) : null,
    extra.map((x) => el("div", { class: "ev-extra", text: x })),
    env.rule ? el("div", { class: "ev-rule", title: "the rule that decided this turn", text: `rule: ${env.rule}` }) : null);
}

function renderSession(id) {
  const app = $("#app");
  app.replaceChildren(tpl("t-session"));
  $("#s-id").textContent = id;
  let info = null, deadlines = [], ended = false;
  const enc = encodeURIComponent(id);

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
    if (info.close_reason) { $("#s-close-reason").textContent = info.close_reason; $("#s-close").hidden = false; }
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
      return el("div", { class: "question" },
        el("div", {}, el("b", { text: pq.asker || pq.envelope.from }), " asks ", el("span", { class: "muted", text: `(answerer: ${q.answerer || "the root's creator"})` })),
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
        s.close_reason ? el("span", { class: "muted", text: ` — ${s.close_reason}` }) : null,
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
  const es = new EventSource(`/v1/sessions/${enc}/events?from=1`);
  es.addEventListener("open", () => { live.textContent = "● live"; live.className = "live on"; });
  es.addEventListener("envelope", (ev) => {
    const env = JSON.parse(ev.data);
    if (timeline.querySelector(`li[data-seq="${env.seq}"]`)) return;
    if (env.type === "delegation") delegated = true;
    timeline.append(renderEnvelope(env, caughtUp));
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
      if (end.close_reason) { $("#s-close-reason").textContent = end.close_reason; $("#s-close").hidden = false; }
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

// ---- routing -------------------------------------------------------------

async function route() {
  leave();
  if (!me.signed_in) { renderSignIn(); return; }
  const m = location.hash.match(/^#\/s\/([0-9a-fA-F-]{36})/);
  if (m) renderSession(m[1]); else renderList();
}

$("#signout").addEventListener("click", async () => {
  await fetch("/v1/auth/signout", { method: "POST", credentials: "same-origin" });
  await whoami();
  route();
});
// The list keeps its filters in the hash with replaceState, which fires no
// hashchange: a hashchange is a change of page.
window.addEventListener("hashchange", route);
(async () => { await whoami(); route(); })();
