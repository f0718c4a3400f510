import { execFileSync } from "node:child_process";

/**
 * Whether the Postgres tests run. URL from ERRAND_TEST_PG_URL (default the local server).
 * With CI=true they are required: an unreachable server fails the run instead of skipping.
 */
export function postgresAvailability(): { url: string; skip: string | false } {
  const url = process.env.ERRAND_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  if (cached) return cached;
  let reachable = false;
  try {
    // A synchronous probe so test files can decide skip-or-run at definition time.
    execFileSync(process.execPath, ["-e", PROBE, url], { timeout: 30_000, stdio: "ignore" });
    reachable = true;
  } catch {
    reachable = false;
  }
  if (!reachable && process.env.CI === "true") {
    throw new Error(`CI=true but PostgreSQL is unreachable at ${url}: the Postgres tests are required in CI`);
  }
  cached = {
    url,
    skip: reachable
      ? false
      : `PostgreSQL unreachable at ${url} (set ERRAND_TEST_PG_URL); Postgres tests skipped`,
  };
  if (cached.skip) console.warn(`# SKIPPED: ${cached.skip}`);
  return cached;
}

let cached: { url: string; skip: string | false } | undefined;

const PROBE = `
const pg = require("pg");
const c = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 20000 });
c.connect().then(() => c.query("select 1")).then(() => c.end()).then(() => process.exit(0), () => process.exit(1));
`;
