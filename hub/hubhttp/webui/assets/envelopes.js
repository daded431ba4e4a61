// hubd's web view: how envelopes, close reasons, tool calls and questions
// read to people. Loaded before app.js; what it defines is called once the
// page runs, and uses app.js's helpers (el, json).
"use strict";

// ---- close reasons -------------------------------------------------------

// What a close reason means. A session's own ends are normal: its graph's
// terminate reason, sequence_complete, finished (or a finish packet's
// reason), consulting_complete, max_turns, after_work, and a reason a
// caller gave when closing it. Cut short (warn): explicit_close (closed by
// hand, no reason given), cancelled, parent_closed, invite_rejected,
// max_handoffs (a handoff loop stopped). Failures (bad): a timer
// (expectation_violated:NAME), ttl_expired, invite_timeout,
// budget_exceeded, depth_exceeded.
const CLOSE_CUT = new Set(["explicit_close", "cancelled", "parent_closed", "invite_rejected", "max_handoffs"]);
const CLOSE_FAILED = new Set(["ttl_expired", "invite_timeout", "budget_exceeded", "depth_exceeded"]);
const CLOSE_MEANING = { ok: "a normal end", warn: "cut short", bad: "a failure" };

// closeClass is "ok", "warn" or "bad" for a close reason ("" for none).
function closeClass(reason) {
  if (!reason) return "";
  if (reason.startsWith("expectation_violated:") || CLOSE_FAILED.has(reason)) return "bad";
  if (CLOSE_CUT.has(reason)) return "warn";
  return "ok";
}

// reasonBadge is a close reason, colored by what it means.
function reasonBadge(reason) {
  const c = closeClass(reason);
  return el("span", { class: `reason reason-${c}`, title: CLOSE_MEANING[c], text: reason });
}

// ---- values --------------------------------------------------------------

// valueNode shows a JSON value: a string as it is, a short value compact,
// a long one formatted.
function valueNode(v) {
  if (typeof v === "string") return el("span", { class: "v", text: v });
  const short = json(v);
  if (short === undefined || short.length <= 100) return el("code", { class: "v", text: String(short) });
  return el("pre", { class: "v", text: JSON.stringify(v, null, 2) });
}

// argList shows an object as "key: value" lines.
function argList(obj, none) {
  const entries = Object.entries(obj || {});
  if (!entries.length) return el("div", { class: "args muted", text: none });
  return el("div", { class: "args" }, entries.map(([k, v]) => el("div", { class: "arg" }, el("span", { class: "k", text: `${k}:` }), " ", valueNode(v))));
}

// ---- questions -----------------------------------------------------------

const optionLabel = (q, id) => ((q && q.options) || []).filter((o) => o.id === id).map((o) => o.label || o.id)[0] || id;
const answererOf = (q) => q.answerer || "the root session's creator";

// questionLines are a question's choices and who must answer it.
function questionLines(q) {
  const opts = q.options || [];
  return [
    opts.length ? `options: ${opts.map((o) => o.label || o.id).join(" · ")}${q.multiple ? " (several may be chosen)" : ""}` : "a free-text answer",
    `${answererOf(q)} must answer`,
  ];
}

// ---- envelopes -----------------------------------------------------------

// routeLine says what a packet's routing does, or null for a plain turn.
function routeLine(r) {
  const why = r.reason ? `: ${r.reason}` : "";
  let text;
  switch (r.kind) {
    case "handoff":
      text = `↪ hands off to ${r.target || "whom the graph picks"}${r.tool ? ` (by the tool ${r.tool})` : ""}${why}`; break;
    case "finish":
      text = `■ finishes the session${why}${r.summary ? ` — ${r.summary}` : ""}`; break;
    case "escalate":
      text = `⇡ escalates to the supervisor${why}`; break;
    case "pass_caller":
      text = `↪ passes the caller to ${r.target}${why}`; break;
    default:
      return null;
  }
  return el("div", { class: `ev-route route-${r.kind}`, text });
}

function contextLine(cu) {
  const kv = (o) => Object.entries(o || {}).map(([k, v]) => `${k}=${json(v)}`).join(", ");
  return `context: ${kv(cu.set)}${cu.delete ? " delete " + cu.delete.join(", ") : ""}`;
}

