// Formatting numbers, durations and times, and the small elements that show them.

import { h, s } from "./dom.js";

export function fmtNumber(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : "—";
}

export function fmtDuration(ms) {
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

export function fmtRelative(iso, now = Date.now()) {
  if (!iso) return "—";
  const diff = new Date(iso).getTime() - now;
  if (Math.abs(diff) < 1500) return "just now";
  return diff < 0 ? `${fmtDuration(-diff)} ago` : `in ${fmtDuration(diff)}`;
}

export function pad(n) {
  return String(n).padStart(2, "0");
}

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtClock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A time cell: relative text, absolute time on hover. */
export function timeEl(iso, tag = "span") {
  return h(tag, { text: fmtRelative(iso), title: iso ? `${fmtTime(iso)} (${iso})` : "" });
}

export function badge(state, extra = "") {
  return h("span", { class: `badge ${state} ${extra}`, text: state, data: { state } });
}

export function truncate(text, max) {
  if (!text) return "";
  const line = String(text).split("\n")[0];
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function prettyJson(value) {
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}
