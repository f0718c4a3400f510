// The live workers and what each one is running.

import { api } from "./api.js";
import { clear, h } from "./dom.js";
import { fmtDuration, fmtNumber, fmtRelative, fmtTime, timeEl } from "./format.js";
import { every, main } from "./shell.js";
import { pageHead, table } from "./ui.js";

export async function renderWorkers(_params, isCurrent) {
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
