/** `errand tick`: what POST /api/cron/tick does, from the command line (a system cron, a CI job). */
import type { Command } from "commander";
import { runTick } from "../schedule/tick.js";
import {
  cliLogger,
  collect,
  globals,
  openFromOptions,
  parseDurationOption,
  parseIntOption,
  UsageError,
  withErrand,
} from "./common.js";
import { loadJobs } from "./load-jobs.js";
import { print, printJson } from "./output.js";

export const MAX_TICK_LIMIT = 1000;

interface TickCliOptions {
  jobs?: string;
  limit: string;
  timeBudget: string;
  queue?: string[];
  json?: boolean;
}

export function registerTick(program: Command): void {
  program
    .command("tick")
    .description("fire due schedules, then run a bounded batch of due jobs, and print a summary")
    .option(
      "-j, --jobs <module>",
      "module exporting the job definitions (default $ERRAND_JOBS); without it only schedules fire",
    )
    .option("--limit <n>", `most jobs to run, 1 to ${MAX_TICK_LIMIT}`, "100")
    .option("--time-budget <duration>", "claim no job after this long (running ones may finish)", "10s")
    .option("-q, --queue <name>", "process only this queue (repeatable, or comma-separated)", collect)
    .option("--json", "print the summary as JSON (the endpoint's answer)")
    .addHelpText(
      "after",
      `
Examples:
  errand tick --jobs ./dist/jobs.js
  */5 * * * * cd /srv/app && npx errand tick --jobs ./dist/jobs.js --limit 500   (crontab)`,
    )
    .action(async (opts: TickCliOptions, cmd: Command) => {
      const limit = parseIntOption(opts.limit, "--limit", { min: 1, max: MAX_TICK_LIMIT });
      const timeBudget = parseDurationOption(opts.timeBudget, "--time-budget", { timer: true });
      const modulePath = opts.jobs ?? process.env.ERRAND_JOBS;
      const jobs = modulePath ? await loadJobs(modulePath) : [];
      const queues = (opts.queue ?? [])
        .flatMap((q) => q.split(","))
        .map((q) => q.trim())
        .filter(Boolean);
      const errand = await openFromOptions(globals(cmd), {
        jobs,
        logger: opts.json ? undefined : await cliLogger(),
      });
      await withErrand(errand, async () => {
        for (const q of queues) {
          if (!errand.queueNames.includes(q)) {
            throw new UsageError(
              `--queue: unknown queue "${q}"; the jobs module's queues are: ${errand.queueNames.join(", ") || "(none)"}`,
            );
          }
        }
        const summary = await runTick(errand, {
          limit,
          timeBudget,
          queues: queues.length > 0 ? queues : undefined,
        });
        if (opts.json) printJson(summary);
        else
          print(
            `schedules fired ${summary.schedulesFired} · claimed ${summary.claimed} · completed ${summary.completed} · ` +
              `retried ${summary.retried} · failed ${summary.failed} · still due ${summary.stillDue} · ${summary.durationMs} ms`,
          );
      });
    });
}
