// The overview: summary tiles, throughput charts, the queues table with pause buttons, timings.

import { api, qs } from "./api.js";
import { timingsPanel } from "./charts.js";
import { clear, h, s } from "./dom.js";
import { fmtClock, fmtDuration, fmtNumber, fmtTime } from "./format.js";
import { every, main, refreshDlqBadge, route } from "./shell.js";
import { field, pageHead, panel, table, toast } from "./ui.js";

export let chartRange = "1h";
export const RANGES = { "1h": { since: "1h", bucket: "1m" }, "24h": { since: "24h", bucket: "30m" } };

export async function renderOverview(_params, isCurrent) {
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
    const [stats, throughput, workers, timings] = await Promise.all([
      api("/stats"),
      api(`/throughput${qs(range)}`),
      api("/workers"),
      api(`/timings${qs({ window: range.since })}`),
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
      timingsPanel(timings, chartRange === "1h" ? "last hour" : "last 24 hours"),
    );
  }
  await load();
  every(5000, () => load().catch(() => {}));
}

export function summaryTiles(stats, workers) {
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
export function series(throughput, field, queue) {
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

export function niceMax(n) {
  if (n <= 4) return 4;
  const mag = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * mag >= n) return step * mag;
  return 10 * mag;
}

export function barChart(data, field) {
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

export function chartPanel(title, field, throughput) {
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

export function sparkline(throughput, queue) {
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

export function queuesPanel(stats, throughput) {
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
export function pauseButton(q) {
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
