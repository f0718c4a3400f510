// errand dashboard: a small single-page app over the JSON API. No framework, no build step.
//
// Safety rule for this file: every value from the server reaches the page through
// textContent, createTextNode or setAttribute on a fixed, harmless attribute — never
// innerHTML — so a payload holding markup is shown as text and cannot run.

const BASE = document.body.dataset.base || "";
const STATES = ["pending", "running", "completed", "failed", "cancelled"];
const PAGE_SIZE = 50;

// ---------------------------------------------------------------- DOM helpers

/** h("a", { href, class, text, onclick, data: {...}, attrs: {...} }, ...children) */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs))
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

function applyProps(el, props) {
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = String(v);
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k === "attrs") for (const [ak, av] of Object.entries(v)) el.setAttribute(ak, String(av));
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k in el) el[k] = v;
    else el.setAttribute(k, String(v));
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}

// ---------------------------------------------------------------- formatting

function fmtNumber(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : "—";
}

function fmtDuration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)}ms`;
  const sec = abs / 1000;
  if (sec < 60) return `${sec < 10 ? sec.toFixed(1) : Math.round(sec)}s`;
  const min = Math.floor(sec / 60);
  const two = (a, ua, b, ub) => (b ? `${a}${ua} ${b}${ub}` : `${a}${ua}`);
  if (min < 60) return two(min, "m", Math.floor(sec % 60), "s");
  const hours = Math.floor(min / 60);
  if (hours < 48) return two(hours, "h", min % 60, "m");
  return two(Math.floor(hours / 24), "d", hours % 24, "h");
}

function fmtRelative(iso, now = Date.now()) {
  if (!iso) return "—";
  const diff = new Date(iso).getTime() - now;
  if (Math.abs(diff) < 1500) return "just now";
  return diff < 0 ? `${fmtDuration(-diff)} ago` : `in ${fmtDuration(diff)}`;
}

function pad(n) {
  return String(n).padStart(2, "0");
}

function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtClock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A time cell: relative text, absolute time on hover. */
function timeEl(iso, tag = "span") {
  return h(tag, { text: fmtRelative(iso), title: iso ? `${fmtTime(iso)} (${iso})` : "" });
}

function badge(state, extra = "") {
  return h("span", { class: `badge ${state} ${extra}`, text: state, data: { state } });
}

function truncate(text, max) {
  if (!text) return "";
  const line = String(text).split("\n")[0];
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function prettyJson(value) {
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, options = {}) {
  const init = {
    method: options.method || "GET",
    headers: { accept: "application/json" },
    credentials: "same-origin",
  };
  if (options.body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(`${BASE}/api${path}`, init);
  if (response.status === 401) {
    window.location.assign(`${BASE}/login`);
    throw new ApiError(401, "signed out");
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    /* not JSON */
  }
  if (!response.ok) throw new ApiError(response.status, data?.error || `HTTP ${response.status}`);
  return data;
}

function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : "";
}

// ---------------------------------------------------------------- toasts and dialogs

function toast(message, kind = "info") {
  let box = document.querySelector(".toasts");
  if (!box) {
    box = h("div", { class: "toasts", attrs: { role: "status", "aria-live": "polite" } });
    document.body.append(box);
  }
  const el = h("div", { class: `toast ${kind}`, text: message });
  box.append(el);
  setTimeout(() => el.remove(), kind === "error" ? 6000 : 3500);
}

/** A modal confirmation; resolves true when confirmed. */
function confirmDialog({ title, message, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "confirm-dialog" });
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    append(dialog, [
      h("div", { class: "dialog-body" }, h("h2", { text: title }), h("p", { text: message })),
      h(
        "div",
        { class: "dialog-actions" },
        h("button", { class: "btn", type: "button", text: "Cancel", onclick: () => done(false) }),
        h("button", {
          class: `btn ${danger ? "btn-danger solid" : "btn-primary"} confirm`,
          type: "button",
          text: confirmLabel,
          onclick: () => done(true),
        }),
      ),
    ]);
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// ---------------------------------------------------------------- shell and router

const VIEWS = [
  { path: "", label: "Overview", render: renderOverview },
  { path: "jobs", label: "Jobs", render: renderJobs },
  { path: "dlq", label: "Dead letters", render: renderDlq },
  { path: "schedules", label: "Schedules", render: renderSchedules },
  { path: "workers", label: "Workers", render: renderWorkers },
];

let main;
const navLinks = {};
let dlqCount;
let timers = [];
let generation = 0;

function buildShell() {
  const nav = h("nav", { class: "nav", attrs: { "aria-label": "Sections" } });
  for (const view of VIEWS) {
    const link = h("a", {
      href: `#/${view.path}`,
      text: view.label,
      data: { view: view.path || "overview" },
    });
    if (view.path === "dlq") {
      dlqCount = h("span", { class: "count hidden", data: { testid: "dlq-count" } });
      link.append(dlqCount);
    }
    navLinks[view.path] = link;
    nav.append(link);
  }
  const logout = h(
    "form",
    { method: "post", action: `${BASE}/logout` },
    h("button", { class: "btn-link", type: "submit", text: "Log out" }),
  );
  const bar = h(
    "header",
    { class: "topbar" },
    h(
      "a",
      { class: "brand", href: "#/" },
      h("span", { class: "brand-mark", attrs: { "aria-hidden": "true" } }),
      "errand",
    ),
    nav,
    logout,
  );
  main = h("main", { class: "page" });
  document.body.append(bar, main);
}

