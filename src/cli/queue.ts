/**
 * `errand queue list | pause | resume`: the queues in the store and whether each is paused. A
 * pause holds for every worker on every host until it is resumed: no handler of the queue starts
 * after `pause` returns, running jobs finish, and `resume` lets the workers claim at once.
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
    .description("queues: list them, pause one for every worker, resume it")
    .addHelpText(
      "after",
      `
A paused queue keeps its jobs pending: no worker anywhere starts one of them after \`pause\`
returns (it waits about half a second for that), and jobs already running finish. \`resume\`
wakes the workers at once. Any queue name may be paused, even one that has no jobs yet.

Examples:
  errand queue list
  errand queue pause emails
  errand queue resume emails`,
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
}
