/**
 * `errand demo`: the seed scenario on an embedded SQLite file, with live progress and a summary.
 *
 * - `emails` (concurrency 2): three e-mails enqueued with priorities 1, 10, 5 before the worker
 *   starts; the worker claims in priority order, so they start in the order 10, 5, 1.
 * - `reports` (concurrency 1): report-1 (priority 10) fails transiently on its first attempt and
 *   succeeds on the retry after a 200 ms backoff; report-2 (priority 1, maxAttempts 2) runs after
 *   it and fails transiently on both of its attempts, so it ends in the dead-letter queue.
 * - Then a graceful stop and a summary. The demo checks its own story and exits 1 if the run
 *   did not go as described (a regression), else 0.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import type { JobEvent } from "../errand.js";
import type { JobRecord } from "../job.js";
import { CliError, globals, redact } from "./common.js";
import { type DemoEvent, makeDemoJobs } from "./demo-jobs.js";
import { humanDuration, print, renderTable } from "./output.js";

const DEMO_TIMEOUT_MS = 30_000;

export function registerDemo(program: Command): void {
  program
    .command("demo")
    .description("run the demo: priorities, a retry and the dead-letter queue on an embedded SQLite file")
    .addHelpText(
      "after",
      `
Without --url the demo uses a fresh temporary SQLite file and prints its path, so you can look
at the jobs afterwards (errand jobs list --url <path>). With --url the store must hold no jobs.`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const code = await runDemo(globals(cmd).url);
      process.exitCode = code;
    });
}

interface Row {
  label: string;
  job: JobRecord;
}

export async function runDemo(url: string | undefined): Promise<number> {
  const startedAt = Date.now();
  const stamp = () => `+${((Date.now() - startedAt) / 1000).toFixed(3)}s`.padStart(8);
  const line = (queue: string, what: string, text: string) =>
    print(`${stamp()}  ${queue.padEnd(7)}  ${what.padEnd(8)}  ${text}`);

  const labels = new Map<string, string>();
  const label = (id: string) => labels.get(id) ?? `job ${id}`;
  const emailStarts: number[] = [];

  const observe = (event: DemoEvent) => {
    const { job } = event;
    if (event.type === "started") {
      if (job.queue === "emails" && event.attempt === 1) emailStarts.push(job.priority);
      line(job.queue, "start", `${label(job.id)}  attempt ${event.attempt}/${job.maxAttempts}`);
    } else if (event.type === "failing") {
      line(
        job.queue,
        "error",
        `${label(job.id)}  attempt ${event.attempt}/${job.maxAttempts}: ${event.message}`,
      );
    } else {
      line(
        job.queue,
        "progress",
        `${label(job.id)}  ${Math.round((event.fraction ?? 0) * 100)}% ${event.message ?? ""}`,
      );
    }
  };
  const { sendEmail, buildReport, jobs } = makeDemoJobs({ observe });

  const target = url ?? `sqlite:${join(mkdtempSync(join(tmpdir(), "errand-demo-")), "demo.db")}`;
  const [{ openErrand }, { createLogger, silentLogger }] = await Promise.all([
    import("../open-errand.js"),
    import("../logger.js"),
  ]);
  const level = process.env.ERRAND_LOG_LEVEL;
  const errand = await openErrand({
    url: target,
    jobs,
    logger: level ? createLogger({ level }) : silentLogger(),
  });
  try {
    if (url !== undefined) {
      const existing = await errand.listJobs({ limit: 1 });
      if (existing.jobs.length > 0) {
        throw new CliError(
          `the demo needs an empty store, and ${redact(url)} already holds jobs; leave out --url to use a fresh file`,
        );
      }
    }
    print(`errand demo · store: ${redact(target)} (${errand.storeKind})\n`);

    // Three e-mails, enqueued lowest priority first — before any worker runs.
    const emails = [
      { to: "ada@example.com", priority: 1 },
      { to: "grace@example.com", priority: 10 },
      { to: "linus@example.com", priority: 5 },
    ];
    for (const e of emails) {
      const job = await errand.enqueue(
        sendEmail,
        { to: e.to, subject: "Welcome!" },
        { priority: e.priority },
      );
      labels.set(job.id, `e-mail to ${e.to} (priority ${e.priority})`);
      print(`enqueued  send-email    #${job.id}  to ${e.to}  priority ${e.priority}`);
    }
    const reports = [
      { report: "report-1", priority: 10, failAttempts: 1 },
      { report: "report-2", priority: 1, failAttempts: 2, maxAttempts: 2 },
    ];
    for (const r of reports) {
      const job = await errand.enqueue(
        buildReport,
        { report: r.report, failAttempts: r.failAttempts },
        r.maxAttempts === undefined
          ? { priority: r.priority }
          : { priority: r.priority, maxAttempts: r.maxAttempts },
      );
      labels.set(job.id, `${r.report} (priority ${r.priority})`);
      print(
        `enqueued  build-report  #${job.id}  ${r.report}  priority ${r.priority}  max attempts ${job.maxAttempts}`,
      );
    }
    const ids = [...labels.keys()];

    // Live progress from the worker's events.
    let finished = 0;
    let allDone!: () => void;
    const done = new Promise<void>((resolve) => {
      allDone = resolve;
    });
    const finish = () => {
      finished++;
      if (finished === ids.length) allDone();
    };
    errand.on("completed", (e: JobEvent) => {
      line(
        e.job.queue,
        "done",
        `${label(e.job.id)}  attempt ${e.job.attempt}/${e.job.maxAttempts} completed`,
      );
      finish();
    });
    errand.on("retrying", (e: JobEvent) => {
      line(
        e.job.queue,
        "retry",
        `${label(e.job.id)}  attempt ${e.job.attempt}/${e.job.maxAttempts} is pending again: retry in ${humanDuration(e.delayMs)} (backoff)`,
      );
    });
    errand.on("failed", (e: JobEvent) => {
      line(
        e.job.queue,
        "FAILED",
        `${label(e.job.id)}  attempt ${e.job.attempt}/${e.job.maxAttempts} was its last: failed → dead-letter queue`,
      );
      finish();
    });

    print("\nstarting one worker: emails × 2, reports × 1\n");
    const worker = errand.work(
      { emails: { concurrency: 2 }, reports: { concurrency: 1 } },
      { shutdownTimeout: "10s" },
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      done.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), DEMO_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);

    print("\nall jobs finished: stopping the worker gracefully");
    const stop = await worker.stop();
    print(`worker stopped ${stop.clean ? "cleanly" : `with ${stop.released} job(s) released`}\n`);

    const rows: Row[] = [];
    for (const id of ids) {
      const job = await errand.getJob(id);
      if (job) rows.push({ label: label(id), job });
    }
    print(summary(rows));
    const problems = checkStory(rows, emailStarts, timedOut);
    print("");
    print(`e-mails started in order: ${emailStarts.join(", ")} (priority, highest first)`);
    const report1 = rows.find((r) => r.label.startsWith("report-1"));
    if (report1) {
      const [first, second] = report1.job.attempts;
      const waited =
        first && second ? new Date(second.startedAt).getTime() - new Date(first.finishedAt).getTime() : null;
      print(
        `retried: report-1 — attempt 1 ${first?.outcome ?? "?"} (${first?.error ?? "no error"}), ` +
          `attempt 2 ${second?.outcome ?? "?"}${waited === null ? "" : ` ${humanDuration(waited)} later`}`,
      );
    }
    const failed = rows.filter((r) => r.job.state === "failed");
    print(
      `failed: ${failed.length === 0 ? "none" : failed.map((r) => `${r.label.split(" ")[0]} after ${r.job.attempt} attempts (in the dead-letter queue)`).join(", ")}`,
    );
    if (url === undefined) {
      const file = target.slice("sqlite:".length);
      print(`\nlook around: errand jobs list --url ${file}   ·   errand dlq list --url ${file}`);
    }
    if (problems.length > 0) {
      print(`\nthe demo did not go as expected:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
      return 1;
    }
    return 0;
  } finally {
    await errand.close();
  }
}

function summary(rows: Row[]): string {
  return renderTable(rows, [
    { header: "JOB", value: (r) => r.label },
    { header: "QUEUE", value: (r) => r.job.queue },
    { header: "STATE", value: (r) => r.job.state },
    { header: "ATTEMPTS", value: (r) => `${r.job.attempt}/${r.job.maxAttempts}`, align: "right" },
    {
      header: "HISTORY",
      value: (r) =>
        r.job.attempts
          .map((a) => (a.kind && a.outcome !== "completed" ? `${a.outcome} (${a.kind})` : a.outcome))
          .join(" → "),
    },
  ]);
}

/** The story the demo promises; anything else is reported and makes the demo exit 1. */
function checkStory(rows: Row[], emailStarts: number[], timedOut: boolean): string[] {
  const problems: string[] = [];
  if (timedOut) problems.push(`not every job finished within ${DEMO_TIMEOUT_MS / 1000}s`);
  if (emailStarts.join(",") !== "10,5,1")
    problems.push(`e-mails started in order ${emailStarts.join(", ")}, expected 10, 5, 1`);
  const outcomes = (prefix: string) =>
    rows
      .find((r) => r.label.startsWith(prefix))
      ?.job.attempts.map((a) => a.outcome)
      .join(",");
  const states = (prefix: string) => rows.find((r) => r.label.startsWith(prefix))?.job.state;
  if (states("report-1") !== "completed" || outcomes("report-1") !== "retried,completed") {
    problems.push(`report-1 should fail once and complete on its retry; history: ${outcomes("report-1")}`);
  }
  if (states("report-2") !== "failed" || outcomes("report-2") !== "retried,failed") {
    problems.push(`report-2 should fail both of its 2 attempts; history: ${outcomes("report-2")}`);
  }
  for (const r of rows.filter((r) => r.job.queue === "emails")) {
    if (r.job.state !== "completed") problems.push(`${r.label} is ${r.job.state}, expected completed`);
  }
  return problems;
}
