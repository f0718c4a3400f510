// Dead letters grouped by error message: how many, first and last seen, and a link to the
// failed jobs with that message (the job list's search matches error text).

import { api, qs } from "./api.js";
import { h } from "./dom.js";
import { fmtNumber, timeEl, truncate } from "./format.js";
import { panel, table } from "./ui.js";

/** The groups panel for one queue (or all): one row per message, most frequent first. */
export async function deadLetterGroups(queue) {
  const data = await api(`/dlq/groups${qs({ queue })}`);
  const rows = data.groups.map((g) => {
    const jobs = `#/jobs${qs({ state: "failed", queue, search: g.error })}`;
    return h(
      "tr",
      { data: { group: g.error } },
      h("td", {
        class: "error-cell group-error",
        text: g.error ? truncate(g.error, 120) : "(no message)",
        title: g.error,
      }),
      h("td", { class: "num", text: fmtNumber(g.count) }),
      h("td", {}, timeEl(g.firstSeen)),
      h("td", {}, timeEl(g.lastSeen)),
      h(
        "td",
        {},
        h("a", {
          href: jobs,
          text: "Show jobs",
          attrs: { "aria-label": `Show jobs failing with “${truncate(g.error || "no message", 60)}”` },
        }),
      ),
    );
  });
  const columns = [
    { label: "Error" },
    { label: "Jobs", num: true },
    { label: "First seen" },
    { label: "Last seen" },
    { label: "" },
  ];
  const el = panel(
    "By error",
    table(columns, rows, "No dead letters."),
    h("span", { class: "muted", text: `newest ${fmtNumber(data.sample)} failed jobs` }),
  );
  el.dataset.sig = JSON.stringify(data.groups);
  return el;
}