function parseHash() {
  const raw = window.location.hash.replace(/^#\/?/, "");
  const [pathPart, query = ""] = raw.split("?");
  const segments = pathPart.split("/").filter(Boolean).map(decodeURIComponent);
  return { segments, params: new URLSearchParams(query) };
}

function go(path, params = {}) {
  window.location.hash = `#/${path}${qs(params)}`;
}

/** Re-renders every `ms` while this view is shown. */
function every(ms, fn) {
  const id = setInterval(fn, ms);
  timers.push(id);
}

async function route() {
  for (const id of timers) clearInterval(id);
  timers = [];
  const gen = ++generation;
  const { segments, params } = parseHash();
  const top = segments[0] || "";
  for (const [path, link] of Object.entries(navLinks)) link.classList.toggle("active", path === top);
  clear(main);
  const isCurrent = () => gen === generation;
  try {
    if (top === "jobs" && segments[1]) await renderJob(segments[1], isCurrent);
    else {
      const view = VIEWS.find((v) => v.path === top);
      if (!view) {
        main.append(h("div", { class: "empty", text: "Nothing here." }));
        return;
      }
      await view.render(params, isCurrent);
    }
  } catch (err) {
    if (!isCurrent() || (err instanceof ApiError && err.status === 401)) return;
    clear(main);
    main.append(h("div", { class: "notice", text: `Could not load this page: ${err.message}` }));
  }
}

function pageHead(title, ...actions) {
  return h(
    "div",
    { class: "page-head" },
    h("div", { class: "title" }, typeof title === "string" ? h("h1", { text: title }) : title),
    h("div", { class: "actions" }, actions),
  );
}

function panel(title, body, extraHead) {
  return h(
    "section",
    { class: "panel" },
    title ? h("div", { class: "panel-head" }, h("h2", { text: title }), extraHead || null) : null,
    body,
  );
}

function table(columns, rows, emptyText) {
  const thead = h(
    "thead",
    {},
    h(
      "tr",
      {},
      columns.map((c) => h("th", { class: c.num ? "num" : "", text: c.label ?? "" }, c.header || null)),
    ),
  );
  const tbody = h("tbody", {}, rows);
  const wrap = h("div", { class: "table-wrap" }, h("table", {}, thead, tbody));
  if (rows.length === 0) wrap.append(h("div", { class: "empty", text: emptyText }));
  return wrap;
}

async function refreshDlqBadge(stats) {
  const data = stats || (await api("/stats"));
  const n = data.dlq || 0;
  dlqCount.textContent = n > 999 ? "999+" : String(n);
  dlqCount.classList.toggle("hidden", n === 0);
}

// ---------------------------------------------------------------- overview

let chartRange = "1h";
const RANGES = { "1h": { since: "1h", bucket: "1m" }, "24h": { since: "24h", bucket: "30m" } };

async function renderOverview(_params, isCurrent) {
  const content = h("div", { class: "overview" });
  const rangeToggle = h("div", { class: "segmented" });
  for (const key of Object.keys(RANGES)) {
    rangeToggle.append(
      h("button", {
        type: "button",
        class: key === chartRange ? "on" : "",
        text: key === "1h" ? "Last hour" : "Last 24 hours",
        onclick: () => {
          chartRange = key;
          route();
        },
      }),
    );
  }
  main.append(pageHead("Overview", rangeToggle), content);

  async function load() {
    const range = RANGES[chartRange];
    const [stats, throughput, workers] = await Promise.all([
      api("/stats"),
      api(`/throughput${qs(range)}`),
      api("/workers"),
    ]);
    if (!isCurrent()) return;
    refreshDlqBadge(stats);
    clear(content);
    content.append(
      summaryTiles(stats, workers),
      h(
        "div",
        { class: "grid-2" },
        chartPanel("Completed", "completed", throughput),
        chartPanel("Failed for good", "failed", throughput),
      ),
      queuesPanel(stats, throughput),
    );
  }
  await load();
  every(5000, () => load().catch(() => {}));
}

function summaryTiles(stats, workers) {
  const t = stats.total;
  const tile = (label, value, sub, cls = "") =>
    h(
      "div",
      { class: `tile ${cls}` },
      h("div", { class: "label", text: label }),
      h("div", { class: "value", text: value }),
      h("div", { class: "sub", text: sub }),
    );
  return h(
    "div",
    { class: "tiles" },
    tile("Pending", fmtNumber(t.pending), `${fmtNumber(t.delayed)} delayed`),
    tile(
      "Running",
      fmtNumber(t.running),
      `${workers.workers.length} live worker${workers.workers.length === 1 ? "" : "s"}`,
    ),
    tile("Completed · 1h", fmtNumber(t.completedLastHour), `${fmtNumber(t.completedLastDay)} in 24h`, "good"),
    tile(
      "Failed · 1h",
      fmtNumber(t.failedLastHour),
      `${fmtNumber(t.failedLastDay)} in 24h`,
      t.failedLastHour > 0 ? "bad" : "",
    ),
    tile("Dead letters", fmtNumber(stats.dlq), "failed jobs kept", stats.dlq > 0 ? "bad" : ""),
    tile(
      "Oldest pending",
      t.oldestPendingMs === null ? "—" : fmtDuration(t.oldestPendingMs),
      "wait of the oldest due job",
    ),
  );
}

/** Dense per-bucket totals for one series (all queues, or one) from the throughput answer. */
function series(throughput, field, queue) {
  const { bucketMs, sinceMs } = throughput;
  const end = Math.floor(new Date(throughput.now).getTime() / bucketMs) * bucketMs;
  const count = Math.round(sinceMs / bucketMs);
  const start = end - (count - 1) * bucketMs;
  const values = new Array(count).fill(0);
  for (const b of throughput.buckets) {
    if (queue && b.queue !== queue) continue;
    const i = Math.round((new Date(b.at).getTime() - start) / bucketMs);
    if (i >= 0 && i < count) values[i] += b[field];
  }
  return { start, bucketMs, values };
}

function niceMax(n) {
  if (n <= 4) return 4;
  const mag = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * mag >= n) return step * mag;
  return 10 * mag;
}

