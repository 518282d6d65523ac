// The Chorus timeline page: plain script, no build step, no third-party code.
//
// Views (hash routes): #/ the runs, #/run/ID a run's timeline (one lane per actor stream,
// live through the SSE route; click an event for its payload and the actor's state at that
// version), #/diff?a=RUN&b=RUN the diff of two runs, #/compare?a=RUN&b=RUN the two side by side
// at the first event where they part (aligned events, the state diff, the prompt diff).
// A run's page acts (replay, fork here, cancel, resume, signal, export), each confirmed and
// each checked by the server against the token's scope, and has a time axis (bars sized by
// wall time per actor lane). A simulation run also shows who is
// where at each cycle, derived from its world and director events.
//
// Auth: the bearer token typed in the header box is kept in localStorage and sent as
// `Authorization: Bearer` on every fetch; the live stream is read with fetch and a body
// reader (EventSource cannot send headers). Every piece of server text reaches the DOM as a
// text node (textContent), never as HTML.
"use strict";

(function () {
  const TOKEN_KEY = "chorus.token";
  const PAGE = 50;
  const EVENTS_PAGE = 500;
  const TERMINAL = new Set(["completed", "failed", "cancelled"]);
  // what the runtime writes at the head of a fork's stream (side by side gives each a row of its own)
  const FORK_MARKS = new Set(["AgentForked", "FunctionForked", "PromptEdited"]);

  let token = "";
  try { token = localStorage.getItem(TOKEN_KEY) || ""; } catch (e) { token = ""; }
  let current = null; // the open view's controller: {stop()}

  // -- DOM helpers: text only ------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = String(v);
      else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "style") Object.assign(el.style, v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    }
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }
  function $(id) { return document.getElementById(id); }

  function short(text, n) {
    const s = String(text === null || text === undefined ? "" : text).replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  function when(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    const p = (x) => String(x).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  function json(value) { return h("pre", { class: "json", text: JSON.stringify(value, null, 2) }); }

  // -- talking to the API --------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, detail) { super(detail); this.status = status; this.detail = detail; }
  }

  function headers(extra) {
    const out = Object.assign({ Accept: "application/json" }, extra || {});
    if (token) out.Authorization = "Bearer " + token;
    return out;
  }

  async function api(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== null && v !== undefined) q.set(k, v);
    const url = "v1/" + path + (q.toString() ? "?" + q : "");
    let resp;
    try {
      resp = await fetch(url, { headers: headers() });
    } catch (e) {
      throw new ApiError(0, "cannot reach the Chorus server (" + e.message + ")");
    }
    if (!resp.ok) throw new ApiError(resp.status, await detailOf(resp));
    return resp.json();
  }

  // A POST (or another method) with a JSON body; the answer's JSON.
  async function send(path, body, method) {
    let resp;
    try {
      resp = await fetch("v1/" + path, {
        method: method || "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw new ApiError(0, "cannot reach the Chorus server (" + e.message + ")");
    }
    if (!resp.ok) throw new ApiError(resp.status, await detailOf(resp));
    return resp.json();
  }

  async function detailOf(resp) {
    try {
      const body = await resp.json();
      const d = body && body.detail !== undefined ? body.detail : body;
      return typeof d === "string" ? d : JSON.stringify(d);
    } catch (e) {
      return resp.statusText || "HTTP " + resp.status;
    }
  }

  // A clear message for any failure; auth failures say what to do.
  function problem(err) {
    const box = h("div", { class: "problem" });
    if (err instanceof ApiError && err.status === 401) {
      box.classList.add("auth");
      append(box, [
        h("h2", { text: token ? "Token not accepted" : "Token needed" }),
        h("p", {
          text: token
            ? "The server did not accept the token in the box above (" + err.detail + "). Enter another bearer token."
            : "This Chorus server has authentication on: enter a bearer token in the box above to see its runs. The token is kept in this browser only.",
        }),
      ]);
      $("token").focus();
    } else if (err instanceof ApiError && err.status === 403) {
      box.classList.add("auth");
      append(box, [h("h2", { text: "Not allowed" }), h("p", { text: err.detail })]);
    } else if (err instanceof ApiError) {
      append(box, [h("h2", { text: err.status ? "Error " + err.status : "Server unreachable" }), h("p", { text: err.detail })]);
    } else {
      append(box, [h("h2", { text: "Error" }), h("p", { text: String(err && err.message ? err.message : err) })]);
    }
    return box;
  }

  // -- token box -----------------------------------------------------------------------------

  function showTokenState() {
    $("token").value = token;
    $("token-state").textContent = token ? "token set" : "no token";
    $("token-state").className = token ? "ok" : "muted";
  }

  function setToken(value) {
    token = value.trim();
    try {
      if (token) localStorage.setItem(TOKEN_KEY, token);
      else localStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* private mode: the token lives for this page only */ }
    showTokenState();
    route();
  }

  // -- routing -------------------------------------------------------------------------------

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?");
    return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query || "") };
  }

  function route() {
    if (current) current.stop();
    current = null;
    const view = $("view");
    clear(view);
    const { parts, query } = parseHash();
    if (parts[0] === "run" && parts[1]) current = runView(view, parts[1], parseInt(query.get("at") || "", 10));
    else if (parts[0] === "diff") current = diffView(view, query);
    else if (parts[0] === "compare") current = compareView(view, query);
    else current = runsView(view, query);
  }

  // -- the runs ------------------------------------------------------------------------------

  function llmCalls(run) {
    for (const v of [run.llm_calls, run.usage && run.usage.llm_calls, run.usage && run.usage.calls]) {
      if (v !== undefined && v !== null) return String(v);
    }
    return null;
  }

  // A run's LLM usage, from its call log (GET /v1/runs/{id}/llm): "3" and a title with the tokens.
  function usageText(log) {
    const u = log && log.usage;
    if (!u) return ["0", "no LLM calls"];
    const failed = u.failed ? `, ${u.failed} failed` : "";
    return [String(u.calls), `${u.prompt_tokens} prompt + ${u.completion_tokens} completion tokens, ${secs(u.latency_s)} in all${failed}`];
  }

  // Fill LLM-call cells from each run's call log, a few requests at a time.
  function fillUsage(cells, isStopped) {
    const queue = [...cells];
    const worker = async () => {
      while (queue.length && !isStopped()) {
        const [runId, cell, tokensCell] = queue.shift();
        try {
          const log = await api(`runs/${encodeURIComponent(runId)}/llm`);
          const [text, title] = usageText(log);
          cell.textContent = text;
          cell.title = title;
          if (tokensCell) {
            const u = log && log.usage;
            tokensCell.textContent = u ? String((u.prompt_tokens || 0) + (u.completion_tokens || 0)) : "0";
            tokensCell.title = title;
          }
        } catch (err) {
          cell.textContent = "?";
          cell.title = err.message;
          if (tokensCell) tokensCell.textContent = "?";
        }
      }
    };
    for (let i = 0; i < 4; i++) worker();
  }

  function usageCells(run, pending) {
    const known = llmCalls(run);
    const cell = h("td", { class: "num llm-calls", text: known === null ? "…" : known });
    const tokens = h("td", { class: "num tokens", text: "…" });
    pending.push([run.run_id, cell, tokens]);
    return [cell, tokens];
  }

  // How long a run took (or has been going): "12.3 s", "4 min 5 s", "1 h 2 min".
  function duration(run) {
    const start = Date.parse(run.submitted_at || run.started_at || "");
    if (isNaN(start)) return "—";
    const end = run.ended_at ? Date.parse(run.ended_at) : Date.now();
    const s = Math.max(0, (end - start) / 1000);
    const text = s < 60 ? s.toFixed(1) + " s" : s < 3600 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s` : `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
    return run.ended_at ? text : text + " so far";
  }

  // The run a fork came from: its `forked_from` is RUN@POSITION (a run id may hold "@" too).
  function originOf(forkedFrom) {
    const text = String(forkedFrom);
    const at = text.lastIndexOf("@");
    return at > 0 ? text.slice(0, at) : text;
  }

  // The runs in fork order: each fork right under the run it came from (when on this page).
  function forkTree(runs) {
    const ids = new Set(runs.map((r) => r.run_id));
    const parentOf = (r) => (r.forked_from ? originOf(r.forked_from) : null);
    const children = new Map();
    for (const r of runs) {
      const p = parentOf(r);
      if (p && ids.has(p) && p !== r.run_id) {
        if (!children.has(p)) children.set(p, []);
        children.get(p).push(r);
      }
    }
    const out = [];
    const seen = new Set();
    const walk = (r, depth) => {
      if (seen.has(r.run_id)) return;
      seen.add(r.run_id);
      out.push([r, depth]);
      for (const c of children.get(r.run_id) || []) walk(c, depth + 1);
    };
    for (const r of runs) {
      const p = parentOf(r);
      if (!(p && ids.has(p) && p !== r.run_id)) walk(r, 0);
    }
    for (const r of runs) walk(r, 0); // a cycle (cannot happen): still every run once
    return out;
  }

  function kindOf(run) { return run.kind || "—"; }

  function runsView(view, query) {
    const offset = Math.max(0, parseInt(query.get("offset") || "0", 10) || 0);
    const kind = query.get("kind") || "";
    const status = query.get("status") || "";
    const chosen = new Set();
    const diffButton = h("button", { type: "button", id: "diff-selected", disabled: true, text: "Diff the two selected runs" });
    diffButton.addEventListener("click", () => {
      const [a, b] = [...chosen];
      location.hash = "#/diff?" + new URLSearchParams({ a, b });
    });
    const compareButton = h("button", { type: "button", id: "compare-selected", disabled: true, text: "Side by side" });
    compareButton.addEventListener("click", () => {
      const [a, b] = [...chosen];
      location.hash = "#/compare?" + new URLSearchParams({ a, b });
    });
    const search = h("input", { id: "run-search", type: "search", placeholder: "search id, goal, kind…", size: 24, value: query.get("q") || "" });
    const kindInput = h("input", { name: "kind", value: kind, placeholder: "any kind", size: 12 });
    const statusSelect = h("select", { name: "status" },
      ["", "submitted", "running", "completed", "failed"].map((s) =>
        h("option", { value: s, selected: s === status, text: s || "any status" })));
    const filters = h("form", { class: "filters", onsubmit: (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      if (kindInput.value.trim()) q.set("kind", kindInput.value.trim());
      if (statusSelect.value) q.set("status", statusSelect.value);
      location.hash = "#/" + (q.toString() ? "?" + q : "");
    } }, h("label", {}, "Kind ", kindInput), h("label", {}, "Status ", statusSelect), h("button", { type: "submit", text: "Filter" }),
      h("label", {}, "Search ", search), diffButton, compareButton);
    const applySearch = () => {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const tr of body.querySelectorAll("tr.run")) {
        const text = tr.dataset.search || "";
        tr.hidden = !words.every((w) => text.includes(w));
      }
    };
    search.addEventListener("input", applySearch);
    const body = h("div", { id: "runs" }, h("p", { class: "muted", text: "Loading runs…" }));
    append(view, [h("h1", { text: "Runs" }), filters, body]);

    let stopped = false;
    api("runs", { kind, status, limit: PAGE, offset }).then((page) => {
      if (stopped) return;
      clear(body);
      const runs = page.runs || [];
      if (!runs.length) {
        body.appendChild(h("p", { class: "empty", text: offset ? "No more runs." : "No runs yet." }));
      } else {
        const pending = [];
        const rows = forkTree(runs).map(([run, depth]) => {
          const box = h("input", { type: "checkbox", title: "select for a diff", "aria-label": "select " + run.run_id });
          box.addEventListener("change", () => {
            if (box.checked) chosen.add(run.run_id); else chosen.delete(run.run_id);
            diffButton.disabled = chosen.size !== 2;
            compareButton.disabled = chosen.size !== 2;
          });
          const status = String(run.status || "") + (run.waiting_for ? " (waiting: " + run.waiting_for + ")" : "");
          return h("tr", { class: "run" + (depth ? " fork" : ""), dataset: { run: run.run_id, depth: String(depth), search: [run.run_id, run.goal, kindOf(run), run.status, run.forked_from].join(" ").toLowerCase() } },
            h("td", {}, box),
            h("td", { class: "run-id", style: depth ? { paddingLeft: (0.6 + 1.4 * depth) + "em" } : null, title: run.forked_from ? "a fork of " + run.forked_from : null },
              h("a", { href: "#/run/" + encodeURIComponent(run.run_id), class: "run-link", text: run.run_id })),
            h("td", { class: "kind", text: kindOf(run) }),
            h("td", {}, h("span", { class: "status " + String(run.status || ""), text: status || "—" })),
            h("td", { class: "goal", title: run.goal || "", text: short(run.goal, 90) }),
            h("td", { class: "time", text: when(run.submitted_at || run.started_at) }),
            h("td", { class: "num duration", text: duration(run) }),
            usageCells(run, pending));
        });
        body.appendChild(h("table", { class: "runs" },
          h("thead", {}, h("tr", {}, ["", "Run", "Kind", "Status", "Goal", "Started", "Duration", "LLM calls", "Tokens"].map((t) => h("th", { text: t })))),
          h("tbody", {}, rows)));
        applySearch();
        fillUsage(pending, () => stopped);
      }
      const total = typeof page.total === "number" ? page.total : offset + runs.length;
      const nav = h("p", { class: "pager" }, `${runs.length ? offset + 1 : 0}–${offset + runs.length} of ${total} `);
      const link = (o, label) => {
        const q = new URLSearchParams({ offset: String(o) });
        if (kind) q.set("kind", kind);
        if (status) q.set("status", status);
        return h("a", { href: "#/?" + q, text: label });
      };
      if (offset > 0) nav.appendChild(link(Math.max(0, offset - PAGE), "← newer"));
      if (offset + runs.length < total) { nav.appendChild(document.createTextNode(" ")); nav.appendChild(link(offset + PAGE, "older →")); }
      body.appendChild(nav);
    }).catch((err) => { if (!stopped) { clear(body); body.appendChild(problem(err)); } });
    return { stop() { stopped = true; } };
  }

  // -- one run: timeline, details, live stream -----------------------------------------------

  function dataOf(e) {
    if (e.data && typeof e.data === "object") return e.data;
    if (e.payload && typeof e.payload === "object") return e.payload;
    return {};
  }

  function errorLine(err) {
    if (!err) return "";
    if (typeof err === "string") return err;
    return [err.type, err.reason ? "(" + err.reason + ")" : "", err.message ? ": " + err.message : ""].join(" ").replace(" :", ":").trim();
  }

  function secs(x) { return typeof x === "number" ? x.toFixed(x < 1 ? 3 : 2) + " s" : ""; }

  // [label, css class] for an event's chip.
  function describe(e, names) {
    const d = dataOf(e);
    const nm = (id) => (names && names[id]) || id;
    switch (e.type) {
      case "RunSubmitted": return ["goal: " + short(d.goal, 80), "run"];
      case "RunStarted": return ["lead: " + (d.lead_stream || ""), "run"];
      case "RunWaiting": return [d.waiting_for === "sleep" ? "waiting on a timer" + (d.until ? " until " + when(d.until) : "") : `waiting for the signal “${d.waiting_for}”`, "run"];
      case "RunCompleted": return ["completed: " + short(d.result, 80), "run done"];
      case "RunFailed": return ["failed: " + short(errorLine(d.error), 100), "error"];
      case "BudgetExceeded": return ["budget exceeded: " + short(errorLine(d.error), 100), "error"];
      case "AgentStarted": return ["goal: " + short(d.goal, 80), "step"];
      case "AgentForked": return [`forked from ${d.origin_run}@${d.origin_position}` + (d.model ? ", model " + d.model : "") + (d.params && d.params.temperature !== undefined ? ", temperature " + d.params.temperature : ""), "run"];
      case "CompletionEdited": return [`LLM call #${d.call_index}'s completion edited by ${d.edited_by}`, "edited"];
      case "PromptEdited": return [`LLM call #${d.call_index}'s prompt edited by ${d.edited_by}`, "edited"];
      case "StepDecided": return [`step ${d.iteration}: ${d.action}(${short(JSON.stringify(d.args || {}), 60)})`, "step"];
      case "StepRejected": return [`step ${d.iteration} rejected: ${short(d.reason, 80)}`, "error"];
      case "AnswerGiven": return ["answer: " + short(d.answer, 80), "step done"];
      case "AgentFailed": return ["failed: " + short(errorLine(d.error), 100), "error"];
      case "LlmRequested": return [`LLM call #${d.call_index} → ${d.model || "model"}`, "llm"];
      case "LlmCompleted": return [`LLM #${d.call_index}: ${d.prompt_tokens || 0}→${d.completion_tokens || 0} tokens, ${secs(d.latency_s)}`, "llm"];
      case "LlmFailed": return [`LLM #${d.call_index} failed: ${short(errorLine(d.error), 80)}`, "error"];
      case "ToolCalled": return [`${d.tool}(${short(JSON.stringify(d.args || {}), 60)})`, "tool"];
      case "ToolReturned":
        return d.ok === false
          ? [`${d.tool} error: ${short(errorLine(d.error) || d.output, 80)}`, "error"]
          : [`${d.tool} → ${short(d.output, 70)}${d.latency_s ? " (" + secs(d.latency_s) + ")" : ""}`, "tool"];
      case "CycleCommitted": return [`cycle ${d.cycle} committed (tick ${d.tick})`, "cycle"];
      case "CycleRolledBack": return [`cycle ${d.cycle} rolled back: ${short(d.message, 70)}`, "error"];
      case "EntityMoved": return [`${nm(d.entity_id)} → ${nm(d.location_id)}`, "world"];
      case "EntityContained": return [`${nm(d.entity_id)} into ${nm(d.container_id)}`, "world"];
      case "ClockAdvanced": return [`tick ${d.tick}`, "world"];
      case "ProcessTransitioned": return [`${nm(d.process_id)}: ${d.source} → ${d.target}`, "world"];
      case "ComponentChanged": return [`${nm(d.entity_id)}.${d.component}: ${short(JSON.stringify(d.changes || {}), 60)}`, "world"];
      case "StimulusQueued": return [`from ${d.source}: “${short(d.text, 60)}”`, "step"];
      case "SynthCreated": return [synthName(d) || "", "step"];
      case "Communicated": return [`${d.speaker || "outside"}: “${short(d.text, 70)}”`, "world"];
      case "SynthCognized": return [`cycle ${d.cycle}.${d.microcycle}: ${(d.intents || []).map((i) => i.kind || i.type || i.action || "intent").join(", ")}`, d.error ? "error" : "step"];
      default: {
        if (/Failed|Rejected|Error/.test(e.type || "")) return [e.type, "error"];
        return ["", ""];
      }
    }
  }

  function runView(view, runId, openAt) {
    const events = [];
    const byPos = new Map();
    const lanes = new Map(); // stream -> lane number (1-based, after the position column)
    const names = {}; // simulation entity and location ids -> names
    let last = 0;
    let run = null;
    let stopped = false;
    let selected = null;
    const abort = new AbortController();

    const header = h("section", { id: "run-head" }, h("h1", {}, "Run ", h("code", { text: runId })));
    const facts = h("dl", { class: "facts" });
    const liveState = h("span", { id: "live", class: "muted", text: "" });
    // While a run is live: its LLM calls in flight, with the tokens streamed so far (the
    // provider's progress notes, read by GET runs/ID/llm/open), until each call's answer comes.
    const callsLine = h("p", { id: "calls-open", class: "calls-open", "aria-live": "polite", hidden: true });
    const openLlm = new Set(); // stream#call_index of each LlmRequested not yet answered
    let callsTimer = null;
    header.appendChild(facts);
    header.appendChild(callsLine);
    const grid = h("div", { class: "timeline", id: "timeline" }, h("div", { class: "lane-head pos", style: { gridRow: "1", gridColumn: "1" }, text: "#" }));
    const detail = h("aside", { id: "detail" }, h("p", { class: "muted", text: "Click an event to see its payload and the actor's state at that version." }));
    const sim = h("section", { id: "sim", hidden: true });
    const problems = h("div", { id: "run-problem" });
    const actions = h("div", { id: "actions", class: "actions" });
    const outcome = h("div", { id: "action-result", "aria-live": "polite" });
    const axis = h("div", { id: "timeaxis", class: "timeaxis", hidden: true });
    const axisToggle = h("button", { type: "button", id: "axis-toggle", "aria-pressed": "false", text: "Time axis" });
    const gridWrap = h("div", { class: "timeline-wrap" }, grid);
    axisToggle.addEventListener("click", () => {
      const on = axis.hidden;
      axis.hidden = !on;
      gridWrap.hidden = on;
      axisToggle.setAttribute("aria-pressed", String(on));
      axisToggle.textContent = on ? "Event order" : "Time axis";
      if (on) drawAxis();
    });
    const labels = new Map(); // position -> [the kind's line, is an error]
    append(view, [
      h("p", {}, h("a", { href: "#/", text: "← runs" })),
      header, actions, outcome, problems, sim,
      h("h2", {}, "Timeline ", liveState, " ", axisToggle),
      h("div", { class: "split" }, h("div", {}, gridWrap, axis), detail),
    ]);

    // -- actions: each confirmed; the server checks the token's scope ----------------------------
    function say(node) { clear(outcome); if (node) outcome.appendChild(node); }

    function act(label, scope, question, doIt, opts) {
      const b = h("button", { type: "button", class: "act", id: "act-" + label.toLowerCase().replace(/[^a-z]+/g, "-"), title: "needs the " + scope + " scope", text: label });
      b.addEventListener("click", async () => {
        const q = typeof question === "function" ? question() : question;
        if (q === null) return;
        if (!window.confirm(q)) return;
        b.disabled = true;
        say(h("p", { class: "muted", text: label + "…" }));
        let done = false;
        try {
          say(await doIt());
          done = true;
        } catch (err) {
          say(problem(err));
        } finally {
          b.disabled = done && !!(opts && opts.once); // refused or failed: it may be tried again
        }
      });
      return b;
    }

    function verdict(r) {
      const box = h("div", { class: "verdict " + (r.ok ? "ok" : "bad"), id: "replay-verdict" });
      if (r.ok) {
        append(box, [h("strong", { text: "Replay identical" }),
          ` — ${r.events} events re-executed from the log, ${r.llm_calls} LLM calls and ${r.tool_calls} tool calls served from it, 0 live calls` +
          (r.replay_s ? ` (${secs(r.replay_s)} against ${secs(r.original_s)} live)` : "")]);
      } else {
        const d = r.divergence || {};
        append(box, [h("strong", { text: "Replay diverged" }), ` at ${d.stream_id}@${d.version}` + (d.reason ? ": " + d.reason : ""),
          h("pre", { class: "text", text: d.description || "" })]);
        const at = events.find((e) => e.stream_id === d.stream_id && e.version === d.version);
        if (at) append(box, [" ", h("button", { type: "button", text: "show that event", onclick: () => pick(at.position) })]);
      }
      for (const n of r.notes || []) box.appendChild(h("p", { class: "muted", text: n }));
      return box;
    }

    function showActions() {
      clear(actions);
      if (!run) return;
      const ended = TERMINAL.has(String(run.status));
      const enc = encodeURIComponent(runId);
      const sigName = h("input", { id: "signal-name", placeholder: "signal name", size: 12, value: run.waiting_for && run.waiting_for !== "sleep" ? run.waiting_for : "" });
      const sigPayload = h("input", { id: "signal-payload", placeholder: 'payload (JSON), e.g. {"approved": true}', size: 26 });
      append(actions, [
        act("Replay", "read", "Replay this run from its log? (no model, no tools: nothing live is called)",
          async () => verdict(await api(`runs/${enc}/replay`))),
        act("Export fixture", "read", "Download this run as a sealed JSON-lines replay fixture?", async () => {
          const resp = await fetch(`v1/runs/${enc}/fixture`, { headers: headers({ Accept: "application/x-ndjson" }) });
          if (!resp.ok) throw new ApiError(resp.status, await detailOf(resp));
          const blob = await resp.blob();
          const a = h("a", { href: URL.createObjectURL(blob), download: runId + ".jsonl" });
          document.body.appendChild(a);
          a.click();
          setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
          return h("p", { class: "ok", text: `exported ${runId}.jsonl (${blob.size} bytes)` });
        }),
        run.forked_from ? h("a", { class: "button", id: "compare-origin", href: "#/compare?" + new URLSearchParams({ a: originOf(run.forked_from), b: runId }), text: "Compare with origin" }) : null,
        ended ? null : act("Cancel", "operate", `Cancel run ${runId}? It is recorded as failed (cancelled) and its actors stopped.`, async () => {
          const r = await send(`runs/${enc}/cancel`, { reason: "from the debugging page" });
          run.status = r.status; showFacts(); showActions();
          return h("p", { text: `run ${r.run_id} is ${r.status}` + (r.error ? ": " + errorLine(r.error) : "") });
        }, { once: true }),
        ended ? null : act("Resume", "operate", `Serve run ${runId} again from its log? (for a run whose actors died)`, async () => {
          const r = await send(`runs/${enc}/resume`);
          return h("p", { text: `run ${r.run_id} resumed: ${r.status}` });
        }),
        ended ? null : h("span", { class: "signal" }, sigName, sigPayload, act("Signal", "operate", () => {
          const name = sigName.value.trim();
          if (!name) { say(problem(new Error("give the signal's name (what the run waits for)"))); return null; }
          return `Send signal “${name}” to run ${runId}?`;
        }, async () => {
          let payload = null;
          const raw = sigPayload.value.trim();
          if (raw) {
            try { payload = JSON.parse(raw); } catch (e) { payload = raw; }
          }
          const r = await send(`runs/${enc}/signals/${encodeURIComponent(sigName.value.trim())}`, { payload });
          return h("p", { text: `signal ${r.signal} sent; the run is ${r.status}` });
        })),
      ]);
    }

    function loadLabels() {
      api(`runs/${encodeURIComponent(runId)}/labels`).then((out) => {
        if (stopped) return;
        for (const l of out.labels || []) labels.set(l.position, [l.label, l.error]);
        for (const chip of grid.querySelectorAll(".ev")) relabel(chip);
      }).catch(() => { /* the page's own lines stand */ });
    }

    // the kind's line (its `describe`, plugins' event types included) as the chip's title,
    // and as its label where the page knows the type no better
    function relabel(chip) {
      const l = labels.get(parseInt(chip.dataset.pos, 10));
      if (!l) return;
      chip.title = l[0] + "  (" + chip.dataset.stream + ")";
      if (!chip.querySelector(".label")) chip.appendChild(h("span", { class: "label kind-label", text: l[0] }));
      if (l[1]) chip.classList.add("error");
    }

    function pick(position) {
      const chip = grid.querySelector(`.ev[data-pos='${position}']`);
      const e = byPos.get(position);
      if (chip && e) { select(e, chip); chip.scrollIntoView({ block: "center" }); }
    }

    // -- the time axis: per lane, bars sized by wall time ----------------------------------------
    function spans() {
      // [event, start ms, end ms, kind] for every event: LLM and tool calls span from the
      // request to the answer; other events are instants
      const t = (e) => Date.parse(e.timestamp || "");
      const out = [];
      const open = new Map();
      for (const e of events) {
        const d = dataOf(e);
        const key = e.stream_id + "#" + d.call_index;
        if (e.type === "LlmRequested" || e.type === "ToolCalled") { open.set((e.type === "ToolCalled" ? "tool:" : "llm:") + key, e); continue; }
        if (e.type === "LlmCompleted" || e.type === "LlmFailed" || e.type === "ToolReturned") {
          const isTool = e.type === "ToolReturned";
          const req = open.get((isTool ? "tool:" : "llm:") + key);
          const end = t(e);
          let start = req ? t(req) : NaN;
          if (typeof d.latency_s === "number" && (isNaN(start) || end - start < d.latency_s * 1000)) start = end - d.latency_s * 1000;
          if (isNaN(start)) start = end;
          out.push([e, start, end, isTool ? "tool" : e.type === "LlmFailed" ? "llm error" : "llm", req || null]);
          continue;
        }
        out.push([e, t(e), t(e), "instant", null]);
      }
      return out.filter((x) => !isNaN(x[1]) && !isNaN(x[2]));
    }

    function drawAxis() {
      clear(axis);
      const all = spans();
      if (!all.length) { axis.appendChild(h("p", { class: "empty", text: "No events with timestamps." })); return; }
      const t0 = Math.min(...all.map((x) => x[1]));
      const t1 = Math.max(...all.map((x) => x[2]));
      const total = Math.max(1, t1 - t0);
      const calls = all.filter((x) => x[3] !== "instant");
      const slowest = calls.length ? calls.reduce((m, x) => (x[2] - x[1] > m[2] - m[1] ? x : m)) : null;
      const fmt = (ms) => secs(ms / 1000);
      append(axis, [
        h("p", { class: "axis-head" }, `${fmt(total)} from the first event to the last. `,
          h("span", { class: "key llm", text: "LLM call" }), " ", h("span", { class: "key tool", text: "tool call" }), " ", h("span", { class: "key instant", text: "event" }),
          slowest ? [" · slowest: ", h("button", { type: "button", id: "slowest-link", class: "linkish", text: `${slowest[3] === "tool" ? "tool " + dataOf(slowest[0]).tool : "LLM #" + dataOf(slowest[0]).call_index} on ${slowest[0].stream_id}, ${fmt(slowest[2] - slowest[1])}`, onclick: () => pick(slowest[0].position) })] : null),
      ]);
      const streams = [...lanes.keys()];
      const ticks = h("div", { class: "axis-ticks" });
      for (let i = 0; i <= 4; i++) ticks.appendChild(h("span", { style: { left: (i * 25) + "%" }, text: fmt(total * i / 4) }));
      axis.appendChild(h("div", { class: "axis-row" }, h("div", { class: "axis-lane" }), ticks));
      for (const stream of streams) {
        const track = h("div", { class: "axis-track" });
        for (const x of all.filter((y) => y[0].stream_id === stream)) {
          const [e, a, b, kind] = x;
          const left = ((a - t0) / total) * 100;
          const width = ((b - a) / total) * 100;
          const d = dataOf(e);
          const what = kind === "tool" ? `${d.tool} (tool)` : kind.startsWith("llm") ? `LLM #${d.call_index}` : e.type;
          const bar = h("button", {
            type: "button",
            class: "bar " + kind + (x === slowest ? " slowest" : ""),
            style: { left: left + "%", width: kind === "instant" ? null : `max(${width}%, 3px)` },
            dataset: { pos: String(e.position), type: e.type, ms: String(Math.round(b - a)) },
            title: `${what}: ${fmt(b - a)} at +${fmt(a - t0)} (position ${e.position})`,
          }, kind !== "instant" && width > 8 ? h("span", { text: `${what} ${fmt(b - a)}` }) : null);
          bar.addEventListener("click", () => { const chip = grid.querySelector(`.ev[data-pos='${e.position}']`); if (chip) select(e, chip); });
          track.appendChild(bar);
        }
        axis.appendChild(h("div", { class: "axis-row" }, h("div", { class: "axis-lane", title: stream, text: stream }), track));
      }
    }

    const usage = h("span", { id: "run-llm", text: "…" });
    function loadUsage() {
      api(`runs/${encodeURIComponent(runId)}/llm`).then((log) => {
        const [text, title] = usageText(log);
        usage.textContent = text + " (" + title + ")";
      }).catch((err) => { usage.textContent = "? (" + err.message + ")"; });
    }

    let edit = null; // a fork with an edit: its CompletionEdited or PromptEdited event
    let forkAt = null; // a fork's origin position, from its AgentForked / FunctionForked
    function showFacts() {
      clear(facts);
      if (!run) return;
      const row = (k, v) => [h("dt", { text: k }), h("dd", {}, v)];
      // an agent's or a function's fork names the origin's position in its mark: open that event
      const fork = run.forked_from ? h("a", { id: "forked-from", href: "#/run/" + encodeURIComponent(originOf(run.forked_from)) + (forkAt !== null ? "?at=" + forkAt : ""), text: run.forked_from }) : null;
      append(facts, [
        row("Kind", kindOf(run)),
        row("Status", [h("span", { id: "run-status", class: "status " + String(run.status || ""), text: run.status || "—" }),
          run.status === "waiting" && run.waiting_for ? h("span", { id: "run-waiting", class: "muted", text: run.waiting_for === "sleep"
            ? " on a timer" + (run.wake_at ? ", until " + when(run.wake_at) : "") : ` for the signal “${run.waiting_for}”` }) : null]),
        row("Goal", h("span", { class: "goal", text: run.goal || "" })),
        row("Started", when(run.submitted_at || run.started_at)),
        run.ended_at ? row("Ended", when(run.ended_at)) : null,
        row("LLM calls", usage),
        fork ? row("Forked from", fork) : null,
        edit ? row("Edited", h("span", { id: "run-edited", class: "edited" }, editLine(edit))) : null,
      ]);
      showActions();
    }

    function laneOf(stream, first) {
      let n = lanes.get(stream);
      if (n === undefined) {
        n = lanes.size + 2;
        lanes.set(stream, n);
        const name = laneName(first);
        grid.appendChild(h("div", { class: "lane-head", title: stream, style: { gridRow: "1", gridColumn: String(n) } },
          name ? h("span", { class: "lane-name", text: name }) : null, h("span", { class: "lane-id", text: stream })));
        grid.style.gridTemplateColumns = `4em repeat(${lanes.size}, minmax(14em, 1fr))`;
      }
      return n;
    }

    function add(e) {
      if (typeof e.position !== "number" || byPos.has(e.position)) return false;
      if (events.length && e.position < events[events.length - 1].position) {
        // out of order (should not happen): keep the list sorted, then redraw
        events.push(e); events.sort((x, y) => x.position - y.position); byPos.set(e.position, e);
        last = Math.max(last, e.position);
        redraw();
        return true;
      }
      events.push(e);
      byPos.set(e.position, e);
      last = Math.max(last, e.position);
      place(e, events.length + 1);
      if (e.type === "LlmRequested" || e.type === "LlmCompleted" || e.type === "LlmFailed") {
        const key = `${e.stream_id}#${dataOf(e).call_index}`;
        if (e.type === "LlmRequested") openLlm.add(key); else openLlm.delete(key);
        watchCalls();
      }
      if ((e.type === "CompletionEdited" || e.type === "PromptEdited") && !edit) { edit = Object.assign({ type: e.type }, dataOf(e)); showFacts(); }
      if ((e.type === "AgentForked" || e.type === "FunctionForked") && forkAt === null && Number.isInteger(dataOf(e).origin_position)) {
        forkAt = dataOf(e).origin_position;
        showFacts();
      }
      if (run && e.stream_id === "run:" + runId) {
        const s = { RunCompleted: "completed", RunFailed: "failed", RunStarted: "running", RunWaiting: "waiting" }[e.type];
        // the run as the API reported it stands while its history loads: an ended run does
        // not flash "running", and a waiting run's history ends with its RunWaiting
        if (s && !TERMINAL.has(String(run.status)) && (s !== run.status || s === "waiting")) {
          run.status = s;
          if (s === "waiting") { run.waiting_for = dataOf(e).waiting_for || null; run.wake_at = dataOf(e).until || null; }
          else { run.waiting_for = null; run.wake_at = null; }
          if (TERMINAL.has(s) && e.timestamp) run.ended_at = e.timestamp;
          showFacts();
          if (TERMINAL.has(s)) {
            watchCalls();
            loadUsage();
            loadLabels();
            // the run has ended: take what is still in flight, then stop following
            setTimeout(() => {
              if (stopped) return;
              abort.abort();
              liveState.textContent = "finished";
              liveState.className = "muted";
            }, 1000);
          }
        }
      }
      return true;
    }

    function watchCalls() {
      const live = !stopped && run && !TERMINAL.has(String(run.status)) && openLlm.size > 0;
      if (!live) {
        if (callsTimer !== null) { clearInterval(callsTimer); callsTimer = null; }
        callsLine.hidden = true;
        clear(callsLine);
        return;
      }
      if (callsTimer !== null) return;
      callsTimer = setInterval(pollCalls, 2000);
      pollCalls();
    }

    async function pollCalls() {
      let got;
      try { got = await api(`runs/${encodeURIComponent(runId)}/llm/open`); } catch (err) { return; } // kept as it was; the next poll tries again
      if (stopped || callsTimer === null) return;
      const calls = (got.calls || []).filter((c) => openLlm.has(`${c.stream_id}#${c.call_index}`));
      clear(callsLine);
      callsLine.hidden = !calls.length;
      for (const c of calls) {
        const where = openLlm.size > 1 ? ` (${c.stream_id})` : "";
        const so = typeof c.tokens === "number" ? `${c.tokens} tokens so far` : "no tokens seen yet";
        callsLine.appendChild(h("span", { class: "call", text: `llm call ${c.call_index}${where}: ${so}, ${Math.round(c.elapsed_s || 0)} s` }));
      }
    }

    function place(e, row) {
      const lane = laneOf(e.stream_id || "?", e);
      if (e.type === "WorldCreated") learnNames(names, dataOf(e).world);
      const [label, cls] = describe(e, names);
      const into = batch || grid;
      into.appendChild(h("div", { class: "pos", style: { gridRow: String(row), gridColumn: "1" }, text: e.position }));
      const chip = h("button", {
        type: "button",
        class: "ev " + cls,
        style: { gridRow: String(row), gridColumn: String(lane) },
        dataset: { pos: String(e.position), type: e.type || "", stream: e.stream_id || "" },
        title: `${e.stream_id} v${e.version}`,
      }, h("span", { class: "type", text: e.type }), label ? h("span", { class: "label", text: label }) : null);
      chip.addEventListener("click", () => select(e, chip));
      into.appendChild(chip);
      relabel(chip);
      if (!axis.hidden) scheduleAxis();
    }

    let axisPending = false;
    function scheduleAxis() {
      if (axisPending) return;
      axisPending = true;
      requestAnimationFrame(() => { axisPending = false; if (!axis.hidden) drawAxis(); });
    }

    function redraw() {
      flush();
      for (const el of [...grid.children]) if (!el.classList.contains("lane-head")) grid.removeChild(el);
      events.forEach((e, i) => place(e, i + 2));
    }

    function partner(e) {
      const d = dataOf(e);
      const want = { LlmRequested: ["LlmCompleted", "LlmFailed"], LlmCompleted: ["LlmRequested"], LlmFailed: ["LlmRequested"], ToolCalled: ["ToolReturned"], ToolReturned: ["ToolCalled"] }[e.type];
      if (!want) return null;
      return events.find((o) => o.stream_id === e.stream_id && want.includes(o.type) && dataOf(o).call_index === d.call_index) || null;
    }

    // What changed in the messages since the same actor's previous LLM call.
    function contextDiff(req) {
      const box = h("section", { id: "context-diff" });
      const before = events.filter((o) => o.type === "LlmRequested" && o.stream_id === req.stream_id && o.position < req.position);
      const prev = before[before.length - 1];
      if (!prev) {
        append(box, [h("h4", { text: "Context diff" }), h("p", { class: "muted", text: "the actor's first LLM call: nothing before it to compare" })]);
        return box;
      }
      const rows = messageDiff(dataOf(prev).messages, dataOf(req).messages);
      const count = (st) => rows.filter((r) => r.status === st).length;
      append(box, [
        h("h4", {}, "Context diff since LLM call #" + dataOf(prev).call_index + " ", h("span", { class: "muted", text: `(${count("same")} unchanged, ${count("changed")} changed, ${count("added")} added, ${count("removed")} removed)` })),
        messageRows(rows, true),
      ]);
      return box;
    }

    function forkForm(e) {
      const model = h("input", { id: "fork-model", placeholder: "same model", size: 14 });
      const temp = h("input", { id: "fork-temperature", type: "number", min: "0", max: "2", step: "0.1", placeholder: "same", style: { width: "5em" } });
      const out = h("div", { id: "fork-result" });
      const button = h("button", { type: "button", id: "fork-here", title: "needs the operate scope", text: "Fork here" });
      button.addEventListener("click", async () => {
        const body = { at: e.position };
        if (model.value.trim()) body.model = model.value.trim();
        if (temp.value.trim() !== "") {
          const t = Number(temp.value);
          if (!(t >= 0 && t <= 2)) { clear(out); out.appendChild(problem(new Error("temperature is between 0 and 2"))); return; }
          body.temperature = t;
        }
        const what = `Fork run ${runId} at position ${e.position} (${e.type})` + (body.model ? `, model ${body.model}` : "") + (body.temperature !== undefined ? `, temperature ${body.temperature}` : "") + "? A new run starts from here and continues live.";
        if (!window.confirm(what)) return;
        button.disabled = true;
        clear(out);
        try {
          const r = await send(`runs/${encodeURIComponent(runId)}/fork`, body);
          append(out, [h("p", { class: "ok" }, "forked: ", h("a", { id: "fork-link", href: "#/run/" + encodeURIComponent(r.run_id), text: r.run_id }), ` (${r.status})`)]);
        } catch (err) {
          out.appendChild(problem(err));
        } finally {
          button.disabled = false;
        }
      });
      const section = h("section", { class: "fork-form" }, h("h4", { text: "Fork here" }),
        h("p", { class: "muted", text: `a new run from this run as it was at position ${e.position}, continued live` }),
        h("div", { class: "filters" }, h("label", {}, "Model ", model), h("label", {}, "Temperature ", temp), button), out);
      if (e.type === "LlmRequested" || e.type === "LlmCompleted") append(section, [editForm(e, out)]);
      return section;
    }

    // Fork with the completion edited: "what if the model had said this instead?"
    function editForm(e, out) {
      const d = dataOf(e);
      const answer = e.type === "LlmCompleted" ? e : partner(e);
      const text = h("textarea", { id: "edit-completion", rows: 6, maxlength: "100000", spellcheck: "false" });
      text.value = answer && answer.type === "LlmCompleted" ? dataOf(answer).content || "" : "";
      const button = h("button", { type: "button", id: "fork-edited", title: "needs the operate scope", text: "Fork with this completion" });
      button.addEventListener("click", async () => {
        if (!text.value.trim()) { clear(out); out.appendChild(problem(new Error("the edited completion is empty"))); return; }
        if (!window.confirm(`Fork run ${runId} at LLM call #${d.call_index} with the completion replaced by yours? The fork records the edit (who, where, what) and continues live from it.`)) return;
        button.disabled = true;
        clear(out);
        try {
          const r = await send(`runs/${encodeURIComponent(runId)}/fork-edit`, { at: e.position, completion: text.value });
          append(out, [h("p", { class: "ok" }, "forked with your completion: ", h("a", { id: "fork-link", href: "#/run/" + encodeURIComponent(r.run_id), text: r.run_id }), ` (${r.status})`)]);
        } catch (err) {
          out.appendChild(problem(err));
        } finally {
          button.disabled = false;
        }
      });
      return [h("div", { class: "edit-form" }, h("label", { for: "edit-completion", text: `Edit LLM call #${d.call_index}'s completion, then fork from it` }), text, h("div", {}, button)),
        promptForm(e, out)];
    }

    // Fork with the prompt edited: "what if the model had been asked this instead?" The
    // edited call goes to the model live; the rest of the prompt is the agent's own.
    function promptForm(e, out) {
      const d = dataOf(e);
      const req = e.type === "LlmRequested" ? e : partner(e);
      const messages = req ? dataOf(req).messages || [] : [];
      const lastUser = [...messages].reverse().find((m) => m.role === "user");
      const text = h("textarea", { id: "edit-prompt", rows: 5, spellcheck: "false" });
      text.value = lastUser && typeof lastUser.content === "string" ? lastUser.content : "";
      const whole = h("textarea", { id: "edit-prompt-json", rows: 10, spellcheck: "false" });
      const original = JSON.stringify(messages, null, 2);
      whole.value = original;
      const button = h("button", { type: "button", id: "fork-edited-prompt", title: "needs the operate scope", text: "Fork with this prompt" });
      button.addEventListener("click", async () => {
        let prompt = text.value;
        if (whole.value !== original) {
          try { prompt = JSON.parse(whole.value); } catch (err) { clear(out); out.appendChild(problem(new Error("the prompt's messages are not JSON: " + err.message))); return; }
        }
        if (typeof prompt === "string" && !prompt.trim()) { clear(out); out.appendChild(problem(new Error("the edited prompt is empty"))); return; }
        if (!window.confirm(`Fork run ${runId} at LLM call #${d.call_index} with the prompt replaced by yours? The fork records the edit (who, where, what) and sends your prompt to the model live, then continues.`)) return;
        button.disabled = true;
        clear(out);
        try {
          const r = await send(`runs/${encodeURIComponent(runId)}/fork-edit`, { at: e.position, prompt });
          append(out, [h("p", { class: "ok" }, "forked with your prompt: ", h("a", { id: "fork-link", href: "#/run/" + encodeURIComponent(r.run_id), text: r.run_id }), ` (${r.status})`)]);
        } catch (err) {
          out.appendChild(problem(err));
        } finally {
          button.disabled = false;
        }
      });
      if (!req) return null;
      return h("div", { class: "edit-form" },
        h("label", { for: "edit-prompt", text: `Edit LLM call #${d.call_index}'s prompt (its last user message), then fork: the model is asked it live` }), text,
        h("details", {}, h("summary", { text: "or edit every message (JSON)" }), whole),
        h("div", {}, button));
    }

    function messageBlock(messages) {
      return h("ol", { class: "messages" }, (messages || []).map((m) =>
        h("li", {}, h("span", { class: "role", text: m.role || "?" }),
          h("pre", { class: "text", text: typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2) }))));
    }

    function select(e, chip) {
      if (selected) selected.classList.remove("selected");
      selected = chip;
      chip.classList.add("selected");
      clear(detail);
      const d = dataOf(e);
      append(detail, [
        h("h3", { text: e.type }),
        h("p", { class: "meta" }, h("code", { text: e.stream_id }), ` version ${e.version} · position ${e.position}`, e.timestamp ? " · " + when(e.timestamp) : ""),
      ]);
      const other = partner(e);
      if (e.type.startsWith("Llm")) {
        const req = e.type === "LlmRequested" ? e : other;
        const res = e.type === "LlmRequested" ? other : e;
        const rd = req ? dataOf(req) : {};
        const cd = res ? dataOf(res) : {};
        append(detail, [
          h("h4", { text: "Prompt" + (rd.model ? " (" + rd.model + ")" : "") }),
          req ? messageBlock(rd.messages) : h("p", { class: "muted", text: "request not in the log" }),
          h("h4", { text: "Completion" }),
          res && res.type === "LlmCompleted"
            ? [h("p", { class: "meta", text: `${cd.prompt_tokens || 0} prompt + ${cd.completion_tokens || 0} completion tokens, ${secs(cd.latency_s)}${cd.model ? ", " + cd.model : ""}` }),
              h("pre", { class: "text completion", text: cd.content || "" })]
            : res ? h("p", { class: "error", text: errorLine(cd.error) }) : h("p", { class: "muted", text: "no completion yet" }),
        ]);
        if (req) detail.appendChild(contextDiff(req));
      } else if (e.type === "ToolCalled" || e.type === "ToolReturned") {
        const call = e.type === "ToolCalled" ? e : other;
        const ret = e.type === "ToolCalled" ? other : e;
        append(detail, [
          h("h4", { text: "Call" }), call ? json({ tool: dataOf(call).tool, args: dataOf(call).args }) : h("p", { class: "muted", text: "—" }),
          h("h4", { text: "Result" }), ret ? h("pre", { class: "text", text: dataOf(ret).output || errorLine(dataOf(ret).error) }) : h("p", { class: "muted", text: "no result yet" }),
        ]);
      }
      if (e.type === "PromptEdited") {
        append(detail, [h("h4", { text: `The edit of LLM call #${d.call_index}'s prompt, by ${d.edited_by} (what the model had been sent → what it was sent live)` }),
          h("div", { id: "prompt-edit" }, messageRows(messageDiff(d.original, d.edited), false))]);
      }
      detail.appendChild(forkForm(e));
      const stateBox = h("div", { id: "state" }, h("p", { class: "muted", text: "Loading the actor's state…" }));
      append(detail, [h("h4", {}, "State of ", h("code", { text: e.stream_id }), ` at version ${e.version}`), stateBox]);
      append(detail, [h("h4", { text: "Payload" }), json(d)]);
      api(`runs/${encodeURIComponent(runId)}/state`, { stream: e.stream_id, at: e.version }).then((s) => {
        if (selected !== chip) return;
        clear(stateBox);
        stateBox.appendChild(json(s && s.state !== undefined ? s.state : s));
      }).catch((err) => { if (selected === chip) { clear(stateBox); stateBox.appendChild(problem(err)); } });
    }

    // -- who is where, for a simulation -------------------------------------------------------
    let simPending = false;
    function scheduleSim() {
      if (simPending) return;
      simPending = true;
      requestAnimationFrame(() => { simPending = false; drawSim(); });
    }

    function drawSim() {
      const rows = whoIsWhere(events);
      if (!rows) return;
      sim.hidden = false;
      clear(sim);
      const synths = rows.synths;
      append(sim, [
        h("h2", { text: "Who is where, cycle by cycle" }),
        h("table", { class: "where" },
          h("thead", {}, h("tr", {}, h("th", { text: "Cycle" }), h("th", { text: "Tick" }), synths.map((s) => h("th", { text: s.name })))),
          h("tbody", {}, rows.cycles.map((c) => h("tr", { class: c.rolledBack ? "rolled-back" : "" },
            h("td", { text: c.label }), h("td", { text: c.tick }),
            synths.map((s) => h("td", { text: c.where[s.id] || "—" })))))),
      ]);
    }

    // -- loading and the live stream ------------------------------------------------------------
    // A long history's rows after its first page are built off the page and put on it in one
    // go: the browser lays the grid out once, not once a page (a 5,000-event run: 10 times).
    let batch = null;
    function flush() {
      if (batch) { grid.appendChild(batch); batch = null; }
    }

    async function loadAll() {
      try { await loadPages(); } finally { flush(); }
    }

    async function loadPages() {
      const get = (after) => api(`runs/${encodeURIComponent(runId)}/events`, after ? { after, limit: EVENTS_PAGE } : { limit: EVENTS_PAGE });
      let next = get(last);
      for (;;) {
        const page = await next;
        if (stopped) return;
        const got = page.events || [];
        let upto = last;
        for (const e of got) if (typeof e.position === "number") upto = Math.max(upto, e.position);
        if (typeof page.last_position === "number") upto = Math.max(upto, page.last_position);
        const more = got.length >= EVENTS_PAGE;
        if (more) next = get(upto); // the next page is on its way while this one is drawn
        got.forEach(add);
        if (more && !batch) {
          batch = document.createDocumentFragment();
          liveState.textContent = "loading…";
        }
        last = Math.max(last, upto);
        if (!more) return;
      }
    }

    async function follow() {
      let delay = 500;
      while (!stopped) {
        liveState.textContent = "● live";
        liveState.className = "live";
        let ended = false;
        try {
          const resp = await fetch(`v1/runs/${encodeURIComponent(runId)}/events/stream?after=${last}`, {
            headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(last) }),
            signal: abort.signal,
            cache: "no-store",
          });
          if (!resp.ok) throw new ApiError(resp.status, await detailOf(resp));
          await readSse(resp.body, (frame) => {
            delay = 500;
            if (!frame.data) return;
            let e;
            try { e = JSON.parse(frame.data); } catch (x) { return; }
            if (typeof e.position !== "number" && frame.id) e.position = parseInt(frame.id, 10);
            if (!e.type && frame.event) e.type = frame.event;
            if (add(e)) scheduleSim();
          });
          ended = true;
        } catch (err) {
          if (stopped || abort.signal.aborted) return;
          if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404)) {
            liveState.textContent = "not live: " + err.detail;
            liveState.className = "error";
            return;
          }
        }
        if (stopped) return;
        if (ended && run && TERMINAL.has(String(run.status))) {
          liveState.textContent = "finished";
          liveState.className = "muted";
          return;
        }
        liveState.textContent = "reconnecting…";
        liveState.className = "muted";
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 10000);
      }
    }

    (async () => {
      try {
        run = await api(`runs/${encodeURIComponent(runId)}`);
        if (run && run.run && typeof run.run === "object") run = run.run;
        if (stopped) return;
        showFacts();
        loadUsage();
        loadLabels(); // while the events load: each chip takes its label when placed, or when they come
        await loadAll();
        if (stopped) return;
        if (!TERMINAL.has(String(run.status))) loadLabels(); // and the events written since
        drawSim();
        if (openAt > 0) pick(openAt); // #/run/ID?at=POSITION opens that event
        if (!events.length) grid.appendChild(h("p", { class: "empty", style: { gridRow: "2", gridColumn: "1 / -1" }, text: "No events yet." }));
        if (TERMINAL.has(String(run.status))) {
          liveState.textContent = "finished";
          liveState.className = "muted";
        } else {
          follow();
        }
      } catch (err) {
        if (!stopped) problems.appendChild(problem(err));
      }
    })();

    return { stop() { stopped = true; abort.abort(); watchCalls(); } };
  }

  // What a person changed in a fork with an edit (its CompletionEdited or PromptEdited).
  function editLine(edit) {
    const d = edit;
    if (edit.type === "PromptEdited") {
      const changed = messageDiff(d.original, d.edited).filter((m) => m.status !== "same");
      const first = changed[0];
      return `LLM call #${d.call_index} of ${d.actor}: prompt replaced by ${d.edited_by}, sent to the model live (${changed.length} message${changed.length === 1 ? "" : "s"} changed` +
        (first ? `; ${first.role}: “${short(first.b === null ? "(removed)" : first.b, 80)}”` : "") + ")";
    }
    return `LLM call #${d.call_index} of ${d.actor}: completion replaced by ${d.edited_by} (the model had said “${short(d.original, 80)}”)`;
  }

  // A lane's name over its stream id: a synth's, when its first event gives it.
  function laneName(first) {
    return first && first.type === "SynthCreated" ? synthName(dataOf(first)) : "";
  }

  function synthName(d) {
    const s = d && d.synth;
    return (s && ((s.identity && s.identity.name) || s.name)) || "";
  }

  function learnNames(names, world) {
    if (!world) return;
    for (const group of [world.entities, world.locations, world.processes]) {
      for (const [id, v] of Object.entries(group || {})) if (v && v.name) names[id] = v.name;
    }
  }

  // Server-Sent Events from a fetch body: calls onFrame({id, event, data}) per frame.
  async function readSse(body, onFrame) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    let frame = { id: "", event: "", data: "" };
    let hasData = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (hasData || frame.event) onFrame(frame);
          frame = { id: "", event: "", data: "" };
          hasData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") { frame.data = hasData ? frame.data + "\n" + value : value; hasData = true; }
        else if (field === "id") frame.id = value;
        else if (field === "event") frame.event = value;
      }
    }
  }

  // Who is where at each cycle, from a simulation run's events (null when it is not one):
  // the world as created, then each EntityMoved / EntityContained, sampled at every
  // director verdict (CycleCommitted or CycleRolledBack).
  function whoIsWhere(events) {
    const created = events.find((e) => e.type === "WorldCreated");
    if (!created) return null;
    const world = dataOf(created).world || {};
    const entities = world.entities || {};
    const locations = world.locations || {};
    const placeName = (id) => (locations[id] && locations[id].name) || id;
    const loc = {};
    const synths = [];
    for (const [id, ent] of Object.entries(entities)) {
      loc[id] = ent.location_id;
      if (ent.synth_id) synths.push({ id, name: ent.name || ent.synth_id });
    }
    synths.sort((a, b) => a.name.localeCompare(b.name));
    const sample = () => Object.fromEntries(synths.map((s) => [s.id, placeName(loc[s.id])]));
    const tick0 = (world.clock && world.clock.tick) || 0;
    const cycles = [{ label: "start", tick: tick0, where: sample(), rolledBack: false }];
    let tick = tick0;
    for (const e of events) {
      if (e.position <= created.position) continue;
      const d = dataOf(e);
      if (e.type === "EntityMoved") {
        const from = loc[d.entity_id];
        for (const [id, ent] of Object.entries(entities)) if (id === d.entity_id || (ent.container_id && loc[id] === from && carriedBy(entities, id, d.entity_id))) loc[id] = d.location_id;
      } else if (e.type === "EntityContained") {
        loc[d.entity_id] = loc[d.container_id];
        if (entities[d.entity_id]) entities[d.entity_id] = Object.assign({}, entities[d.entity_id], { container_id: d.container_id });
      } else if (e.type === "ClockAdvanced") {
        tick = d.tick;
      } else if (e.type === "CycleCommitted" || e.type === "CycleRolledBack") {
        if (typeof d.tick === "number") tick = d.tick;
        cycles.push({ label: String(d.cycle) + (e.type === "CycleRolledBack" ? " (rolled back)" : ""), tick, where: sample(), rolledBack: e.type === "CycleRolledBack" });
      }
    }
    return { synths, cycles };
  }

  function carriedBy(entities, id, carrier) {
    let c = entities[id] && entities[id].container_id;
    for (let i = 0; c && i < 100; i++) {
      if (c === carrier) return true;
      c = entities[c] && entities[c].container_id;
    }
    return false;
  }

  // -- the diff of two runs -------------------------------------------------------------------

  function diffView(view, query) {
    const a = query.get("a") || "";
    const b = query.get("b") || "";
    const inA = h("input", { name: "a", value: a, placeholder: "run A", size: 20 });
    const inB = h("input", { name: "b", value: b, placeholder: "run B", size: 20 });
    const form = h("form", { class: "filters", onsubmit: (ev) => {
      ev.preventDefault();
      location.hash = "#/diff?" + new URLSearchParams({ a: inA.value.trim(), b: inB.value.trim() });
    } }, h("label", {}, "A ", inA), h("label", {}, "B ", inB), h("button", { type: "submit", text: "Diff" }));
    const out = h("div", { id: "diff" });
    append(view, [h("h1", { text: "Diff of two runs" }), form, out]);
    let stopped = false;
    if (a && b) {
      out.appendChild(h("p", { class: "muted", text: "Comparing…" }));
      api("diff", { a, b }).then((d) => {
        if (stopped) return;
        clear(out);
        append(out, [h("p", {}, h("a", { href: "#/run/" + encodeURIComponent(a), text: a }), " and ", h("a", { href: "#/run/" + encodeURIComponent(b), text: b }))]);
        const lines = Array.isArray(d) ? d : d && Array.isArray(d.lines) ? d.lines : null;
        if (lines) out.appendChild(h("pre", { class: "diff-lines" }, lines.map((l) => h("span", { class: "line", text: l + "\n" }))));
        const rest = Object.assign({}, d);
        delete rest.lines;
        if (!Array.isArray(d) && Object.keys(rest).length) append(out, [h("details", { open: !lines }, h("summary", { text: "As data" }), json(rest))]);
      }).catch((err) => { if (!stopped) { clear(out); out.appendChild(problem(err)); } });
    } else {
      out.appendChild(h("p", { class: "muted", text: "Give two run ids, or tick two runs in the list." }));
    }
    return { stop() { stopped = true; } };
  }

  // -- two prompts, message by message -------------------------------------------------------

  function messageDiff(old, now) {
    const list = (m) => (Array.isArray(m) ? m : m === null || m === undefined ? [] : [{ role: "?", content: m }]);
    const a = list(old), b = list(now);
    const out = [];
    const text = (m) => (m === null || m === undefined ? null : typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2));
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const x = a[i], y = b[i];
      const status = x === undefined ? "added" : y === undefined ? "removed" : text(x) === text(y) && x.role === y.role ? "same" : "changed";
      out.push({ index: i, status, role: ((y || x) && (y || x).role) || "?", a: text(x), b: text(y) });
    }
    return out;
  }

  // Rows of a message diff: unchanged runs folded to one line; a changed message shows both.
  function messageRows(rows, onlyNew) {
    const list = h("ol", { class: "msg-diff" });
    let same = 0;
    const flush = () => { if (same) list.appendChild(h("li", { class: "same-run muted", text: `${same} message${same > 1 ? "s" : ""} unchanged` })); same = 0; };
    for (const r of rows) {
      if (r.status === "same") { same++; continue; }
      flush();
      const li = h("li", { class: "msg " + r.status, dataset: { status: r.status } }, h("span", { class: "role", text: `${r.role} · ${r.status}` }));
      if (r.status === "changed" && !onlyNew) {
        li.appendChild(h("div", { class: "two" }, h("pre", { class: "text was", text: r.a }), h("pre", { class: "text now", text: r.b })));
      } else if (r.status === "changed") {
        li.appendChild(h("details", {}, h("summary", { text: "before" }), h("pre", { class: "text was", text: r.a })));
        li.appendChild(h("pre", { class: "text now", text: r.b }));
      } else {
        li.appendChild(h("pre", { class: "text " + (r.status === "added" ? "now" : "was"), text: r.status === "added" ? r.b : r.a }));
      }
      list.appendChild(li);
    }
    flush();
    return list;
  }

  // -- two runs side by side ----------------------------------------------------------------------

  function compareView(view, query) {
    const a = query.get("a") || "";
    const b = query.get("b") || "";
    const inA = h("input", { name: "a", value: a, placeholder: "run A (e.g. the origin)", size: 22 });
    const inB = h("input", { name: "b", value: b, placeholder: "run B (e.g. its fork)", size: 22 });
    const form = h("form", { class: "filters", onsubmit: (ev) => {
      ev.preventDefault();
      location.hash = "#/compare?" + new URLSearchParams({ a: inA.value.trim(), b: inB.value.trim() });
    } }, h("label", {}, "A ", inA), h("label", {}, "B ", inB), h("button", { type: "submit", text: "Compare" }));
    const out = h("div", { id: "compare" });
    append(view, [h("h1", { text: "Two runs side by side" }), form, out]);
    let stopped = false;
    if (!(a && b)) {
      out.appendChild(h("p", { class: "muted", text: "Give two run ids, tick two runs in the list, or open it from a fork (“Compare with origin”)." }));
      return { stop() { stopped = true; } };
    }
    out.appendChild(h("p", { class: "muted", text: "Comparing…" }));
    api("compare", { a, b }).then((c) => {
      if (stopped) return;
      clear(out);
      const link = (id) => h("a", { href: "#/run/" + encodeURIComponent(id), text: id });
      const cell = (e, side, other) => {
        if (!e) return h("td", { class: "none muted", text: other && FORK_MARKS.has(other.type) ? "(the other run's fork mark: nothing here)" : "(no more events)" });
        const [label, cls] = describe(e, {});
        const d = e.data || {};
        const extra = e.type === "LlmCompleted" ? short(d.content, 160) : e.type === "LlmRequested" ? (d.model || "") : "";
        return h("td", { class: "side " + side + " " + cls },
          h("span", { class: "type", text: `@${e.version} ${e.type}` }), " ",
          e.position ? h("a", { class: "pos-link", href: "#/run/" + encodeURIComponent(side === "a" ? c.a : c.b) + "?at=" + e.position, title: "open this event (position " + e.position + ")", text: "#" + e.position }) : null,
          label ? h("span", { class: "label", text: label }) : null,
          extra ? h("span", { class: "extra", text: extra }) : null);
      };
      append(out, [
        h("p", { id: "compare-summary" }, link(c.a), " and ", link(c.b), c.identical
          ? `: the same ${c.shared} events of the ${c.lead_label}, in the same order`
          : `: the ${c.lead_label} share their first ${c.shared} events and part at event ${c.shared + 1}`),
        h("table", { class: "facts-two" }, h("tbody", {},
          h("tr", {}, h("th", {}, link(c.a)), h("td", { text: `${c.events_a} lead events; ${c.end_a}` })),
          h("tr", {}, h("th", {}, link(c.b)), h("td", { text: `${c.events_b} lead events; ${c.end_b}` })))),
        h("h2", { text: "Aligned at the parting" }),
        h("table", { class: "aligned", id: "aligned" },
          h("thead", {}, h("tr", {}, h("th", { text: "#" }), h("th", { text: "A: " + c.a }), h("th", { text: "B: " + c.b }))),
          h("tbody", {}, c.rows.map((r) => h("tr", { class: r.same ? "same" : r.index === c.shared ? "parting" : "after", dataset: { index: String(r.index) } },
            h("td", { class: "num", text: r.index + 1 }), cell(r.a, "a", r.b), cell(r.b, "b", r.a))))),
      ]);
      if (!c.identical) {
        const changes = c.state_diff || [];
        append(out, [
          h("h2", {}, "State of the lead at the parting ", h("span", { class: "muted", text: `(${changes.length} field${changes.length === 1 ? "" : "s"} differ)` })),
          changes.length
            ? h("table", { class: "state-diff", id: "state-diff" },
              h("thead", {}, h("tr", {}, h("th", { text: "Field" }), h("th", { text: "A" }), h("th", { text: "B" }))),
              h("tbody", {}, changes.map((d) => h("tr", {}, h("td", {}, h("code", { text: d.path })),
                h("td", {}, h("pre", { class: "text was", text: d.only === "b" ? "(absent)" : JSON.stringify(d.a, null, 2) })),
                h("td", {}, h("pre", { class: "text now", text: d.only === "a" ? "(absent)" : JSON.stringify(d.b, null, 2) }))))))
            : h("p", { class: "muted", text: "the same state on both sides" }),
          h("h2", {}, "Prompt at the parting ", h("span", { class: "muted", text: c.prompt_a || c.prompt_b
            ? `(A: LLM call #${c.prompt_a ? c.prompt_a.data.call_index : "—"}${c.prompt_a && c.prompt_a.data.model ? ", " + c.prompt_a.data.model : ""}; B: LLM call #${c.prompt_b ? c.prompt_b.data.call_index : "—"}${c.prompt_b && c.prompt_b.data.model ? ", " + c.prompt_b.data.model : ""})`
            : "(no LLM call before the parting)" })),
          h("div", { id: "prompt-diff" }, (c.prompt_diff || []).length ? messageRows(c.prompt_diff.map((m) => ({ ...m, a: typeof m.a === "string" || m.a === null ? m.a : JSON.stringify(m.a, null, 2), b: typeof m.b === "string" || m.b === null ? m.b : JSON.stringify(m.b, null, 2) })), false) : h("p", { class: "muted", text: "no prompt to compare" })),
        ]);
      }
    }).catch((err) => { if (!stopped) { clear(out); out.appendChild(problem(err)); } });
    return { stop() { stopped = true; } };
  }

  // -- start ------------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    showTokenState();
    $("token-form").addEventListener("submit", (ev) => { ev.preventDefault(); setToken($("token").value); });
    $("token-clear").addEventListener("click", () => setToken(""));
    window.addEventListener("hashchange", route);
    route();
    // Say so loudly when the server has auth off (anyone who reaches it is admin).
    api("health").then((hl) => {
      if (hl && hl.auth && hl.auth.enabled === false) {
        const notice = $("notice");
        clear(notice);
        append(notice, [h("strong", { text: "Auth is off: " }), "no tokens are configured, so anyone who can reach this server is admin (set CHORUS_API_TOKENS)."]);
        notice.hidden = false;
        $("token-state").textContent = "auth off";
      }
    }).catch(() => { /* health is advisory here */ });
  });
})();
