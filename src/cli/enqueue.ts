/** `errand enqueue <job-name>`: store one job, validated against its definition's schema. */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import type { EnqueueOptions } from "../errand.js";
import { MAX_ATTEMPTS_RANGE, PRIORITY_RANGE } from "../job.js";
import {
  CliError,
  globals,
  openFromOptions,
  parseDurationOption,
  parseIntOption,
  parseIsoOption,
  parseJsonOption,
  UsageError,
  withErrand,
} from "./common.js";
import { jobsModuleOption, loadJobs } from "./load-jobs.js";
import { JOB_COLUMNS, jobJson, print, printJson, renderTable } from "./output.js";

interface EnqueueCliOptions {
  jobs?: string;
  payload: string;
  priority?: string;
  delay?: string;
  runAt?: string;
  key?: string;
  maxAttempts?: string;
  json?: boolean;
}

export function registerEnqueue(program: Command): void {
  program
    .command("enqueue")
    .description("store a job; its payload is checked against the job's schema")
    .argument("<job-name>", "name of a job defined in the jobs module")
    .option(
      "-j, --jobs <module>",
      "module exporting the job definitions (.js, .mjs or .ts); default $ERRAND_JOBS",
    )
    .option("-p, --payload <json>", "the payload as JSON, or @file to read it from a file", "{}")
    .option(
      "--priority <n>",
      `higher runs first (integer ${PRIORITY_RANGE.min}..${PRIORITY_RANGE.max}); default the job's`,
    )
    .option("--delay <duration>", "run no earlier than this from now, e.g. 30s, 5m, 2h")
    .option("--run-at <iso-time>", "run no earlier than this ISO 8601 time, e.g. 2026-01-31T09:00:00Z")
    .option(
      "--key <key>",
      "idempotency key: if a job of this queue has it, that job is returned and nothing is stored",
    )
    .option(
      "--max-attempts <n>",
      `executions in all, the first included (${MAX_ATTEMPTS_RANGE.min}..${MAX_ATTEMPTS_RANGE.max}); default the job's`,
    )
    .option("--json", "print the job as JSON")
    .addHelpText(
      "after",
      `
Examples:
  errand enqueue send-email --jobs ./dist/jobs.js --payload '{"userId": 101}' --priority 10
  errand enqueue nightly-report --jobs ./jobs.ts --payload '{}' --run-at 2026-01-31T02:00:00Z --key report-2026-01-31`,
    )
    .action(async (name: string, opts: EnqueueCliOptions, cmd: Command) => {
      // Everything the command line says is checked before the store is opened.
      const payload = parseJsonOption(await payloadText(opts.payload), "--payload");
      const options: EnqueueOptions = {};
      if (opts.priority !== undefined)
        options.priority = parseIntOption(opts.priority, "--priority", PRIORITY_RANGE);
      if (opts.maxAttempts !== undefined) {
        options.maxAttempts = parseIntOption(opts.maxAttempts, "--max-attempts", MAX_ATTEMPTS_RANGE);
      }
      if (opts.delay !== undefined && opts.runAt !== undefined) {
        throw new UsageError("give either --delay or --run-at, not both");
      }
      if (opts.delay !== undefined) options.delay = parseDurationOption(opts.delay, "--delay");
      if (opts.runAt !== undefined) options.runAt = parseIsoOption(opts.runAt, "--run-at");
      if (opts.key !== undefined) {
        if (opts.key.length === 0 || opts.key.length > 512)
          throw new UsageError("--key must be 1 to 512 characters");
        options.key = opts.key;
      }
      const jobs = await loadJobs(jobsModuleOption(opts.jobs));
      const def = jobs.find((j) => j.name === name);
      if (!def) {
        const known = jobs.map((j) => j.name).sort();
        throw new UsageError(`unknown job "${name}"; the jobs module defines: ${known.join(", ")}`);
      }
      const errand = await openFromOptions(globals(cmd), { jobs });
      await withErrand(errand, async () => {
        const job = await errand.enqueue(def.name, payload as never, options);
        if (opts.json) {
          printJson({ ...jobJson(job), created: job.created });
          return;
        }
        print(renderTable([job], JOB_COLUMNS));
        print(
          job.created
            ? `enqueued job ${job.id} (${job.name} on queue ${job.queue})`
            : `job ${job.id} already has key ${JSON.stringify(job.key)} on queue ${job.queue}: nothing new was stored`,
        );
      });
    });
}

/**
 * `--payload @file` reads the JSON from a file (payloads larger than a command line allows).
 * The file must be UTF-8: decoding it leniently would store U+FFFD in place of the bad bytes
 * and lose what they meant (the HTTP API refuses such a body the same way).
 */
async function payloadText(value: string): Promise<string> {
  if (!value.startsWith("@")) return value;
  const path = value.slice(1);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new CliError(
      `cannot read --payload file ${path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`,
    );
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new CliError(
      `--payload file ${path} is not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(bytes)}): save it as UTF-8`,
    );
  }
}

/** The offset of the first byte that is not part of a valid UTF-8 sequence. */
function firstInvalidUtf8(bytes: Buffer): number {
  // A lenient decode puts U+FFFD where the bad bytes were; one encoded as EF BF BD was real.
  const text = bytes.toString("utf8");
  for (let i = text.indexOf("\uFFFD"); i >= 0; i = text.indexOf("\uFFFD", i + 1)) {
    const offset = Buffer.byteLength(text.slice(0, i));
    if (!(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd)) return offset;
  }
  return bytes.length;
}
