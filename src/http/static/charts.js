// Runtime and wait-time charts per queue: one small inline SVG bar per metric, the 95th
// percentile as a light bar with the median over it, scaled to the largest p95 of any queue.
// From GET /api/timings: the newest jobs finished within the chosen window (at most a few
// thousand), so the numbers cost the store one index range read.

import { h, s } from "./dom.js";
import { fmtDuration, fmtNumber } from "./format.js";
import { panel, table } from "./ui.js";

const WIDTH = 160;
const HEIGHT = 14;

function bar(p, scale, what) {
  const w = (ms) => Math.max(1, Math.round((ms / scale) * WIDTH));
  const label = `${what}: median ${fmtDuration(p.p50)}, 95th percentile ${fmtDuration(p.p95)}, max ${fmtDuration(p.max)}`;
  return h(
    "div",
    { class: "timing-cell" },
    s(
      "svg",
      {
        class: "timing-chart",
        width: WIDTH,
        height: HEIGHT,
        viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
        role: "img",
        "aria-label": label,
      },
      s("title", {}, label),
      s("rect", { class: "bar-p95", x: 0, y: 1, width: w(p.p95), height: HEIGHT - 2, rx: 2 }),
      s("rect", { class: "bar-p50", x: 0, y: 1, width: w(p.p50), height: HEIGHT - 2, rx: 2 }),
    ),
    h("span", { class: "muted", text: `${fmtDuration(p.p50)} · ${fmtDuration(p.p95)}` }),
  );
}

/** The panel: one row per queue with its runtime and wait bars. */
export function timingsPanel(data, rangeLabel) {
  const maxRun = Math.max(1, ...data.queues.map((q) => q.runMs.p95));
  const maxWait = Math.max(1, ...data.queues.map((q) => q.waitMs.p95));
  const rows = data.queues.map((q) =>
    h(
      "tr",
      { data: { timings: q.queue } },
      h("td", { text: q.queue }),
      h("td", {}, bar(q.runMs, maxRun, "runtime")),
      h("td", {}, bar(q.waitMs, maxWait, "wait")),
      h("td", { class: "num", text: fmtNumber(q.count) }),
    ),
  );
  const columns = [
    { label: "Queue" },
    { label: "Runtime (median · p95)" },
    { label: "Wait from due to start (median · p95)" },
    { label: "Jobs", num: true },
  ];
  const legend = h(
    "div",
    { class: "chart-legend" },
    h("span", {}, h("span", { class: "swatch p50" }), "median"),
    h("span", {}, h("span", { class: "swatch p95" }), "95th percentile"),
  );
  return panel(
    `Runtime and wait, ${rangeLabel} (newest ${fmtNumber(data.sample)} finished jobs at most)`,
    table(columns, rows, "No job finished in this window."),
    legend,
  );
}
