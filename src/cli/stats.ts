/** `errand stats`: one row per queue; `--watch` redraws it until Ctrl-C. */
import type { Command } from "commander";
import type { Errand } from "../errand.js";
import type { QueueStats } from "../store/types.js";
import { globals, openFromOptions, parseDurationOption, UsageError, withErrand } from "./common.js";
import { isoSeconds, print, printJson, renderTable, STATS_COLUMNS } from "./output.js";

const DEFAULT_WATCH_MS = 2000;

export function registerStats(program: Command): void {
  program
    .command("stats")
    .description("jobs per queue and state, finished in the last hour, age of the oldest due job")
    .option("--json", "print the numbers as JSON")
    .option("-w, --watch [interval]", "redraw every interval (default 2s) until Ctrl-C")
    .action(async (opts: { json?: boolean; watch?: boolean | string }, cmd: Command) => {
      const intervalMs =
        typeof opts.watch === "string"
          ? parseDurationOption(opts.watch, "--watch", { timer: true })
          : DEFAULT_WATCH_MS;
      if (opts.watch !== undefined && intervalMs < 100)
        throw new UsageError("--watch interval must be at least 100ms");
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        if (opts.watch === undefined) {
          const stats = await errand.stats();
          if (opts.json) printJson(stats);
          else {
            print(renderStats(stats));
            // A paused queue's pending jobs wait for `errand queue resume`: say so under the numbers.
            for (const p of await errand.pausedQueues())
              print(
                `queue "${p.queue}" is paused (since ${isoSeconds(p.pausedAt)}): errand queue resume ${p.queue}`,
              );
          }
          return;
        }
        await watchStats(errand, intervalMs, (stats, at) => {
          if (opts.json) print(JSON.stringify({ at, queues: stats }));
          else
            drawScreen(
              `errand stats · ${isoSeconds(at)} · every ${intervalMs} ms · Ctrl-C to stop\n\n${renderStats(stats)}`,
            );
        });
      });
    });
}

export function renderStats(stats: QueueStats[]): string {
  return stats.length === 0 ? "no jobs yet" : renderTable(stats, STATS_COLUMNS);
}

/**
 * The `--watch` hook: calls `draw` with fresh numbers every `intervalMs` until SIGINT/SIGTERM
 * (or `signal`), then resolves. A richer live view can replace `draw` without touching the loop.
 */
export async function watchStats(
  errand: Errand,
  intervalMs: number,
  draw: (stats: QueueStats[], at: Date) => void,
  signal?: AbortSignal,
): Promise<void> {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  signal?.addEventListener("abort", stop, { once: true });
  let done = false;
  void stopped.then(() => {
    done = true;
  });
  try {
    while (!done && !signal?.aborted) {
      draw(await errand.stats(), new Date());
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([stopped, new Promise<void>((r) => (timer = setTimeout(r, intervalMs)))]);
      clearTimeout(timer);
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    signal?.removeEventListener("abort", stop);
  }
}

/** On a terminal: clear and draw from the top; elsewhere (pipes, logs) print one frame after another. */
function drawScreen(text: string): void {
  if (process.stdout.isTTY) process.stdout.write(`\x1b[H\x1b[2J${text}\n`);
  else print(`${text}\n`);
}
