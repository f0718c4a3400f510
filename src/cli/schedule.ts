/**
 * `errand schedule list | add | remove | pause | resume | run`: schedules kept in the store by
 * hand (source "cli"); pause, resume and run work on every schedule, from code or by hand.
 * Schedules defined in code (`errand.schedule(...)`) are listed too; they are replaced at every
 * sync, so remove or change them in code.
 */
import { type Command, Option } from "commander";
import type { Errand } from "../errand.js";
import { ValidationError } from "../errors.js";
import type { AnyJobDefinition } from "../job.js";
import { DEFAULT_PAYLOAD_LIMIT, normalizePayload } from "../payload.js";
import { checkSchedule } from "../schedule/row.js";
import type { MissedPolicy, ScheduleRecord } from "../store/types.js";
import {
  CliError,
  globals,
  openFromOptions,
  parseIntOption,
  parseJsonOption,
  UsageError,
  withErrand,
} from "./common.js";
import { loadJobs } from "./load-jobs.js";
import { type Column, isoSeconds, print, printJson, renderTable, truncate } from "./output.js";

const NEVER_YEAR = 9999;

const SCHEDULE_COLUMNS: Column<ScheduleRecord>[] = [
  { header: "NAME", value: (s) => s.name },
  { header: "CRON", value: (s) => s.cron },
  { header: "TIMEZONE", value: (s) => s.timezone },
  { header: "JOB", value: (s) => s.jobName },
  { header: "QUEUE", value: (s) => s.queue },
  { header: "MISSED", value: (s) => s.missed },
  { header: "SOURCE", value: (s) => s.source },
  {
    header: "NEXT RUN (UTC)",
    value: (s) => (s.nextRunAt.getUTCFullYear() >= NEVER_YEAR ? "never" : isoSeconds(s.nextRunAt)),
  },
  { header: "LAST SLOT", value: (s) => isoSeconds(s.lastSlot) },
  { header: "PAUSED", value: (s) => (s.pausedAt ? `since ${isoSeconds(s.pausedAt)}` : "-") },
  { header: "PAYLOAD", value: (s) => truncate(JSON.stringify(s.payload), 40) },
];

interface AddOptions {
  payload?: string;
  timezone: string;
  missed: string;
  priority?: string;
  jobs?: string;
  queue?: string;
  json?: boolean;
}

export function registerSchedule(program: Command): void {
  const schedule = program
    .command("schedule")
    .description("cron schedules: list, add by hand, remove, pause, resume, run now")
    .addHelpText(
      "after",
      `
Each slot of a schedule enqueues its job once, with the key cron:<name>:<slot time>, however many
workers and ticks run. Times are UTC unless a schedule names a time zone.

Examples:
  errand schedule list
  errand schedule add nightly-report "0 3 * * *" build-report --jobs ./jobs.js --payload '{"kind":"daily"}'
  errand schedule add standup "0 9 * * 1-5" remind --queue default --timezone Europe/Berlin
  errand schedule remove nightly-report
  errand schedule pause nightly-report       # fires no slot until resumed
  errand schedule resume nightly-report      # then follows --missed: the latest missed slot, or all
  errand schedule run nightly-report         # enqueue its job now; its next slot stays`,
    );

  schedule
    .command("list")
    .description("every schedule in the store, with its next run")
    .option("--json", "print the schedules as JSON")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const rows = await errand.listSchedules();
        if (opts.json) printJson(rows);
        else print(rows.length === 0 ? "no schedules" : renderTable(rows, SCHEDULE_COLUMNS));
      });
    });

  schedule
    .command("add")
    .description("add (or replace) a schedule by hand; it stays until `errand schedule remove`")
    .argument("<name>", "schedule name (letters, digits, _ . : -)")
    .argument(
      "<cron>",
      'cron expression: 5 fields "minute hour day-of-month month day-of-week", 6 with seconds first, or @daily etc.',
    )
    .argument("<job>", "name of the job to enqueue at each slot")
    .option("--payload <json>", "the job's payload as JSON", "{}")
    .option("--timezone <zone>", "IANA time zone the cron fields are read in", "UTC")
    .addOption(
      new Option(
        "--missed <policy>",
        "after downtime, fire only the latest missed slot, or all of them",
      ).default("latest"),
    )
    .option("--priority <n>", "priority of the enqueued jobs (default: the job's own, else 0)")
    .option(
      "-j, --jobs <module>",
      "jobs module: checks the job exists and the payload fits its schema, and gives its queue and flow key (default $ERRAND_JOBS)",
    )
    .option("-q, --queue <name>", "the job's queue, when no jobs module is given")
    .option("--json", "print the stored schedule as JSON")
    .action(async (name: string, cron: string, job: string, opts: AddOptions, cmd: Command) => {
      const stored = await addSchedule(name, cron, job, opts, cmd);
      if (opts.json) printJson(stored);
      else {
        const when = stored.nextRunAt.getUTCFullYear() >= NEVER_YEAR ? "never" : isoSeconds(stored.nextRunAt);
        print(
          `schedule "${stored.name}" added: ${stored.cron} (${stored.timezone}) → ${stored.jobName} on queue ${stored.queue}; next run ${when}`,
        );
      }
    });

  schedule
    .command("remove")
    .description("remove a schedule (one defined in code comes back at the next sync)")
    .argument("<name>", "schedule name")
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const row = await errand.removeSchedule(name);
        if (!row) {
          throw new CliError(`no schedule named ${JSON.stringify(name)} (see \`errand schedule list\`)`);
        }
        print(`schedule "${name}" removed`);
        if (row.source === "code") {
          process.stderr.write(
            `errand: note: "${name}" is defined in code; it is added again when a worker or tick of that code syncs. Remove it from the code.\n`,
          );
        }
      });
    });

  registerPauseAndRun(schedule);
}

