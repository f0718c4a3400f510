/**
 * `errand dlq list | show | retry | discard`: the dead-letter queue is the set of failed jobs,
 * kept with their payload and every attempt. Bulk retry and discard (`--all`) need `--yes`;
 * without it they say what they would do and exit 2.
 */
import type { Command } from "commander";
import type { Errand } from "../errand.js";
import type { JobRecord } from "../job.js";
import { CliError, globals, openFromOptions, UsageError, withErrand } from "./common.js";
import { listFilter, listPage, mustGet, printPage } from "./jobs.js";
import { DLQ_COLUMNS, jobJson, print, printJson, renderJob } from "./output.js";

interface BulkCliOptions {
  all?: boolean;
  queue?: string;
  yes?: boolean;
  json?: boolean;
}

export function registerDlq(program: Command): void {
  const dlq = program
    .command("dlq")
    .description("the dead-letter queue: failed jobs, with every attempt; retry or discard them");

  dlq
    .command("list")
    .description("list failed jobs, newest first")
    .option("--queue <queue>", "only this queue")
    .option("--name <job-name>", "only jobs of this name")
    .option("--search <text>", "id equal to, or key or payload containing, this text")
    .option("--limit <n>", "at most this many (1..1000)", "50")
    .option("--cursor <cursor>", "continue after a previous page (printed at its end)")
    .option("--json", "print { jobs, nextCursor } as JSON")
    .action(
      async (
        opts: {
          queue?: string;
          name?: string;
          search?: string;
          limit: string;
          cursor?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const filter = { ...listFilter(opts), state: "failed" as const };
        await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
          printPage(await listPage(errand, filter), opts.json, cmd, DLQ_COLUMNS);
        });
      },
    );

  dlq
    .command("show")
    .description("show a failed job: payload and every attempt with its error and stack")
    .argument("<id>", "job id")
    .option("--json", "print the job as JSON")
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const job = await mustGet(errand, id);
        if (opts.json) printJson(jobJson(job));
        else {
          if (job.state !== "failed")
            print(`note: job ${id} is ${job.state}, not in the dead-letter queue\n`);
          print(renderJob(job, { stacks: true }));
        }
      });
    });

  bulkCommand(dlq, "retry", "make failed jobs pending again with a fresh attempt budget (history kept)", {
    one: async (errand, id) => {
      const job = await errand.retry(id);
      return job ? { job, text: `job ${id} is pending again (${job.name} on ${job.queue})` } : null;
    },
    all: (errand, queue) => errand.retryFailed(queue === undefined ? {} : { queue }),
    verb: "retry",
    done: "retried",
    accepts: ["failed", "cancelled"],
  });

  bulkCommand(dlq, "discard", "delete failed jobs for good", {
    one: async (errand, id) => ((await errand.discard(id)) ? { text: `job ${id} discarded` } : null),
    all: (errand, queue) => errand.discardFailed(queue === undefined ? {} : { queue }),
    verb: "discard",
    done: "discarded",
    accepts: ["failed"],
  });
}

interface BulkAction {
  one(errand: Errand, id: string): Promise<{ job?: JobRecord; text: string } | null>;
  all(errand: Errand, queue: string | undefined): Promise<number>;
  verb: string;
  done: string;
  accepts: string[];
}

function bulkCommand(dlq: Command, name: string, description: string, action: BulkAction): void {
  dlq
    .command(name)
    .description(description)
    .argument("[id...]", "job ids")
    .option("--all", "every failed job (of --queue, or of all queues)")
    .option("--queue <queue>", "with --all: only this queue")
    .option("-y, --yes", "with --all: really do it (without it, say what would happen and exit 2)")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      `\nExamples:\n  errand dlq ${name} 41 42\n  errand dlq ${name} --all --queue emails --yes`,
    )
    .action(async (ids: string[], opts: BulkCliOptions, cmd: Command) => {
      if (opts.all && ids.length > 0) throw new UsageError(`give job ids or --all, not both`);
      if (!opts.all && ids.length === 0)
        throw new UsageError(`give the ids of the jobs to ${action.verb}, or --all`);
      if (!opts.all && opts.queue !== undefined) throw new UsageError("--queue goes with --all");
      if (!opts.all && opts.yes) throw new UsageError("--yes goes with --all");
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        if (opts.all) return bulkAll(errand, opts, action);
        const problems: string[] = [];
        const done: Array<{ id: string; job?: JobRecord; text: string }> = [];
        for (const id of ids) {
          const before = await errand.getJob(id);
          if (!before) {
            problems.push(`no job with id ${id}`);
            continue;
          }
          if (!action.accepts.includes(before.state)) {
            problems.push(
              `job ${id} is ${before.state}: only ${action.accepts.join(" or ")} jobs can be ${action.done}`,
            );
            continue;
          }
          const result = await action.one(errand, id);
          if (result) done.push({ id, ...result });
          else problems.push(`job ${id} could not be ${action.done} (it changed state)`);
        }
        if (opts.json)
          printJson({
            [action.done]: done.map((d) => (d.job ? jobJson(d.job) : { id: d.id })),
            errors: problems,
          });
        else for (const d of done) print(d.text);
        if (problems.length > 0) throw new CliError(problems.join("; "));
      });
    });
}

async function bulkAll(errand: Errand, opts: BulkCliOptions, action: BulkAction): Promise<void> {
  const scope = opts.queue === undefined ? "in all queues" : `in queue ${opts.queue}`;
  if (!opts.yes) {
    const stats = await errand.stats();
    const count = stats
      .filter((s) => opts.queue === undefined || s.queue === opts.queue)
      .reduce((n, s) => n + s.failed, 0);
    throw new UsageError(
      `--all would ${action.verb} ${count} failed job${count === 1 ? "" : "s"} ${scope}; add --yes to do it`,
    );
  }
  const count = await action.all(errand, opts.queue);
  if (opts.json) printJson({ [action.done]: count });
  else print(`${action.done} ${count} failed job${count === 1 ? "" : "s"} ${scope}`);
}
