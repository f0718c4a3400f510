/**
 * `errand init github-actions`: writes a GitHub Actions workflow that calls the tick endpoint on
 * a schedule — the external scheduler for a host that scales to zero. The URL and the token come
 * from repository secrets; nothing secret is ever written into the file.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import { TICK_PATH } from "../http/tick.js";
import { CliError, UsageError } from "./common.js";
import { print } from "./output.js";

export const DEFAULT_WORKFLOW_PATH = ".github/workflows/errand-tick.yml";

interface InitOptions {
  every: string;
  out: string;
  force?: boolean;
}

export function registerInit(program: Command): void {
  const init = program.command("init").description("write configuration for running errand somewhere");
  init
    .command("github-actions")
    .description("write a GitHub Actions workflow that calls the tick endpoint on a schedule")
    .option(
      "--every <interval>",
      "how often: 5m to 30m dividing an hour, 1h to 12h dividing a day, or 1d",
      "15m",
    )
    .option("--out <path>", "where to write the workflow", DEFAULT_WORKFLOW_PATH)
    .option("--force", "overwrite the file if it exists")
    .addHelpText(
      "after",
      `
Then add two repository secrets (Settings → Secrets and variables → Actions):
  ERRAND_TICK_URL   the endpoint, e.g. https://example.com${TICK_PATH}
  CRON_SECRET       the same value your application has in CRON_SECRET

Examples:
  errand init github-actions
  errand init github-actions --every 5m --out .github/workflows/tick.yml`,
    )
    .action((opts: InitOptions) => {
      const cron = everyToCron(opts.every);
      const path = resolve(opts.out);
      if (existsSync(path) && !opts.force)
        throw new CliError(`${opts.out} exists; pass --force to overwrite it`);
      try {
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, githubWorkflow(cron, opts.every.trim()));
      } catch (err) {
        throw new CliError(`cannot write ${opts.out}: ${(err as Error).message}`);
      }
      print(`wrote ${opts.out}: POST ${TICK_PATH} on "${cron}" (UTC)`);
      print("next: add the repository secrets ERRAND_TICK_URL and CRON_SECRET, then commit the workflow");
    });
}

/**
 * An interval as a cron expression that fires at exactly that interval: minutes dividing an hour
 * (5m … 30m), hours dividing a day (1h … 12h), or 1d. GitHub runs nothing more often than every
 * 5 minutes, and an interval that does not divide evenly (7m, 5h) cannot be a plain cron.
 */
export function everyToCron(every: string): string {
  const text = String(every).trim();
  const match = /^(\d+)\s*(m|min|h|d)$/i.exec(text);
  if (!match)
    throw new UsageError(`--every must be an interval like 5m, 15m, 1h or 1d; got ${JSON.stringify(every)}`);
  const n = Number(match[1]);
  const unit = match[2].toLowerCase();
  const minutes = unit === "d" ? n * 1440 : unit === "h" ? n * 60 : n;
  if (minutes < 5) {
    throw new UsageError(
      `--every ${text}: GitHub Actions runs scheduled workflows at most every 5 minutes; use 5m or more`,
    );
  }
  if (minutes < 60 && 60 % minutes === 0) return `*/${minutes} * * * *`;
  if (minutes === 60) return "0 * * * *";
  if (minutes % 60 === 0 && minutes < 1440 && 24 % (minutes / 60) === 0) return `0 */${minutes / 60} * * *`;
  if (minutes === 1440) return "0 0 * * *";
  throw new UsageError(
    `--every ${text} cannot be written as a cron schedule that keeps that interval: ` +
      "use minutes dividing an hour (5m, 6m, 10m, 12m, 15m, 20m, 30m), hours dividing a day (1h, 2h, 3h, 4h, 6h, 8h, 12h) or 1d",
  );
}

export function githubWorkflow(cron: string, every: string): string {
  return `# errand tick — written by \`errand init github-actions --every ${every}\`.
#
# Calls POST ${TICK_PATH} on a schedule: due cron schedules fire and a bounded batch of jobs
# runs, for an application on a host that scales to zero (no worker runs between requests).
#
# Set two repository secrets (Settings → Secrets and variables → Actions). Neither is ever
# written into this file:
#   ERRAND_TICK_URL  the full endpoint URL, e.g. https://example.com${TICK_PATH}
#   CRON_SECRET      the same value as the application's CRON_SECRET
#
# Caveats of GitHub's scheduler:
# - The shortest interval GitHub runs is every 5 minutes.
# - Scheduled runs are often delayed at busy times (the start of every hour especially), sometimes
#   by many minutes, and some may be dropped. errand fires the slots missed meanwhile on the next
#   tick (the latest only, or all, as each schedule says) and never fires a slot twice.
# - The cron below is read in UTC.
# - Scheduled workflows pause after 60 days without repository activity (in public repositories
#   GitHub disables them); re-enable the workflow in the Actions tab, or keep the repository active.
name: errand tick

on:
  schedule:
    - cron: "${cron}"
  workflow_dispatch: {}

permissions: {}

concurrency:
  group: errand-tick
  cancel-in-progress: false

jobs:
  tick:
    runs-on: ubuntu-latest
    timeout-minutes: 5
    steps:
      - name: POST ${TICK_PATH}
        env:
          ERRAND_TICK_URL: \${{ secrets.ERRAND_TICK_URL }}
          CRON_SECRET: \${{ secrets.CRON_SECRET }}
        run: |
          if [ -z "$ERRAND_TICK_URL" ] || [ -z "$CRON_SECRET" ]; then
            echo "::error::set the repository secrets ERRAND_TICK_URL and CRON_SECRET"
            exit 1
          fi
          # The header goes through stdin, so the token never appears in a process list.
          printf 'Authorization: Bearer %s\\n' "$CRON_SECRET" |
            curl --fail-with-body --silent --show-error --max-time 120 \\
              --retry 3 --retry-all-errors --retry-delay 15 \\
              --request POST --header @- "$ERRAND_TICK_URL"
`;
}
