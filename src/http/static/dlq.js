// The dead-letter queue: failed jobs, retried or discarded one by one or in bulk.

import { PAGE_SIZE, api, qs } from "./api.js";
import { h } from "./dom.js";
import { fmtNumber, timeEl, truncate } from "./format.js";
import { deadLetterGroups } from "./dlq-groups.js";
import { jobAction } from "./job.js";
import { keyed, liveRefresh } from "./live.js";
import { go, main, route } from "./shell.js";
import {
  confirmDialog,
  field,
  pageHead,
  pager,
  queueOptions,
  select,
  setTableRows,
  table,
  toast,
} from "./ui.js";

export async function renderDlq(params, isCurrent) {
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
    for (const box of boxes.filter((b) => b.isConnected)) {
      box.checked = checkAll.checked;
      if (box.checked) selected.add(box.value);
      else selected.delete(box.value);
    }
    update();
  });

  const rowOf = (job) => {
    const box = h("input", {
      type: "checkbox",
      value: job.id,
      checked: selected.has(job.id),
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
    const tr = h(
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
    return keyed(tr, job.id, [job.attempt, job.lastError, job.finishedAt]);
  };
  const rows = page.jobs.map(rowOf);

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
  const list = table(columns, rows, "The dead-letter queue is empty.");
  const groups = h("div", { class: "dlq-groups" }, await deadLetterGroups(queue));
  const url = `/jobs${qs({ state: "failed", queue, cursor: params.get("cursor"), limit: PAGE_SIZE })}`;
  liveRefresh(async () => {
    const [next, grouped] = await Promise.all([api(url), deadLetterGroups(queue)]);
    if (!isCurrent()) return;
    setTableRows(list, next.jobs.map(rowOf));
    // A selected job that left the list (retried, discarded elsewhere) is no longer selected.
    const shown = new Set(next.jobs.map((j) => j.id));
    for (const id of [...selected]) if (!shown.has(id)) selected.delete(id);
    update();
    if (groups.firstChild?.dataset.sig !== grouped.dataset.sig) groups.replaceChildren(grouped);
  }, isCurrent);
  main.append(
    head,
    h("p", {
      class: "muted lede",
      text: "Jobs that failed for good, kept with their payload and every attempt. Retry them once the cause is fixed, or discard them.",
    }),
    groups,
    h("section", { class: "panel" }, bar, list, pager(params, page.nextCursor, "dlq")),
  );
}
