// Bulk actions by filter: retry or discard every failed job matching a search, cancel every
// pending job of a queue. The confirmation shows how many jobs match now; the server acts on
// at most that many, in batches of a few hundred per store transaction.

import { api, qs } from "./api.js";
import { h } from "./dom.js";
import { fmtNumber } from "./format.js";
import { route } from "./shell.js";
import { confirmDialog, toast } from "./ui.js";

const WORDS = {
  retry: {
    verb: "Retry",
    done: "Retried",
    what: "failed",
    note: "They go back to pending with a fresh attempt budget; their history is kept.",
  },
  discard: {
    verb: "Discard",
    done: "Discarded",
    what: "failed",
    note: "They are deleted with their history. This cannot be undone.",
  },
  cancel: {
    verb: "Cancel",
    done: "Cancelled",
    what: "pending",
    note: "They will not run. Jobs already running are left alone.",
  },
};

function describe(filter, count) {
  const w = WORDS[filter.action];
  const jobs = `${fmtNumber(count)}${filter.capped ? "+" : ""} ${w.what} job${count === 1 ? "" : "s"}`;
  const where = filter.queue ? ` of queue “${filter.queue}”` : "";
  const matching = filter.search ? ` matching “${filter.search}”` : "";
  return `${jobs}${where}${matching}`;
}

/** Counts the matching jobs, asks for confirmation with that count, then acts. */
export async function bulkByFilter(filter) {
  const w = WORDS[filter.action];
  try {
    const counted = await api(
      `/jobs/count${qs({ action: filter.action, queue: filter.queue, search: filter.search })}`,
    );
    if (counted.count === 0) {
      toast(`No ${w.what} jobs match.`);
      return;
    }
    const text = describe({ ...filter, capped: counted.capped }, counted.count);
    const ok = await confirmDialog({
      title: `${w.verb} ${text}?`,
      message: w.note,
      confirmLabel: `${w.verb} ${fmtNumber(counted.count)}`,
      danger: filter.action !== "retry",
    });
    if (!ok) return;
    const body = { action: filter.action, max: counted.count };
    if (filter.queue) body.queue = filter.queue;
    if (filter.search) body.search = filter.search;
    const res = await api("/jobs/bulk", { method: "POST", body });
    toast(`${w.done} ${fmtNumber(res.done)} job${res.done === 1 ? "" : "s"}`);
    route();
  } catch (err) {
    toast(err.message, "error");
  }
}

/** The bulk buttons a job list filtered by state offers for its filter (none for other states). */
export function bulkButtons(filters) {
  const filter = { queue: filters.queue || undefined, search: filters.search || undefined };
  const button = (action, label, cls = "") =>
    h("button", {
      class: `btn ${cls}`,
      type: "button",
      text: label,
      data: { bulk: `${action}-matching` },
      onclick: () => bulkByFilter({ ...filter, action }),
    });
  if (filters.state === "failed") {
    return [button("retry", "Retry all matching"), button("discard", "Discard all matching", "btn-danger")];
  }
  if (filters.state === "pending" && filters.queue) {
    return [button("cancel", "Cancel all pending", "btn-danger")];
  }
  return [];
}
