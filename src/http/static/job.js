// One job's page: its details, attempts timeline and actions.

import { ApiError, api, qs } from "./api.js";
import { clear, h } from "./dom.js";
import { badge, fmtDuration, fmtRelative, fmtTime, prettyJson, timeEl } from "./format.js";
import { every, go, main, route } from "./shell.js";
import { confirmDialog, pageHead, panel, table, toast } from "./ui.js";

export async function jobAction(job, action) {
  if (action === "discard") {
    const ok = await confirmDialog({
      title: `Discard job #${job.id}?`,
      message: "It is deleted from the dead-letter queue with its history. This cannot be undone.",
      confirmLabel: "Discard",
      danger: true,
    });
    if (!ok) return false;
  }
  if (action === "cancel") {
    const ok = await confirmDialog({
      title: `Cancel job #${job.id}?`,
      message:
        job.state === "running"
          ? "The running handler is told to stop at its next heartbeat."
          : "It will not run.",
      confirmLabel: "Cancel job",
      danger: true,
    });
    if (!ok) return false;
  }
  try {
    await api(`/jobs/${encodeURIComponent(job.id)}/${action}`, { method: "POST" });
    toast(
      action === "retry"
        ? `Job #${job.id} queued for retry`
        : action === "cancel"
          ? `Job #${job.id} cancelled`
          : `Job #${job.id} discarded`,
    );
    return true;
  } catch (err) {
    toast(err.message, "error");
    return false;
  }
}

export const NO_RESULT = {
  waiting: "No result yet: the job waits for its dependencies.",
  pending: "No result yet: the job has not run to completion.",
  running: "No result yet: the job is running.",
  failed: "No result: the job failed.",
  cancelled: "No result: the job was cancelled.",
};

/** What a job list shows as its time: the moment that matters for its state. */
export function whenEl(job) {
  const [label, iso] =
    job.state === "pending"
      ? [new Date(job.runAt).getTime() > Date.now() ? "runs" : "due", job.runAt]
      : job.state === "running"
        ? ["started", job.startedAt]
        : job.state === "waiting"
          ? ["enqueued", job.createdAt]
          : [job.state, job.finishedAt];
  return h(
    "span",
    { title: iso ? fmtTime(iso) : "" },
    h("span", { class: "muted", text: `${label} ` }),
    fmtRelative(iso),
  );
}

/** A job's dependencies or dependents: each links to its own page. */
function linksTable(list, testid) {
  const rows = list.map((l) =>
    h(
      "tr",
      { data: { testid } },
      h("td", { class: "id" }, h("a", { href: `#/jobs/${encodeURIComponent(l.id)}`, text: `#${l.id}` })),
      h("td", { class: "mono", text: l.node || "" }),
      h("td", { text: l.name }),
      h("td", { text: l.queue }),
      h("td", {}, badge(l.state)),
    ),
  );
  const columns = [{ label: "Job" }, { label: "Node" }, { label: "Name" }, { label: "Queue" }, { label: "State" }];
  return table(columns, rows, "");
}

export function detail(k, v) {
  return h("div", {}, h("div", { class: "k", text: k }), h("div", { class: "v" }, v));
}

