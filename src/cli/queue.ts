/**
 * `errand queue list | pause | resume`: the queues in the store and whether each is paused. A
 * pause holds for every worker on every host until it is resumed: no handler of the queue starts
 * after `pause` returns, running jobs finish, and `resume` lets the workers claim at once.
 * `resume-limits` lifts the other kind of pause: a flow budget's, set by a rate-limited answer.
 */
import type { Command } from "commander";
import type { QueueOverview } from "../queue-pause.js";
import { globals, openFromOptions, UsageError, withErrand } from "./common.js";
import { type Column, isoSeconds, print, printJson, renderTable } from "./output.js";

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

const QUEUE_COLUMNS: Column<QueueOverview>[] = [
  { header: "QUEUE", value: (q) => q.queue },
  { header: "STATE", value: (q) => (q.paused ? `paused since ${isoSeconds(q.pausedAt)}` : "running") },
  { header: "PENDING", value: (q) => String(q.pending), align: "right" },
  { header: "DELAYED", value: (q) => String(q.delayed), align: "right" },
  { header: "RUNNING", value: (q) => String(q.running), align: "right" },
  {
    header: "WORKERS",
    // Due jobs and nobody to run them: say so where the eye is.
    value: (q) => (q.workers === 0 && q.pending > 0 ? "0 (no worker!)" : String(q.workers)),
    align: "right",
  },
];

function queueName(value: string): string {
  if (!NAME.test(value)) throw new UsageError(`invalid queue name ${JSON.stringify(value)}`);
  return value;
}

export function registerQueue(program: Command): void {
  const queue = program
    .command("queue")
    .description("queues: list them, pause one for every worker, resume it, lift its rate-limit pauses")
    .addHelpText(
      "after",
      `
A paused queue keeps its jobs pending: no worker anywhere starts one of them after \`pause\`
returns (it waits about half a second for that), and jobs already running finish. \`resume\`
wakes the workers at once. Any queue name may be paused, even one that has no jobs yet.

Examples:
  errand queue list
  errand queue pause emails
  errand queue resume emails
  errand queue resume-limits crm                  # every rate-limit pause of the queue
  errand queue resume-limits crm --key acme       # one flow key's
  errand queue resume-limits crm --queue-budget   # the queue-wide budget's

\`resume-limits\` is not \`resume\`: it lifts the pauses adaptive flow control set when a
handler was rate-limited (RetryableError rateLimited, a 429's Retry-After), for every worker.`,
    );

  queue
    .command("list")
    .description(
      "every queue with jobs or a pause: paused or not, due, delayed and running jobs, live workers",
    )
    .option("--json", "print the queues as JSON")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const rows = await errand.queues();
        if (opts.json) printJson(rows);
        else print(rows.length === 0 ? "no queues yet" : renderTable(rows, QUEUE_COLUMNS));
      });
    });

  queue
    .command("pause")
    .description("pause a queue for every worker; returns once none of its jobs can start anywhere")
    .argument("<queue>", "queue name")
    .option("--json", "print the pause as JSON")
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      queueName(name);
      await withErrand(await openFromOptions(globals(cmd)), async (errand) => {
        const pause = await errand.pauseQueue(name);
        if (opts.json) printJson(pause);
        else print(`queue "${name}" paused (since ${isoSeconds(pause.pausedAt)}); running jobs finish`);
      });
    });

  queue
    .command("resume")
    .description("resume a paused queue; its workers claim at once")
    .argument("<queue>", "queue name")
    .option("--json", "print { queue, resumed } as JSON")
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      queueName(name);
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const resumed = await errand.resumeQueue(name);
        if (opts.json) printJson({ queue: name, resumed });
        else print(resumed ? `queue "${name}" resumed` : `queue "${name}" was not paused`);
      });
    });

  queue
    .command("resume-limits")
    .description(
      "lift the rate-limit pauses (a 429's Retry-After) of a queue's flow budgets; its workers claim at once",
    )
    .argument("<queue>", "queue name")
    .option("--key <key>", "only this flow key's pause")
    .option("--queue-budget", "only the pause of the queue-wide budget")
    .option("--json", "print { queue, key, all, lifted } as JSON")
    .action(
      async (name: string, opts: { key?: string; queueBudget?: boolean; json?: boolean }, cmd: Command) => {
        queueName(name);
        if (opts.key !== undefined && opts.queueBudget)
          throw new UsageError("--key and --queue-budget pick different pauses: give one of them");
        if (opts.key === "") throw new UsageError("--key needs a flow key, not an empty string");
        const key = opts.queueBudget ? null : opts.key;
        await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
          const lifted = await errand.resumeFlow(name, key === undefined ? {} : { key });
          if (opts.json) printJson({ queue: name, key: key ?? null, all: key === undefined, lifted });
          else print(resumeLimitsLine(name, key, lifted));
        });
      },
    );
}

function resumeLimitsLine(queue: string, key: string | null | undefined, lifted: number): string {
  const which =
    key === undefined
      ? `of queue "${queue}"`
      : key === null
        ? `of queue "${queue}"'s queue-wide budget`
        : `of flow key ${JSON.stringify(key)} in queue "${queue}"`;
  if (lifted === 0) {
    if (key === undefined) return `queue "${queue}" had no rate-limit pause in effect`;
    return `no rate-limit pause in effect ${which}`;
  }
  return `lifted ${lifted} rate-limit pause${lifted === 1 ? "" : "s"} ${which}`;
}
