// The schedules: their next runs, with pause, resume and run-now buttons.

import { api, qs } from "./api.js";
import { h } from "./dom.js";
import { fmtRelative, fmtTime } from "./format.js";
import { keyed, liveRefresh } from "./live.js";
import { main, route } from "./shell.js";
import { pageHead, setTableRows, table, toast } from "./ui.js";

/** One schedule's row, keyed by name; its signature includes the relative times it shows. */
function scheduleRow(sc, now) {
  const tr = h(
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
  );
  const shown = [
    sc,
    fmtRelative(sc.nextRunAt, now),
    sc.lastFiredAt ? fmtRelative(sc.lastFiredAt, now) : null,
  ];
  return keyed(tr, sc.name, shown);
}

export async function renderSchedules(_params, isCurrent) {
  const data = await api("/schedules");
  if (!isCurrent()) return;
  const rowsOf = (answer) => {
    const now = new Date(answer.now).getTime();
    return answer.schedules.map((sc) => scheduleRow(sc, now));
  };
  const rows = rowsOf(data);
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
  const list = table(
    columns,
    rows,
    "No schedules. Define them in code or add one with `errand schedules add`.",
  );
  liveRefresh(async () => {
    const next = await api("/schedules");
    if (isCurrent()) setTableRows(list, rowsOf(next));
  }, isCurrent);
  main.append(
    pageHead(
      "Schedules",
      h("button", { class: "btn", type: "button", text: "Refresh", onclick: () => route() }),
    ),
    h("section", { class: "panel" }, list),
  );
}

export const SCHEDULE_ACTIONS = {
  pause: { label: "Pause", done: (n) => `Schedule ${n} paused: it fires no slot until resumed` },
  resume: { label: "Resume", done: (n) => `Schedule ${n} resumed` },
  run: { label: "Run now", done: (n, r) => `Schedule ${n}: job #${r.jobId} enqueued` },
};

/** Pause, resume or run a schedule now, then redraw. */
export function scheduleButton(sc, action) {
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
