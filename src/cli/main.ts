#!/usr/bin/env node
/**
 * The `errand` command. Each command group lives in its own file; this one wires them up and
 * turns errors into exit codes: user errors (bad input) are one line on stderr without a stack
 * trace, exit 2 for a wrong command line and 1 otherwise; anything unexpected prints its stack
 * (also set ERRAND_DEBUG=1 to see stacks for user errors).
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { redactCredentials } from "../redact.js";
import { isUserError } from "./common.js";
import { registerDemo } from "./demo.js";
import { registerDlq } from "./dlq.js";
import { registerEnqueue } from "./enqueue.js";
import { registerInit } from "./init.js";
import { registerJobs } from "./jobs.js";
import { registerMigrate } from "./migrate.js";
import { registerQueue } from "./queue.js";
import { registerSchedule } from "./schedule.js";
import { registerServe } from "./serve.js";
import { registerStats } from "./stats.js";
import { registerTick } from "./tick.js";
import { registerWorker } from "./worker.js";

function version(): string {
  for (const path of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "errand" && pkg.version) return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return "unknown";
}

export function buildProgram(): Command {
  const program = new Command("errand")
    .description("durable background jobs on SQLite, PostgreSQL or memory")
    .version(version(), "-V, --version")
    .addOption(
      new Option(
        "--url <url>",
        "store: a SQLite file path or sqlite:<path>, postgres://…, or memory: (default $ERRAND_URL, else ./errand.db)",
      ),
    )
    .option("--schema <name>", "PostgreSQL schema for errand's tables (default errand)")
    .showSuggestionAfterError(true)
    .exitOverride()
    .addHelpText(
      "after",
      `
Exit codes: 0 success · 1 failed or refused (the message says why) · 2 wrong command line.

Quick start:
  errand demo                                   run the demo on a fresh SQLite file
  errand enqueue send-email --jobs ./jobs.js --payload '{"userId": 1}'
  errand worker --jobs ./jobs.js --concurrency emails=2
  errand jobs list --state failed
  errand stats
  errand queue pause emails`,
    );
  registerMigrate(program);
  registerWorker(program);
  registerEnqueue(program);
  registerStats(program);
  registerQueue(program);
  registerJobs(program);
  registerDlq(program);
  registerDemo(program);
  registerSchedule(program);
  registerServe(program);
  registerTick(program);
  registerInit(program);
  return program;
}

/** The code of an error the store gave (SQLite's SQLITE_…, a PostgreSQL SQLSTATE), else null. */
function storeErrorCode(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const code = (err as { code?: unknown }).code;
  // SQLSTATE classes never begin with E, which errno codes (EPERM, EBUSY) do.
  return typeof code === "string" && /^(SQLITE_[A-Z_]+|[0-9A-DF-Z][0-9A-Z]{4})$/.test(code) ? code : null;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed its message (or the help); only the exit code is ours.
      return err.exitCode === 0 ? 0 : 2;
    }
    const debug = process.env.ERRAND_DEBUG === "1";
    // Every message may quote a store URL or a driver's error about it: credentials are hidden.
    const say = (text: string) => process.stderr.write(`${redactCredentials(text)}\n`);
    if (isUserError(err)) {
      say(`errand: ${(err as Error).message}`);
      if (debug && err instanceof Error && err.stack) say(err.stack);
      return (err as { exitCode?: number }).exitCode ?? 1;
    }
    const storeCode = storeErrorCode(err);
    if (storeCode !== null) {
      // The store answered (a lock, a full disk, a dropped table): its words, not our stack.
      say(`errand: the store failed: ${(err as Error).message} (${storeCode})`);
      if (debug && (err as Error).stack) say((err as Error).stack as string);
      return 1;
    }
    say(`errand: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}

// `errand jobs list | head`: a reader that goes away ends the output quietly, as with other tools.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});

process.exitCode = await main();
