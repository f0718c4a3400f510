// Shared page pieces: toasts, the confirmation dialog, page heads, panels, tables, filters, pagers.

import { api, qs } from "./api.js";
import { patchRows } from "./live.js";
import { append, h } from "./dom.js";
import { refreshDlqBadge } from "./shell.js";

export function toast(message, kind = "info") {
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
export function confirmDialog({ title, message, confirmLabel, danger = false }) {
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

export function pageHead(title, ...actions) {
  return h(
    "div",
    { class: "page-head" },
    h("div", { class: "title" }, typeof title === "string" ? h("h1", { text: title }) : title),
    h("div", { class: "actions" }, actions),
  );
}

export function panel(title, body, extraHead) {
  return h(
    "section",
    { class: "panel" },
    title ? h("div", { class: "panel-head" }, h("h2", { text: title }), extraHead || null) : null,
    body,
  );
}

export function table(columns, rows, emptyText) {
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
  // Focusable: on a narrow screen the table scrolls inside this box, and keyboards must reach it.
  const wrap = h("div", { class: "table-wrap", attrs: { tabindex: "0" } }, h("table", {}, thead, tbody));
  // Always there, hidden while rows are shown: a live list may empty out or fill up later.
  wrap.append(h("div", { class: `empty${rows.length ? " hidden" : ""}`, text: emptyText }));
  return wrap;
}

/** Puts `rows` into a table() in place (live.js patchRows), showing its empty text when none. */
export function setTableRows(wrap, rows) {
  const changed = patchRows(wrap.querySelector("tbody"), rows);
  wrap.querySelector(".empty")?.classList.toggle("hidden", rows.length > 0);
  return changed;
}

export function pager(params, nextCursor, path) {
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

export async function queueOptions() {
  const stats = await api("/stats");
  refreshDlqBadge(stats);
  return stats.queues.map((q) => q.queue);
}

export function select(name, values, current, allLabel) {
  const el = h("select", { name, id: `f-${name}` }, h("option", { value: "", text: allLabel }));
  for (const v of values) el.append(h("option", { value: v, text: v, selected: v === current }));
  return el;
}

export function field(label, control) {
  return h("div", { class: "field" }, h("label", { text: label, htmlFor: control.id }), control);
}
