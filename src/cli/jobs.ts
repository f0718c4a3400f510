/** `errand jobs list | show | cancel`: inspect and cancel jobs. */
import type { Command } from "commander";
import { viewLinks } from "../dependencies.js";
import type { Errand } from "../errand.js";
import type { JobRecord } from "../job.js";
import type { JobFilter, JobPage } from "../store/types.js";
import {
  CliError,
  globals,
  openFromOptions,
  parseIntOption,
  parseStateOption,
  withErrand,
} from "./common.js";
import { JOB_COLUMNS, jobJson, print, printJson, renderJob, renderLinks, renderTable } from "./output.js";

export const LIST_LIMIT = { min: 1, max: 1000 };

interface ListCliOptions {
  queue?: string;
  state?: string;
  name?: string;
  search?: string;
  limit: string;
  cursor?: string;
  json?: boolean;
}

export function registerJobs(program: Command): void {
  const jobs = program.command("jobs").description("list, inspect and cancel jobs");

  jobs
    .command("list")
    .description("list jobs, newest first")
    .option("--queue <queue>", "only this queue")
    .option("--state <state>", "only this state: waiting, pending, running, completed, failed or cancelled")
    .option("--name <job-name>", "only jobs of this name")
    .option("--search <text>", "id equal to, or key or payload containing, this text")
    .option("--limit <n>", "at most this many (1..1000)", "50")
    .option("--cursor <cursor>", "continue after a previous page (printed at its end)")
    .option("--json", "print { jobs, nextCursor } as JSON")
    .action(async (opts: ListCliOptions, cmd: Command) => {
      const filter = listFilter(opts);
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        printPage(await listPage(errand, filter), opts.json, cmd);
      });
    });

  jobs
    .command("show")
    .description("show one job: fields, payload, result, every attempt, and why a pending one waits")
    .argument("<id>", "job id")
    .option("--json", "print the job as JSON")
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const job = await mustGet(errand, id);
        // A pending job says why it waits (waiting.ts): paused queue, not due, no worker, the line.
        const waiting = (await errand.whyWaiting(job.id)) ?? [];
        // Its dependencies and dependents (a flow's edges), without their results.
        const links = await errand.getJobLinks(job.id);
        if (opts.json) printJson({ ...jobJson(job), waiting, ...viewLinks(links) });
        else
          print(
            [
              renderJob(job),
              ...renderLinks(links),
              ...(waiting.length > 0 ? [""] : []),
              ...waiting.map((r) => `waiting: ${r.message}`),
            ].join("\n"),
          );
      });
    });

  jobs
    .command("cancel")
    .description("cancel jobs: a pending job at once, a running one at its next heartbeat")
    .argument("<id...>", "job ids")
    .option("--json", "print the jobs as JSON")
    .action(async (ids: string[], opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const results: JobRecord[] = [];
        const problems: string[] = [];
        for (const id of ids) {
          const before = await errand.getJob(id);
          if (!before) {
            problems.push(`no job with id ${id}`);
            continue;
          }
          if (before.state !== "waiting" && before.state !== "pending" && before.state !== "running") {
            problems.push(
              `job ${id} is ${before.state}: only waiting, pending or running jobs can be cancelled`,
            );
            continue;
          }
          const job = await errand.cancel(id);
          if (job) results.push(job);
          else problems.push(`job ${id} could not be cancelled (it changed state)`);
        }
        if (opts.json) printJson(results.map(jobJson));
        else {
          for (const job of results) {
            print(
              job.state === "cancelled"
                ? `job ${job.id} cancelled`
                : `job ${job.id} is ${job.state}: cancel requested, its worker stops it at the next heartbeat`,
            );
          }
        }
        if (problems.length > 0) throw new CliError(problems.join("; "));
      });
    });
}

export function listFilter(opts: ListCliOptions): JobFilter {
  const filter: JobFilter = { limit: parseIntOption(opts.limit, "--limit", LIST_LIMIT) };
  if (opts.queue !== undefined) filter.queue = opts.queue;
  if (opts.state !== undefined) filter.state = parseStateOption(opts.state);
  if (opts.name !== undefined) filter.name = opts.name;
  if (opts.search !== undefined) filter.search = opts.search;
  if (opts.cursor !== undefined) filter.cursor = opts.cursor;
  return filter;
}

export async function listPage(errand: Errand, filter: JobFilter): Promise<JobPage> {
  // listFilter refused a bad --limit already (exit 2); an invalid cursor is the store's
  // ValidationError naming it (exit 1).
  return errand.listJobs(filter);
}

export function printPage(
  page: JobPage,
  json: boolean | undefined,
  cmd: Command,
  columns = JOB_COLUMNS,
): void {
  if (json) {
    printJson({ jobs: page.jobs.map(jobJson), nextCursor: page.nextCursor });
    return;
  }
  if (page.jobs.length === 0) {
    print("no jobs match");
    return;
  }
  print(renderTable(page.jobs, columns));
  if (page.nextCursor)
    print(
      `(more: run \`errand ${cmd.parent?.name()} ${cmd.name()}\` again with --cursor ${page.nextCursor})`,
    );
}

export async function mustGet(errand: Errand, id: string): Promise<JobRecord> {
  const job = await errand.getJob(id);
  if (!job) throw new CliError(`no job with id ${id}`);
  return job;
}