function barChart(data, field) {
  const W = 560;
  const H = 180;
  const left = 36;
  const right = 8;
  const top = 10;
  const bottom = 24;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const max = niceMax(Math.max(...data.values, 0));
  const svg = s("svg", {
    class: "chart",
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-label": `${field} per ${fmtDuration(data.bucketMs)}`,
  });
  for (let i = 0; i <= 2; i++) {
    const y = top + (plotH * i) / 2;
    svg.append(s("line", { class: "grid", x1: left, x2: W - right, y1: y, y2: y }));
    const label = s("text", { class: "axis-label", x: left - 6, y: y + 4, "text-anchor": "end" });
    label.textContent = fmtNumber(Math.round((max * (2 - i)) / 2));
    svg.append(label);
  }
  const n = data.values.length;
  const slot = plotW / n;
  const barW = Math.max(1, slot * 0.72);
  data.values.forEach((v, i) => {
    if (v <= 0) return;
    const bh = Math.max(1.5, (v / max) * plotH);
    const x = left + i * slot + (slot - barW) / 2;
    const rect = s("rect", {
      class: `bar-${field}`,
      x: x.toFixed(1),
      y: (top + plotH - bh).toFixed(1),
      width: barW.toFixed(1),
      height: bh.toFixed(1),
      rx: 1,
    });
    const title = s("title");
    title.textContent = `${fmtClock(data.start + i * data.bucketMs)} · ${fmtNumber(v)} ${field}`;
    rect.append(title);
    svg.append(rect);
  });
  const ticks = [0, Math.floor(n / 2), n - 1];
  for (const i of ticks) {
    const label = s("text", {
      class: "axis-label",
      x: (left + i * slot + slot / 2).toFixed(1),
      y: H - 6,
      "text-anchor": i === 0 ? "start" : i === n - 1 ? "end" : "middle",
    });
    label.textContent = i === n - 1 ? "now" : fmtClock(data.start + i * data.bucketMs);
    svg.append(label);
  }
  return svg;
}

function chartPanel(title, field, throughput) {
  const data = series(throughput, field);
  // From the raw buckets, so the total matches the store's counts even for the partial oldest bucket.
  const total = throughput.buckets.reduce((n, b) => n + b[field], 0);
  const legend = h(
    "div",
    { class: "chart-legend" },
    h(
      "span",
      {},
      h("span", { class: `swatch ${field}` }),
      `${fmtNumber(total)} in the last ${chartRange === "1h" ? "hour" : "24 hours"} · per ${throughput.bucketMs === 60_000 ? "minute" : fmtDuration(throughput.bucketMs)}`,
    ),
  );
  return panel(
    title,
    h("div", { class: "panel-body", data: { chart: field } }, barChart(data, field)),
    legend,
  );
}

function sparkline(throughput, queue) {
  const W = 120;
  const H = 26;
  const done = series(throughput, "completed", queue).values;
  const failed = series(throughput, "failed", queue).values;
  const max = Math.max(1, ...done, ...failed);
  const points = (values) =>
    values
      .map(
        (v, i) =>
          `${((i / Math.max(1, values.length - 1)) * (W - 2) + 1).toFixed(1)},${(H - 2 - (v / max) * (H - 4)).toFixed(1)}`,
      )
      .join(" ");
  return s(
    "svg",
    { class: "sparkline", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "aria-hidden": "true" },
    s("polyline", { class: done.some((v) => v > 0) ? "line" : "line-idle", points: points(done) }),
    failed.some((v) => v > 0) ? s("polyline", { class: "line-failed", points: points(failed) }) : null,
  );
}