export async function renderJob(id, isCurrent) {
  const job = await api(`/jobs/${encodeURIComponent(id)}`).catch((err) => {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
  if (!isCurrent()) return;
  clear(main);
  if (!job) {
    main.append(
      h("div", { class: "breadcrumb" }, h("a", { href: "#/jobs", text: "Jobs" })),
      h("div", { class: "empty", text: `No job #${id}: it was discarded, pruned, or never existed.` }),
    );
    return;
  }
  const actions = [];
  const act = (label, action, cls) =>
    h("button", {
      class: `btn ${cls}`,
      type: "button",
      text: label,
      data: { action },
      onclick: async () => {
        if (await jobAction(job, action)) {
          if (action === "discard") go("dlq");
          else route();
        }
      },
    });
  if (job.state === "failed" || job.state === "cancelled") actions.push(act("Retry", "retry", "btn-primary"));
  if (job.state === "waiting" || job.state === "pending" || job.state === "running")
    actions.push(act("Cancel", "cancel", "btn-danger"));
  if (job.state === "failed") actions.push(act("Discard", "discard", "btn-danger"));

  const title = h(
    "div",
    {},
    h(
      "div",
      { class: "breadcrumb" },
      h("a", { href: "#/jobs", text: "Jobs" }),
      " / ",
      h("a", { href: `#/jobs${qs({ queue: job.queue })}`, text: job.queue }),
    ),
    h("div", { class: "title" }, h("h1", { text: `#${job.id} · ${job.name}` }), badge(job.state, "large")),
  );
  main.append(pageHead(title, actions));

  const details = h(
    "div",
    { class: "details" },
    detail("Queue", job.queue),
    detail("Attempts", `${job.attempt} of ${job.maxAttempts}`),
    detail("Priority", String(job.priority)),
    detail("Key", job.key ? h("span", { class: "mono", text: job.key }) : "—"),
    detail("Created", timeEl(job.createdAt)),
    detail("Run at", timeEl(job.runAt)),
    detail("Started", timeEl(job.startedAt)),
    detail("Finished", timeEl(job.finishedAt)),
    job.lockedBy ? detail("Worker", h("span", { class: "mono", text: job.lockedBy })) : null,
    job.lockedUntil ? detail("Lease until", timeEl(job.lockedUntil)) : null,
    job.cancelRequested ? detail("Cancel", "requested") : null,
  );
  main.append(panel("Details", h("div", { class: "panel-body" }, details)));

  // Why a pending job waits (queue paused, not due yet, no worker, jobs ahead of it), or a
  // waiting one (its dependencies).
  if ((job.state === "pending" || job.state === "waiting") && job.waiting?.length > 0) {
    main.append(
      h(
        "div",
        { class: "notice", data: { testid: "waiting" } },
        h("strong", { text: "Waiting: " }),
        job.waiting.map((r) => r.message).join("; "),
        ...job.waiting.filter((r) => r.kind === "flow-paused").map(liftPauseButton),
      ),
    );
  }

  if (job.progress) {
    const pct = Math.round(job.progress.fraction * 100);
    const bar = h(
      "div",
      {
        class: "progress",
        attrs: { role: "progressbar", "aria-valuenow": pct, "aria-valuemin": 0, "aria-valuemax": 100 },
      },
      h("div", {}),
    );
    bar.firstChild.style.width = `${pct}%`;
    main.append(
      panel(
        "Progress",
        h(
          "div",
          { class: "panel-body" },
          h("div", { class: "progress-row" }, bar, h("strong", { text: `${pct}%` })),
          job.progress.message ? h("p", { class: "muted", text: job.progress.message }) : null,
        ),
      ),
    );
  }

  if (job.lastError && job.state !== "completed") {
    main.append(
      h("div", {
        class: `notice ${job.state === "failed" ? "error" : ""}`,
        text: `Last error: ${job.lastError}`,
      }),
    );
  }

  main.append(
    h(
      "div",
      { class: "grid-2" },
      panel(
        "Payload",
        h(
          "div",
          { class: "panel-body" },
          h("pre", { class: "code", data: { testid: "payload" }, text: prettyJson(job.payload) }),
        ),
      ),
      panel(
        "Result",
        h(
          "div",
          { class: "panel-body" },
          job.state === "completed"
            ? h("pre", { class: "code", data: { testid: "result" }, text: prettyJson(job.result) })
            : h("p", { class: "muted", text: NO_RESULT[job.state] || "No result." }),
        ),
      ),
    ),
  );
  for (const [title, list] of [
    ["Dependencies", job.dependencies || []],
    ["Dependents", job.dependents || []],
  ]) {
    if (list.length > 0) main.append(panel(`${title} (${list.length})`, linksTable(list, title.toLowerCase())));
  }
  main.append(panel(`Attempts (${job.attempts.length})`, h("div", { class: "panel-body" }, timeline(job))));

  if (job.state === "pending" || job.state === "running") {
    const seen = JSON.stringify([job.state, job.attempt, job.progress, job.attempts.length]);
    every(2000, async () => {
      const fresh = await api(`/jobs/${encodeURIComponent(id)}`).catch(() => null);
      if (
        fresh &&
        isCurrent() &&
        JSON.stringify([fresh.state, fresh.attempt, fresh.progress, fresh.attempts.length]) !== seen
      )
        route();
    });
  }
}

/** An attempt's job log (the handler's ctx.log lines), folded like the stack trace: one click opens it. */
function jobLog(attempt) {
  const lines = attempt.logs.filter((l) => l.dropped === undefined);
  const marker = attempt.logs.find((l) => l.dropped !== undefined);
  const text = lines
    .map(
      (l) =>
        `${fmtTime(l.at).slice(11)} ${l.level.toUpperCase().padEnd(5)} ${l.msg}${l.fields ? ` ${JSON.stringify(l.fields)}` : ""}`,
    )
    .join("\n");
  return h(
    "details",
    { class: "stack job-log", data: { testid: `job-log-${attempt.attempt}` } },
    h("summary", {
      text: `Job log (${lines.length} line${lines.length === 1 ? "" : "s"}${marker ? `, ${marker.dropped} more not kept` : ""})`,
    }),
    h("pre", { class: "code", text }),
    marker ? h("p", { class: "muted", text: marker.msg }) : null,
  );
}

export function timeline(job) {
  if (job.attempts.length === 0) {
    return h("p", {
      class: "muted",
      text: job.state === "running" ? "The first attempt is running." : "Not run yet.",
    });
  }
  const list = h("ol", { class: "timeline", data: { testid: "attempts" } });
  for (const a of [...job.attempts].reverse()) {
    const took = new Date(a.finishedAt).getTime() - new Date(a.startedAt).getTime();
    const meta = [`started ${fmtTime(a.startedAt)}`, `took ${fmtDuration(took)}`];
    if (a.worker) meta.push(`on ${a.worker}`);
    if (a.retryAt)
      meta.push(`${a.outcome === "snoozed" ? "snoozed" : "retry"} at ${fmtTime(a.retryAt).slice(11)}`);
    list.append(
      h(
        "li",
        { data: { attempt: a.attempt, outcome: a.outcome } },
        h("span", { class: `marker ${a.outcome}` }),
        h(
          "div",
          { class: "head" },
          h("strong", { text: `Attempt ${a.attempt}` }),
          badge(a.outcome),
          a.kind ? h("span", { class: "muted", text: `error kind: ${a.kind}` }) : null,
        ),
        h("div", { class: "meta", text: meta.join(" · ") }),
        a.error ? h("div", { class: "error", text: a.error }) : null,
        a.stack
          ? h(
              "details",
              { class: "stack" },
              h("summary", { text: "Stack trace" }),
              h("pre", { class: "code", text: a.stack }),
            )
          : null,
        a.logs && a.logs.length > 0 ? jobLog(a) : null,
      ),
    );
  }
  if (job.state === "running") {
    list.prepend(
      h(
        "li",
        {},
        h("span", { class: "marker" }),
        h("div", { class: "head" }, h("strong", { text: `Attempt ${job.attempt}` }), badge("running")),
        h("div", { class: "meta", text: `started ${fmtTime(job.startedAt)} on ${job.lockedBy || "?"}` }),
      ),
    );
  }
  return list;
}

/**
 * Lifts the rate-limit pause a flow-paused reason names (its key's, or the queue-wide budget's
 * when its key is null) for every worker, then redraws.
 */
function liftPauseButton(reason) {
  const what = reason.key === null ? `queue ${reason.queue}` : `key ${reason.key}`;
  return h("button", {
    class: "btn btn-sm",
    type: "button",
    text: "Lift rate-limit pause",
    attrs: { "aria-label": `Lift the rate-limit pause of ${what}` },
    data: { action: "resume-limits" },
    onclick: async (event) => {
      event.currentTarget.disabled = true;
      try {
        const answer = await api(`/queues/${encodeURIComponent(reason.queue)}/resume-limits`, {
          method: "POST",
          body: { key: reason.key },
        });
        toast(answer.lifted > 0 ? `Rate-limit pause of ${what} lifted` : `No rate-limit pause of ${what} in effect`);
      } catch (err) {
        toast(err.message, "error");
      }
      route();
    },
  });
}