// describe returns how an envelope reads: its body (text or nodes), extra
// lines, and a class for its item. known maps the page's question ids to
// their questions, and learns the ones it sees.
function describe(env, known) {
  const out = { body: null, extra: [], cls: "" };
  switch (env.type) {
    case "text": case "message":
      out.body = (env.text || env.message || {}).text || ""; break;
    case "packet": {
      const p = env.packet || {};
      out.body = p.body || "";
      out.extra.push(routeLine(p.routing || {}));
      const cu = p.context_updates;
      if (cu && (cu.set || cu.delete)) out.extra.push(contextLine(cu));
      if (p.usage) out.extra.push(`usage: ${p.usage.input_tokens || 0} in, ${p.usage.output_tokens || 0} out`);
      break;
    }
    case "context_set":
      out.body = contextLine(env.context_set || {}); break;
    case "expectation_violated": {
      const v = env.violation || {};
      out.body = `timer fired: ${v.expectation} (${v.action})${v.violators ? " — " + v.violators.join(", ") : ""}`;
      if (v.detail) out.extra.push(v.detail);
      break;
    }
    case "session_closed": case "session_expired": case "session_invite_reject": {
      const e = env.ended || {};
      const verb = env.type === "session_expired" ? "expired" : env.type === "session_invite_reject" ? "rejected" : "closed";
      out.body = el("span", {}, `${verb}: `, env.type === "session_invite_reject" ? e.reason || "" : reasonBadge(e.reason || ""));
      if (env.type !== "session_invite_reject") out.cls = `end-${closeClass(e.reason)}`;
      if (e.detail) out.extra.push(e.detail);
      break;
    }
    case "question": describeQuestion(env.question || {}, out, known); break;
    case "answer": describeAnswer(env.answer || {}, out, known); break;
    case "question_closed": {
      const c = env.question_closed || {};
      const q = known.get(c.question_id);
      out.body = el("span", { title: `question ${c.question_id}` }, `question${q ? ` “${q.text}”` : ""} withdrawn${c.reason ? `: ${c.reason}` : ""}`);
      break;
    }
    case "tool_call": describeToolCall(env.tool_call || {}, out); break;
    case "tool_result": describeToolResult(env.tool_result || {}, out); break;
    case "delegation": {
      const d = env.delegation || {};
      out.body = `delegated to ${(d.child_session_ids || []).length} child session(s), ${d.mode || ""} ${d.await || ""}`;
      break;
    }
    case "delegation_result": {
      const d = env.delegation_result || {};
      out.body = el("span", {}, `child ${d.child_session_id} ${d.state}: `, reasonBadge(d.reason || ""), d.summary ? ` — ${d.summary}` : "");
      break;
    }
    case "operator_action": describeOperatorAction(env.operator_action || {}, out); break;
    case "session_forked": describeFork(env.fork || {}, out); break;
    case "session_invite":
      out.body = `invited ${((env.invite || {}).invitees || []).join(", ") || "(everyone auto-accepted)"}`; break;
    default: {
      const skip = new Set(["session_id", "seq", "id", "from", "audience", "type", "call", "accepted_at", "rule", "traceparent", "client_msg_id", "causation_id"]);
      const rest = Object.fromEntries(Object.entries(env).filter(([k]) => !skip.has(k)));
      if (Object.keys(rest).length) out.body = json(rest);
    }
  }
  out.extra = out.extra.filter(Boolean);
  return out;
}

function describeQuestion(q, out, known) {
  if (q.question_id) known.set(q.question_id, q);
  out.body = el("span", { class: "q-text", title: `question ${q.question_id}` }, `asks: ${q.text || ""}`);
  out.extra.push(...questionLines(q));
}

function describeAnswer(a, out, known) {
  const q = known.get(a.question_id);
  const chosen = [...(a.option_ids || []).map((id) => optionLabel(q, id)), a.text].filter(Boolean).join(", ");
  out.body = el("span", { title: `question ${a.question_id}` },
    `answers ${q ? `“${q.text}”` : "a question"}: ${chosen}${a.defaulted ? " (the default, at the deadline)" : ""}${a.by ? ` — by ${a.by}` : ""}`);
}

function describeToolCall(c, out) {
  out.body = el("span", { class: "tool", title: c.call_id ? `call ${c.call_id}` : null }, "calls ", el("code", { class: "tool-name", text: c.name || "a tool" }));
  out.extra.push(argList(c.arguments, "no arguments"));
}

function describeToolResult(r, out) {
  const name = el("code", { class: "tool-name", text: r.name || "a tool" });
  const title = r.call_id ? `call ${r.call_id}` : null;
  if (r.error) {
    out.cls = "failed";
    out.body = el("span", { class: "tool", title }, name, " failed: ", el("span", { class: "ev-error", text: r.error }));
    return;
  }
  out.cls = "ok";
  out.body = el("span", { class: "tool", title }, name, " returned");
  const v = r.result;
  if (v && typeof v === "object" && !Array.isArray(v)) out.extra.push(argList(v, "an empty object"));
  else if (v !== undefined) out.extra.push(el("div", { class: "args" }, valueNode(v)));
}

// renderEnvelope is an envelope's item in the timeline.
function renderEnvelope(env, fresh, known) {
  const { body, extra, cls } = describe(env, known);
  const to = env.audience ? ` → ${(env.audience.names || []).join(", ") || "(log only)"}` : "";
  return el("li", { class: `t-${env.type}${cls ? " " + cls : ""}${fresh ? " new" : ""}`, "data-seq": env.seq, "data-type": env.type },
    el("div", { class: "ev-head" },
      el("span", { text: `#${env.seq}` }),
      el("span", { text: fmtTime(env.accepted_at) }),
      el("span", { class: "from", text: (env.from || "hub") + to }),
      el("span", { class: "type", text: env.type })),
    body !== null && body !== "" ? el("div", { class: "ev-body" }, body) : null,
    extra.map((x) => (x instanceof Node ? x : el("div", { class: "ev-extra", text: x }))),
    env.rule ? el("div", { class: "ev-rule", title: "the rule that decided this turn", text: `rule: ${env.rule}` }) : null);
}