function queuesPanel(stats, throughput) {
  const cell = (value, col, cls = "") =>
    h("td", {
      class: `num ${value === 0 ? "zero" : cls}`,
      text: typeof value === "number" ? fmtNumber(value) : value,
      data: { col },
    });
  const rows = stats.queues.map((q) =>
    h(
      "tr",
      { data: { queue: q.queue }, class: q.paused ? "paused" : "" },
      h(
        "td",
        {},
        h("a", { href: `#/jobs${qs({ queue: q.queue })}`, text: q.queue }),
        q.paused
          ? h("span", { class: "chip paused", text: "paused", title: `paused since ${fmtTime(q.pausedAt)}` })
          : null,
        // Due jobs and no live worker serving the queue: nothing will run them.
        q.pending > 0 && q.workers === 0
          ? h("span", {
              class: "chip warn",
              text: "no worker",
              title: "due jobs wait and no live worker serves this queue",
              data: { testid: "no-worker" },
            })
          : null,
      ),
      cell(q.pending, "pending"),
      cell(q.delayed, "delayed"),
      cell(q.running, "running"),
      cell(q.completedLastHour, "completedLastHour"),
      cell(q.completedLastDay, "completedLastDay"),
      cell(q.failedLastHour, "failedLastHour", "bad"),
      cell(q.failedLastDay, "failedLastDay", "bad"),
      h("td", {
        class: `num ${q.oldestPendingMs === null ? "zero" : q.oldestPendingMs > 60_000 ? "warn" : ""}`,
        text: q.oldestPendingMs === null ? "—" : fmtDuration(q.oldestPendingMs),
        data: { col: "oldestPending" },
      }),
      h(
        "td",
        { class: `num ${q.failed === 0 ? "zero" : "bad"}`, data: { col: "failed" } },
        q.failed === 0 ? "0" : h("a", { href: `#/dlq${qs({ queue: q.queue })}`, text: fmtNumber(q.failed) }),
      ),
      h("td", {}, sparkline(throughput, q.queue)),
      h("td", {}, pauseButton(q)),
    ),
  );
  const columns = [
    { label: "Queue" },
    { label: "Pending", num: true },
    { label: "Delayed", num: true },
    { label: "Running", num: true },
    { label: "Done 1h", num: true },
    { label: "Done 24h", num: true },
    { label: "Failed 1h", num: true },
    { label: "Failed 24h", num: true },
    { label: "Oldest pending", num: true },
    { label: "DLQ", num: true },
    { label: chartRange === "1h" ? "Last hour" : "Last 24h" },
    { label: "Control" },
  ];
  return panel("Queues", table(columns, rows, "No queues yet: enqueue a job to see it here."));
}

/** Pause (no worker starts a job of the queue once it answers) or resume a queue, then redraw. */
function pauseButton(q) {
  const action = q.paused ? "resume" : "pause";
  return h("button", {
    class: `btn btn-sm ${q.paused ? "btn-primary" : ""}`,
    type: "button",
    text: q.paused ? "Resume" : "Pause",
    attrs: { "aria-label": `${q.paused ? "Resume" : "Pause"} queue ${q.queue}` },
    data: { action },
    onclick: async (event) => {
      event.currentTarget.disabled = true;
      try {
        await api(`/queues/${encodeURIComponent(q.queue)}/${action}`, { method: "POST" });
        toast(q.paused ? `Queue ${q.queue} resumed` : `Queue ${q.queue} paused: running jobs finish`);
      } catch (err) {
        toast(err.message, "error");
      }
      route();
    },
  });
}

// ---------------------------------------------------------------- job list

function pager(params, nextCursor, path) {
  const cursor = params.get("cursor");
  const base = Object.fromEntries([...params].filter(([k]) => k !== "cursor"));
  return h(
    "div",
    { class: "panel-foot" },
    h("span", { text: cursor ? "Older jobs" : "Newest first" }),
    h(
      "div",
      { class: "actions" },
      cursor ? h("a", { class: "btn btn-sm", href: `#/${path}${qs(base)}`, text: "« Newest" }) : null,
      nextCursor
        ? h("a", {
            class: "btn btn-sm",
            href: `#/${path}${qs({ ...base, cursor: nextCursor })}`,
            text: "Older »",
            data: { testid: "next-page" },
          })
        : null,
    ),
  );
}

async function queueOptions() {
  const stats = await api("/stats");
  refreshDlqBadge(stats);
  return stats.queues.map((q) => q.queue);
}

function select(name, values, current, allLabel) {
  const el = h("select", { name, id: `f-${name}` }, h("option", { value: "", text: allLabel }));
  for (const v of values) el.append(h("option", { value: v, text: v, selected: v === current }));
  return el;
}

function field(label, control) {
  return h("div", { class: "field" }, h("label", { text: label, htmlFor: control.id }), control);
}

