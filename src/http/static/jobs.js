// The job list: filters, search and pages of jobs.

import { PAGE_SIZE, STATES, api, qs } from "./api.js";
import { append, h } from "./dom.js";
import { badge, truncate } from "./format.js";
import { bulkButtons } from "./bulk.js";
import { whenEl } from "./job.js";
import { keyed, liveRefresh } from "./live.js";
import { go, main, route } from "./shell.js";
import { field, pageHead, pager, queueOptions, select, setTableRows, table } from "./ui.js";

/** One job's row, keyed for live patching by what it shows. */
function jobRow(job) {
  const tr = h(
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
  );
  return keyed(tr, job.id, [job.state, job.attempt, job.lastError, job.runAt, job.startedAt, job.finishedAt]);
}

export async function renderJobs(params, isCurrent) {
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
    placeholder: "id, key, payload or error text",
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

  const rowsOf = (jobs) => jobs.map(jobRow);
  const rows = rowsOf(page.jobs);
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
  const list = table(columns, rows, "No jobs match these filters.");
  const url = `/jobs${qs({ ...filters, cursor: params.get("cursor"), limit: PAGE_SIZE })}`;
  liveRefresh(async () => {
    const next = await api(url);
    if (isCurrent()) setTableRows(list, rowsOf(next.jobs));
  }, isCurrent);
  main.append(
    pageHead(
      "Jobs",
      filters.name ? [] : bulkButtons(filters),
      h("button", { class: "btn", type: "button", text: "Refresh", onclick: () => route() }),
    ),
    h("section", { class: "panel" }, form, list, pager(params, page.nextCursor, "jobs")),
  );
}
