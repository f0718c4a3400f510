/**
 * `errand queue list | pause | resume`: the queues in the store and whether each is paused. A
 * pause holds for every worker on every host until it is resumed: no handler of the queue starts
 * after `pause` returns, running jobs finish, and `resume` lets the workers claim at once.
 */
import type { Command } from "commander";
import type { QueuePause, QueueStats } from "../store/types.js";
import { globals, openFromOptions, UsageError, withErrand } from "./common.js";
import { type Column, isoSeconds, print, printJson, renderTable } from "./output.js";

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

interface QueueRow {
  queue: string;
  paused: boolean;
  pausedAt: Date | null;
  pending: number;
  delayed: number;
  running: number;
}

const QUEUE_COLUMNS: Column<QueueRow>[] = [
  { header: "QUEUE", value: (q) => q.queue },
  { header: "STATE", value: (q) => (q.paused ? `paused since ${isoSeconds(q.pausedAt)}` : "running") },
  { header: "PENDING", value: (q) => String(q.pending), align: "right" },
  { header: "DELAYED", value: (q) => String(q.delayed), align: "right" },
  { header: "RUNNING", value: (q) => String(q.running), align: "right" },
];

/** Every queue with jobs, and every paused one (a queue may be paused before its first job). */
export function queueRows(stats: QueueStats[], paused: QueuePause[]): QueueRow[] {
  const rows = new Map<string, QueueRow>();
  for (const s of stats) {
    rows.set(s.queue, {
      queue: s.queue,
      paused: false,
      pausedAt: null,
      pending: s.pending,
      delayed: s.delayed,
      running: s.running,
    });
  }
  for (const p of paused) {
    const row = rows.get(p.queue) ?? {
      queue: p.queue,
      paused: false,
      pausedAt: null,
      pending: 0,
      delayed: 0,
      running: 0,
    };
    rows.set(p.queue, { ...row, paused: true, pausedAt: p.pausedAt });
  }
  return [...rows.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

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
    .description("every queue with jobs or a pause: paused or running, pending, delayed and running jobs")
    .option("--json", "print the queues as JSON")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const rows = queueRows(await errand.stats(), await errand.pausedQueues());
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