async function renderJobs(params, isCurrent) {
  const filters = {
    queue: params.get("queue") || "",
    state: params.get("state") || "",
    name: params.get("name") || "",
    search: params.get("search") || "",
  };
  const [queues, page] = await Promise.all([
    queueOptions(),
    api(`/jobs${qs({ ...filters, cursor: params.get("cursor"), limit: PAGE_SIZE })}`),
  ]);
  if (!isCurrent()) return;
  const form = h("form", { class: "filters", attrs: { role: "search" } });
  const nameInput = h("input", {
    type: "text",
    name: "name",
    id: "f-name",
    value: filters.name,
    placeholder: "any job",
  });
  const searchInput = h("input", {
    type: "search",
    name: "search",
    id: "f-search",
    value: filters.search,
    placeholder: "id, key or payload text",
  });
  append(form, [
    field("Queue", select("queue", queues, filters.queue, "All queues")),
    field("State", select("state", STATES, filters.state, "Any state")),
    field("Job", nameInput),
    field("Search", searchInput),
    h("button", { class: "btn btn-primary", type: "submit", text: "Filter" }),
    Object.values(filters).some(Boolean)
      ? h("a", { class: "btn-link", href: "#/jobs", text: "Clear" })
      : null,
  ]);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const data = new FormData(form);
    go("jobs", Object.fromEntries([...data].map(([k, v]) => [k, String(v).trim()])));
  });

  const rows = page.jobs.map((job) =>
    h(
      "tr",
      { data: { id: job.id } },
      h("td", { class: "id" }, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}`, text: `#${job.id}` })),
      h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}`, text: job.name })),
      h("td", { text: job.queue }),
      h("td", {}, badge(job.state)),
      h("td", { class: "num", text: `${job.attempt}/${job.maxAttempts}` }),
      h("td", { class: "mono muted", text: job.key ? truncate(job.key, 28) : "" }),
      h("td", {}, whenEl(job)),
      h("td", {
        class: "error-cell",
        text: job.state === "completed" ? "" : truncate(job.lastError, 80),
        title: job.lastError || "",
      }),
    ),
  );
  const columns = [
    { label: "ID" },
    { label: "Job" },
    { label: "Queue" },
    { label: "State" },
    { label: "Attempts", num: true },
    { label: "Key" },
    { label: "When" },
    { label: "Last error" },
  ];
  main.append(
    pageHead("Jobs", h("button", { class: "btn", type: "button", text: "Refresh", onclick: () => route() })),
    h(
      "section",
      { class: "panel" },
      form,
      table(columns, rows, "No jobs match these filters."),
      pager(params, page.nextCursor, "jobs"),
    ),
  );
}

// ---------------------------------------------------------------- job page

async function jobAction(job, action) {
  if (action === "discard") {
    const ok = await confirmDialog({
      title: `Discard job #${job.id}?`,
      message: "It is deleted from the dead-letter queue with its history. This cannot be undone.",
      confirmLabel: "Discard",
      danger: true,
    });
    if (!ok) return false;
  }
  if (action === "cancel") {
    const ok = await confirmDialog({
      title: `Cancel job #${job.id}?`,
      message:
        job.state === "running"
          ? "The running handler is told to stop at its next heartbeat."
          : "It will not run.",
      confirmLabel: "Cancel job",
      danger: true,
    });
    if (!ok) return false;
  }
  try {
    await api(`/jobs/${encodeURIComponent(job.id)}/${action}`, { method: "POST" });
    toast(
      action === "retry"
        ? `Job #${job.id} queued for retry`
        : action === "cancel"
          ? `Job #${job.id} cancelled`
          : `Job #${job.id} discarded`,
    );
    return true;
  } catch (err) {
    toast(err.message, "error");
    return false;
  }
}

const NO_RESULT = {
  pending: "No result yet: the job has not run to completion.",
  running: "No result yet: the job is running.",
  failed: "No result: the job failed.",
  cancelled: "No result: the job was cancelled.",
};

/** What a job list shows as its time: the moment that matters for its state. */
function whenEl(job) {
  const [label, iso] =
    job.state === "pending"
      ? [new Date(job.runAt).getTime() > Date.now() ? "runs" : "due", job.runAt]
      : job.state === "running"
        ? ["started", job.startedAt]
        : [job.state, job.finishedAt];
  return h(
    "span",
    { title: iso ? fmtTime(iso) : "" },
    h("span", { class: "muted", text: `${label} ` }),
    fmtRelative(iso),
  );
}

function detail(k, v) {
  return h("div", {}, h("div", { class: "k", text: k }), h("div", { class: "v" }, v));
}