function registerPauseAndRun(schedule: Command): void {
  for (const paused of [true, false]) {
    schedule
      .command(paused ? "pause" : "resume")
      .description(
        paused
          ? "pause a schedule: it fires no slot until resumed (every worker and tick obeys)"
          : "resume a paused schedule: a slot missed meanwhile fires by its missed policy, once",
      )
      .argument("<name>", "schedule name")
      .option("--json", "print the schedule as JSON")
      .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
        await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
          // Read first only to say what changed, as `queue resume` says "was not paused".
          const was = (await errand.listSchedules()).find((s) => s.name === name)?.pausedAt ?? null;
          const row = await errand.setSchedulePaused(name, paused);
          if (opts.json) printJson(row);
          else if (paused)
            print(
              `schedule "${name}" ${was ? "was already paused" : "paused"} (since ${isoSeconds(row.pausedAt)})`,
            );
          else print(was ? `schedule "${name}" resumed` : `schedule "${name}" was not paused`);
        });
      });
  }

  schedule
    .command("run")
    .description("enqueue a schedule's job now (paused or not); its next slot does not move")
    .argument("<name>", "schedule name")
    .option("--json", "print { schedule, jobId, created } as JSON")
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      await withErrand(await openFromOptions(globals(cmd), { mustExist: true }), async (errand) => {
        const fired = await errand.runScheduleNow(name);
        if (opts.json) printJson({ schedule: name, jobId: fired.jobId, created: fired.created });
        else print(`schedule "${name}": job ${fired.jobId} enqueued`);
      });
    });
}

/** Validates everything first (exit 2 for a bad argument, nothing stored), then upserts. */
async function addSchedule(
  name: string,
  cron: string,
  jobName: string,
  opts: AddOptions,
  cmd: Command,
): Promise<ScheduleRecord> {
  if (opts.missed !== "latest" && opts.missed !== "all") {
    throw new UsageError(`--missed must be "latest" or "all"; got ${JSON.stringify(opts.missed)}`);
  }
  const priority =
    opts.priority === undefined
      ? undefined
      : parseIntOption(opts.priority, "--priority", { min: -1_000_000, max: 1_000_000 });
  let checked: ReturnType<typeof checkSchedule>;
  try {
    checked = checkSchedule(name, cron, {
      timezone: opts.timezone,
      missed: opts.missed as MissedPolicy,
      priority,
    });
  } catch (err) {
    if (err instanceof ValidationError) throw new UsageError(err.message);
    throw err;
  }
  const raw = parseJsonOption(opts.payload ?? "{}", "--payload");
  let payload: unknown;
  try {
    payload = normalizePayload(raw, DEFAULT_PAYLOAD_LIMIT, "--payload");
  } catch (err) {
    throw new UsageError((err as Error).message);
  }

  const modulePath = opts.jobs ?? process.env.ERRAND_JOBS;
  let queue = opts.queue;
  let known: AnyJobDefinition | undefined;
  let defaultPriority = 0;
  if (modulePath) {
    const defs = await loadJobs(modulePath);
    const def = defs.find((d) => d.name === jobName);
    if (!def) {
      throw new UsageError(
        `unknown job "${jobName}"; the jobs module's jobs are: ${defs
          .map((d) => d.name)
          .sort()
          .join(", ")}`,
      );
    }
    if (queue !== undefined && queue !== def.queue) {
      throw new UsageError(`--queue ${queue}: job "${jobName}" runs on queue "${def.queue}"`);
    }
    queue = def.queue;
    defaultPriority = def.priority;
    known = def;
    const result = await def.schema["~standard"].validate(payload);
    if (result.issues) {
      throw new CliError(
        `--payload does not match the schema of job "${jobName}": ${result.issues.map((i) => i.message).join("; ")}`,
      );
    }
  } else if (queue === undefined) {
    throw new UsageError(
      `give --jobs <module> (to check job "${jobName}" and its payload) or --queue <name> (the job's queue)`,
    );
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(queue ?? ""))
    throw new UsageError(`--queue: invalid queue name ${JSON.stringify(queue)}`);

  return withErrand(await openFromOptions(globals(cmd)), (errand: Errand) => {
    // Known to the errand, the job gives the schedule its flow key (scheduler.ts addByHand).
    if (known) errand.register(known);
    return errand.addSchedule({
      name: checked.name,
      cron: checked.cron.expression,
      timezone: checked.cron.timezone,
      missed: checked.missed,
      jobName,
      queue: queue as string,
      payload,
      priority: checked.priority ?? defaultPriority,
    });
  });
}