async function renderJob(id, isCurrent) {
  const job = await api(`/jobs/${encodeURIComponent(id)}`).catch((err) => {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
  if (!isCurrent()) return;
  clear(main);
  if (!job) {
    main.append(
      h("div", { class: "breadcrumb" }, h("a", { href: "#/jobs", text: "Jobs" })),
      h("div", { class: "empty", text: `No job #${id}: it was discarded, pruned, or never existed.` }),
    );
    return;
  }
  const actions = [];
  const act = (label, action, cls) =>
    h("button", {
      class: `btn ${cls}`,
      type: "button",
      text: label,
      data: { action },
      onclick: async () => {
        if (await jobAction(job, action)) {
          if (action === "discard") go("dlq");
          else route();
        }
      },
    });
  if (job.state === "failed" || job.state === "cancelled") actions.push(act("Retry", "retry", "btn-primary"));
  if (job.state === "pending" || job.state === "running") actions.push(act("Cancel", "cancel", "btn-danger"));
  if (job.state === "failed") actions.push(act("Discard", "discard", "btn-danger"));

  const title = h(
    "div",
    {},
    h(
      "div",
      { class: "breadcrumb" },
      h("a", { href: "#/jobs", text: "Jobs" }),
      " / ",
      h("a", { href: `#/jobs${qs({ queue: job.queue })}`, text: job.queue }),
    ),
    h("div", { class: "title" }, h("h1", { text: `#${job.id} · ${job.name}` }), badge(job.state, "large")),
  );
  main.append(pageHead(title, actions));

  const details = h(
    "div",
    { class: "details" },
    detail("Queue", job.queue),
    detail("Attempts", `${job.attempt} of ${job.maxAttempts}`),
    detail("Priority", String(job.priority)),
    detail("Key", job.key ? h("span", { class: "mono", text: job.key }) : "—"),
    detail("Created", timeEl(job.createdAt)),
    detail("Run at", timeEl(job.runAt)),
    detail("Started", timeEl(job.startedAt)),
    detail("Finished", timeEl(job.finishedAt)),
    job.lockedBy ? detail("Worker", h("span", { class: "mono", text: job.lockedBy })) : null,
    job.lockedUntil ? detail("Lease until", timeEl(job.lockedUntil)) : null,
    job.cancelRequested ? detail("Cancel", "requested") : null,
  );
  main.append(panel("Details", h("div", { class: "panel-body" }, details)));

  // Why a pending job waits (queue paused, not due yet, no worker, jobs ahead of it).
  if (job.state === "pending" && job.waiting?.length > 0) {
    main.append(
      h(
        "div",
        { class: "notice", data: { testid: "waiting" } },
        h("strong", { text: "Waiting: " }),
        job.waiting.map((r) => r.message).join("; "),
      ),
    );
  }

  if (job.progress) {
    const pct = Math.round(job.progress.fraction * 100);
    const bar = h(
      "div",
      {
        class: "progress",
        attrs: { role: "progressbar", "aria-valuenow": pct, "aria-valuemin": 0, "aria-valuemax": 100 },
      },
      h("div", {}),
    );
    bar.firstChild.style.width = `${pct}%`;
    main.append(
      panel(
        "Progress",
        h(
          "div",
          { class: "panel-body" },
          h("div", { class: "progress-row" }, bar, h("strong", { text: `${pct}%` })),
          job.progress.message ? h("p", { class: "muted", text: job.progress.message }) : null,
        ),
      ),
    );
  }

  if (job.lastError && job.state !== "completed") {
    main.append(
      h("div", {
        class: `notice ${job.state === "failed" ? "error" : ""}`,
        text: `Last error: ${job.lastError}`,
      }),
    );
  }

  main.append(
    h(
      "div",
      { class: "grid-2" },
      panel(
        "Payload",
        h(
          "div",
          { class: "panel-body" },
          h("pre", { class: "code", data: { testid: "payload" }, text: prettyJson(job.payload) }),
        ),
      ),
      panel(
        "Result",
        h(
          "div",
          { class: "panel-body" },
          job.state === "completed"
            ? h("pre", { class: "code", data: { testid: "result" }, text: prettyJson(job.result) })
            : h("p", { class: "muted", text: NO_RESULT[job.state] || "No result." }),
        ),
      ),
    ),
  );
  main.append(panel(`Attempts (${job.attempts.length})`, h("div", { class: "panel-body" }, timeline(job))));

  if (job.state === "pending" || job.state === "running") {
    const seen = JSON.stringify([job.state, job.attempt, job.progress, job.attempts.length]);
    every(2000, async () => {
      const fresh = await api(`/jobs/${encodeURIComponent(id)}`).catch(() => null);
      if (
        fresh &&
        isCurrent() &&
        JSON.stringify([fresh.state, fresh.attempt, fresh.progress, fresh.attempts.length]) !== seen
      )
        route();
    });
  }
}

/** An attempt's job log (the handler's ctx.log lines), folded like the stack trace: one click opens it. */
function jobLog(attempt) {
  const lines = attempt.logs.filter((l) => l.dropped === undefined);
  const marker = attempt.logs.find((l) => l.dropped !== undefined);
  const text = lines
    .map(
      (l) =>
        `${fmtTime(l.at).slice(11)} ${l.level.toUpperCase().padEnd(5)} ${l.msg}${l.fields ? ` ${JSON.stringify(l.fields)}` : ""}`,
    )
    .join("\n");
  return h(
    "details",
    { class: "stack job-log", data: { testid: `job-log-${attempt.attempt}` } },
    h("summary", {
      text: `Job log (${lines.length} line${lines.length === 1 ? "" : "s"}${marker ? `, ${marker.dropped} more not kept` : ""})`,
    }),
    h("pre", { class: "code", text }),
    marker ? h("p", { class: "muted", text: marker.msg }) : null,
  );
}

function timeline(job) {
  if (job.attempts.length === 0) {
    return h("p", {
      class: "muted",
      text: job.state === "running" ? "The first attempt is running." : "Not run yet.",
    });
  }
  const list = h("ol", { class: "timeline", data: { testid: "attempts" } });
  for (const a of [...job.attempts].reverse()) {
    const took = new Date(a.finishedAt).getTime() - new Date(a.startedAt).getTime();
    const meta = [`started ${fmtTime(a.startedAt)}`, `took ${fmtDuration(took)}`];
    if (a.worker) meta.push(`on ${a.worker}`);
    if (a.retryAt)
      meta.push(`${a.outcome === "snoozed" ? "snoozed" : "retry"} at ${fmtTime(a.retryAt).slice(11)}`);
    list.append(
      h(
        "li",
        { data: { attempt: a.attempt, outcome: a.outcome } },
        h("span", { class: `marker ${a.outcome}` }),
        h(
          "div",
          { class: "head" },
          h("strong", { text: `Attempt ${a.attempt}` }),
          badge(a.outcome),
          a.kind ? h("span", { class: "muted", text: `error kind: ${a.kind}` }) : null,
        ),
        h("div", { class: "meta", text: meta.join(" · ") }),
        a.error ? h("div", { class: "error", text: a.error }) : null,
        a.stack
          ? h(
              "details",
              { class: "stack" },
              h("summary", { text: "Stack trace" }),
              h("pre", { class: "code", text: a.stack }),
            )
          : null,
        a.logs && a.logs.length > 0 ? jobLog(a) : null,
      ),
    );
  }
  if (job.state === "running") {
    list.prepend(
      h(
        "li",
        {},
        h("span", { class: "marker" }),
        h("div", { class: "head" }, h("strong", { text: `Attempt ${job.attempt}` }), badge("running")),
        h("div", { class: "meta", text: `started ${fmtTime(job.startedAt)} on ${job.lockedBy || "?"}` }),
      ),
    );
  }
  return list;
}

// ---------------------------------------------------------------- dead-letter queue

async function renderDlq(params, isCurrent) {
  const queue = params.get("queue") || "";
  const [queues, page] = await Promise.all([
    queueOptions(),
    api(`/jobs${qs({ state: "failed", queue, cursor: params.get("cursor"), limit: PAGE_SIZE })}`),
  ]);
  if (!isCurrent()) return;
  const selected = new Set();
  const countLabel = h("span", { class: "muted", text: "" });
  const retrySel = h("button", {
    class: "btn btn-sm",
    type: "button",
    text: "Retry selected",
    disabled: true,
    data: { bulk: "retry" },
  });
  const discardSel = h("button", {
    class: "btn btn-sm btn-danger",
    type: "button",
    text: "Discard selected",
    disabled: true,
    data: { bulk: "discard" },
  });
  const update = () => {
    countLabel.textContent = selected.size ? `${selected.size} selected` : "";
    retrySel.disabled = discardSel.disabled = selected.size === 0;
    retrySel.textContent = selected.size ? `Retry ${selected.size}` : "Retry selected";
    discardSel.textContent = selected.size ? `Discard ${selected.size}` : "Discard selected";
  };
  const bulk = async (action, body, what) => {
    const ok = await confirmDialog({
      title: `${action === "retry" ? "Retry" : "Discard"} ${what}?`,
      message:
        action === "retry"
          ? "They go back to pending with a fresh attempt budget; their history is kept."
          : "They are deleted with their history. This cannot be undone.",
      confirmLabel: action === "retry" ? "Retry" : "Discard",
      danger: action === "discard",
    });
    if (!ok) return;
    try {
      const res = await api(`/dlq/${action}`, { method: "POST", body });
      const n = action === "retry" ? res.retried : res.discarded;
      toast(`${action === "retry" ? "Retried" : "Discarded"} ${fmtNumber(n)} job${n === 1 ? "" : "s"}`);
      route();
    } catch (err) {
      toast(err.message, "error");
    }
  };
  retrySel.addEventListener("click", () =>
    bulk("retry", { ids: [...selected] }, `${selected.size} selected job${selected.size === 1 ? "" : "s"}`),
  );
  discardSel.addEventListener("click", () =>
    bulk("discard", { ids: [...selected] }, `${selected.size} selected job${selected.size === 1 ? "" : "s"}`),
  );

  const checkAll = h("input", { type: "checkbox", attrs: { "aria-label": "Select all on this page" } });
  const boxes = [];
  checkAll.addEventListener("change", () => {
    for (const box of boxes) {
      box.checked = checkAll.checked;
      if (box.checked) selected.add(box.value);
      else selected.delete(box.value);
    }
    update();
  });

  const rows = page.jobs.map((job) => {
    const box = h("input", {
      type: "checkbox",
      value: job.id,
      attrs: { "aria-label": `Select job ${job.id}` },
    });
    box.addEventListener("change", () => {
      if (box.checked) selected.add(job.id);
      else selected.delete(job.id);
      update();
    });
    boxes.push(box);
    const one = (label, action, cls) =>
      h("button", {
        class: `btn btn-sm ${cls}`,
        type: "button",
        text: label,
        data: { action },
        onclick: async () => {
          if (await jobAction(job, action)) route();
        },
      });
    return h(
      "tr",
      { data: { id: job.id } },
      h("td", {}, box),
      h("td", { class: "id" }, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}`, text: `#${job.id}` })),
      h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}`, text: job.name })),
      h("td", { text: job.queue }),
      h("td", {}, timeEl(job.finishedAt)),
      h("td", { class: "num", text: `${job.attempt}/${job.maxAttempts}` }),
      h("td", { class: "error-cell", text: truncate(job.lastError, 90), title: job.lastError || "" }),
      h(
        "td",
        {},
        h(
          "div",
          { class: "row-actions" },
          one("Retry", "retry", ""),
          one("Discard", "discard", "btn-danger"),
        ),
      ),
    );
  });

  const queueSelect = select("queue", queues, queue, "All queues");
  queueSelect.addEventListener("change", () => go("dlq", { queue: queueSelect.value }));
  const scope = queue ? `all failed jobs of “${queue}”` : "all failed jobs";
  const all = { all: true, ...(queue ? { queue } : {}) };
  const head = pageHead(
    "Dead-letter queue",
    h("button", {
      class: "btn",
      type: "button",
      text: "Retry all",
      disabled: page.jobs.length === 0,
      data: { bulk: "retry-all" },
      onclick: () => bulk("retry", all, scope),
    }),
    h("button", {
      class: "btn btn-danger",
      type: "button",
      text: "Discard all",
      disabled: page.jobs.length === 0,
      data: { bulk: "discard-all" },
      onclick: () => bulk("discard", all, scope),
    }),
  );
  const bar = h(
    "div",
    { class: "filters" },
    field("Queue", queueSelect),
    h("div", { class: "bulkbar" }, retrySel, discardSel, countLabel),
  );
  const columns = [
    { header: checkAll },
    { label: "ID" },
    { label: "Job" },
    { label: "Queue" },
    { label: "Failed" },
    { label: "Attempts", num: true },
    { label: "Error" },
    { label: "" },
  ];
  main.append(
    head,
    h("p", {
      class: "muted lede",
      text: "Jobs that failed for good, kept with their payload and every attempt. Retry them once the cause is fixed, or discard them.",
    }),
    h(
      "section",
      { class: "panel" },
      bar,
      table(columns, rows, "The dead-letter queue is empty."),
      pager(params, page.nextCursor, "dlq"),
    ),
  );
}

// ---------------------------------------------------------------- schedules and workers

async function renderSchedules(_params, isCurrent) {
  const data = await api("/schedules");
  if (!isCurrent()) return;
  const now = new Date(data.now).getTime();
  const rows = data.schedules.map((sc) =>
    h(
      "tr",
      { data: { schedule: sc.name } },
      h("td", {}, h("strong", { text: sc.name })),
      h("td", { class: "mono", text: sc.cron }),
      h("td", { text: sc.timezone || "UTC" }),
      h("td", {}, h("a", { href: `#/jobs${qs({ name: sc.jobName })}`, text: sc.jobName })),
      h("td", { text: sc.queue }),
      h(
        "td",
        { title: fmtTime(sc.nextRunAt) },
        h("div", { text: fmtRelative(sc.nextRunAt, now) }),
        h("div", { class: "muted", text: fmtTime(sc.nextRunAt) }),
      ),
      h(
        "td",
        { title: sc.lastFiredAt ? fmtTime(sc.lastFiredAt) : "" },
        h("div", { text: sc.lastFiredAt ? fmtRelative(sc.lastFiredAt, now) : "never" }),
        sc.lastSlot ? h("div", { class: "muted", text: `slot ${fmtTime(sc.lastSlot)}` }) : null,
      ),
      h("td", { text: sc.missed === "all" ? "fire all" : "latest only" }),
      h(
        "td",
        {},
        h("span", { class: "chip", text: sc.source }),
        sc.pausedAt
          ? h("span", { class: "chip paused", text: "paused", title: `paused since ${fmtTime(sc.pausedAt)}` })
          : null,
      ),
      h(
        "td",
        { class: "row-actions" },
        scheduleButton(sc, sc.pausedAt ? "resume" : "pause"),
        scheduleButton(sc, "run"),
      ),
    ),
  );
  const columns = [
    { label: "Name" },
    { label: "Cron" },
    { label: "Time zone" },
    { label: "Job" },
    { label: "Queue" },
    { label: "Next fire" },
    { label: "Last fired" },
    { label: "Missed slots" },
    { label: "Source" },
    { label: "Control" },
  ];
  main.append(
    pageHead(
      "Schedules",
      h("button", { class: "btn", type: "button", text: "Refresh", onclick: () => route() }),
    ),
    h(
      "section",
      { class: "panel" },
      table(columns, rows, "No schedules. Define them in code or add one with `errand schedules add`."),
    ),
  );
}

const SCHEDULE_ACTIONS = {
  pause: { label: "Pause", done: (n) => `Schedule ${n} paused: it fires no slot until resumed` },
  resume: { label: "Resume", done: (n) => `Schedule ${n} resumed` },
  run: { label: "Run now", done: (n, r) => `Schedule ${n}: job #${r.jobId} enqueued` },
};

/** Pause, resume or run a schedule now, then redraw. */
function scheduleButton(sc, action) {
  const { label, done } = SCHEDULE_ACTIONS[action];
  return h("button", {
    class: `btn btn-sm ${action === "resume" ? "btn-primary" : ""}`,
    type: "button",
    text: label,
    attrs: { "aria-label": `${label} schedule ${sc.name}` },
    data: { action },
    onclick: async (event) => {
      event.currentTarget.disabled = true;
      try {
        const answer = await api(`/schedules/${encodeURIComponent(sc.name)}/${action}`, { method: "POST" });
        toast(done(sc.name, answer));
      } catch (err) {
        toast(err.message, "error");
      }
      route();
    },
  });
}

async function renderWorkers(_params, isCurrent) {
  const content = h("div");
  main.append(pageHead("Workers"), content);
  async function load() {
    const data = await api("/workers");
    if (!isCurrent()) return;
    const now = new Date(data.now).getTime();
    const rows = data.workers.map((w) => {
      const age = now - new Date(w.lastHeartbeatAt).getTime();
      return h(
        "tr",
        { data: { worker: w.id } },
        h(
          "td",
          {},
          h("span", { class: `dot ${age > 15_000 ? "stale" : ""}` }),
          h("span", { class: "mono", text: w.id }),
        ),
        h("td", { text: w.host }),
        h("td", { class: "num", text: String(w.pid) }),
        h(
          "td",
          { class: "wrap" },
          Object.entries(w.queues).map(([q, c]) => h("span", { class: "chip", text: `${q} × ${c}` })),
        ),
        h("td", { class: "num", text: fmtNumber(w.running) }),
        h("td", { class: "num", text: fmtNumber(w.processed) }),
        h("td", {}, timeEl(w.startedAt)),
        h("td", {
          class: age > 15_000 ? "warn" : "",
          text: fmtRelative(w.lastHeartbeatAt, now),
          title: fmtTime(w.lastHeartbeatAt),
        }),
      );
    });
    const columns = [
      { label: "Worker" },
      { label: "Host" },
      { label: "PID", num: true },
      { label: "Queues × concurrency" },
      { label: "Running", num: true },
      { label: "Processed", num: true },
      { label: "Started" },
      { label: "Last heartbeat" },
    ];
    clear(content);
    content.append(
      h(
        "section",
        { class: "panel" },
        table(columns, rows, `No live workers (none heartbeat within ${fmtDuration(data.staleMs)}).`),
      ),
    );
  }
  await load();
  every(5000, () => load().catch(() => {}));
}

// ---------------------------------------------------------------- start

buildShell();
window.addEventListener("hashchange", route);
route();
refreshDlqBadge().catch(() => {});
