/**
 * The first minutes with the CLI (issue 14): what a worker and `serve` say at start, and the
 * mistakes a new user makes — a bare number for a duration, an unknown log level, a payload file
 * that is not UTF-8, a password in a Postgres URL, a mistyped --schema. Real processes on
 * temporary SQLite files and a real PostgreSQL.
 */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import pg from "pg";
import { postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { exitOf, FIXTURE_JOBS, hasStack, run, scratch, start, waitFor } from "./helpers.js";

const jobs = ["--jobs", FIXTURE_JOBS];
const pgSkip = await skipUnlessPostgres();
const PG = postgresUrl();

/** The Postgres test URL with a password put in it `how`: in the userinfo or as a parameter. */
function withPassword(how: "userinfo" | "param", password: string): string {
  const url = new URL(PG);
  if (how === "userinfo") url.password = password;
  else url.searchParams.set("password", password);
  return url.toString();
}

async function schemaExists(schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

test("a worker without --url or ERRAND_URL says it uses the default file, and where it is", async () => {
  const s = scratch();
  try {
    const w = start(["worker", ...jobs], {}, { cwd: s.dir });
    await waitFor("the start-up line", () => /worker started/.test(w.stderr()), 30_000);
    w.child.kill("SIGTERM");
    const result = await exitOf(w);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /no --url or ERRAND_URL: using the default SQLite file/);
    assert.ok(result.stderr.includes(join(s.dir, "errand.db")), result.stderr);
    assert.ok(existsSync(join(s.dir, "errand.db")));
  } finally {
    s.cleanup();
  }
});

test("a worker logs the store it opened, with the password hidden", { skip: pgSkip }, async () => {
  const schema = `errand_t_startup_${process.pid}`;
  const secret = "pw-never-shown-7f3a";
  try {
    const w = start(["worker", ...jobs, "--url", withPassword("userinfo", secret), "--schema", schema]);
    await waitFor("the start-up line", () => /worker started/.test(w.stderr()), 30_000);
    w.child.kill("SIGTERM");
    const result = await exitOf(w);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /postgres:\/\/postgres:\*\*\*@/);
    assert.match(result.stderr, new RegExp(`"schema":"${schema}"`));
    assert.ok(!result.stderr.includes(secret), result.stderr);
  } finally {
    await dropSchema(schema);
  }
});

test("a password in a Postgres URL never reaches an error message, in any form", async () => {
  const secret = "hunter2-never-shown";
  const urls = [
    `postgres://someone:${secret}@127.0.0.1:1/nothing`,
    `postgres://someone@127.0.0.1:1/nothing?password=${secret}`,
    `postgres://someone@127.0.0.1:1/nothing?sslmode=disable&password=${secret}&connect_timeout=2`,
    `postgresql://127.0.0.1:1/nothing?user=x&sslpassword=${secret}`,
  ];
  for (const url of urls) {
    // The worker waits for an unreachable store (--wait-for-store, default forever): bounded here,
    // so its waiting lines are checked for the secret too before it gives up.
    for (const args of [["stats"], ["migrate"], ["worker", "--wait-for-store", "1s", ...jobs]]) {
      const result = await run([...args, "--url", url], { ERRAND_DEBUG: "1" });
      assert.equal(result.code, 1, `${args[0]} ${url}: ${result.stderr}`);
      assert.match(result.stderr, /cannot open the errand store/);
      assert.ok(!`${result.stdout}${result.stderr}`.includes(secret), `${args[0]} ${url}:\n${result.stderr}`);
    }
  }
});

test("a read command with a mistyped --schema on Postgres is an error and creates nothing", {
  skip: pgSkip,
}, async () => {
  const schema = `errand_t_typo_${process.pid}`;
  try {
    for (const args of [["stats"], ["jobs", "list"], ["dlq", "list"], ["schedule", "list"]]) {
      const result = await run([...args, "--url", PG, "--schema", schema]);
      assert.equal(result.code, 1, `${args.join(" ")}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, new RegExp(`no errand schema "${schema}"`));
      assert.match(result.stderr, /errand migrate/);
      assert.ok(!hasStack(result.stderr));
      assert.equal(await schemaExists(schema), false, `${args.join(" ")} created the schema`);
    }
    // `migrate` creates it; then the read commands work.
    assert.equal((await run(["migrate", "--url", PG, "--schema", schema])).code, 0);
    const stats = await run(["stats", "--url", PG, "--schema", schema]);
    assert.equal(stats.code, 0, stats.stderr);
  } finally {
    await dropSchema(schema);
  }
});

test("ERRAND_LOG_LEVEL=verbose is refused with the list of levels, not a crash inside pino", async () => {
  const result = await run(["worker", ...jobs, "--url", "memory:"], { ERRAND_LOG_LEVEL: "verbose" });
  assert.equal(result.code, 1, result.stderr);
  assert.match(
    result.stderr,
    /ERRAND_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; got "verbose"/,
  );
  assert.ok(!hasStack(result.stderr), result.stderr);
});

test("a duration on the command line needs a unit: --delay 5 is refused, --delay 5s is 5 seconds", async () => {
  const s = scratch();
  try {
    const url = ["--url", s.db];
    const bare = await run(["enqueue", "echo", ...jobs, ...url, "--payload", '{"text":"x"}', "--delay", "5"]);
    assert.equal(bare.code, 2, bare.stderr);
    assert.match(bare.stderr, /--delay needs a unit, like 5s or 5m \(a bare number is ambiguous\); got "5"/);
    assert.equal(existsSync(s.db), false, "nothing stored");
    const worker = await run(["worker", ...jobs, ...url, "--shutdown-timeout", "30"]);
    assert.equal(worker.code, 2);
    assert.match(worker.stderr, /--shutdown-timeout needs a unit/);
    const ok = await run([
      "enqueue",
      "echo",
      ...jobs,
      ...url,
      "--payload",
      '{"text":"x"}',
      "--delay",
      "5s",
      "--json",
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    const inMs = new Date(JSON.parse(ok.stdout).runAt).getTime() - Date.now();
    assert.ok(inMs > 3_000 && inMs <= 5_000, `--delay 5s: runAt in ${inMs} ms`);
  } finally {
    s.cleanup();
  }
});

test("--payload @file refuses a file that is not UTF-8, naming the byte, and stores nothing", async () => {
  const s = scratch();
  try {
    const file = join(s.dir, "payload.json");
    // {"text":"caf<E9>"}: Latin-1, not UTF-8.
    writeFileSync(file, Buffer.concat([Buffer.from('{"text":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]));
    const result = await run(["enqueue", "echo", ...jobs, "--url", s.db, "--payload", `@${file}`]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /--payload file .*payload\.json is not valid UTF-8 \(first bad byte at offset 12\)/,
    );
    assert.equal(existsSync(s.db), false, "nothing stored");
  } finally {
    s.cleanup();
  }
});

test("serve without tokens says at start what is served and what is off, and why", async () => {
  const w = start(["serve", "--url", "memory:", "--port", "0"]);
  try {
    await waitFor("the serving line", () => /serving on/.test(w.stdout()), 30_000);
    await waitFor("the tick line", () => /tick endpoint/.test(w.stdout()), 5_000);
    const out = w.stdout();
    assert.match(out, /dashboard, API and \/metrics: off — ERRAND_DASHBOARD_TOKEN is not set/);
    assert.match(out, /tick endpoint .*: off — CRON_SECRET is not set/);
  } finally {
    w.child.kill("SIGTERM");
    await exitOf(w);
  }
  const on = start(["serve", "--url", "memory:", "--port", "0"], {
    ERRAND_DASHBOARD_TOKEN: "d".repeat(40),
    CRON_SECRET: "c".repeat(40),
  });
  try {
    await waitFor("the tick line", () => /tick endpoint/.test(on.stdout()), 30_000);
    assert.match(on.stdout(), /dashboard, API and \/metrics: on/);
    assert.match(on.stdout(), /tick endpoint .*: on/);
  } finally {
    on.child.kill("SIGTERM");
    await exitOf(on);
  }
});

test("serve refuses a dashboard token shorter than 32 characters beyond loopback", async () => {
  const result = await run(["serve", "--url", "memory:", "--host", "0.0.0.0", "--port", "0"], {
    ERRAND_DASHBOARD_TOKEN: "short-token",
  });
  assert.equal(result.code, 1, result.stderr);
  assert.match(
    result.stderr,
    /ERRAND_DASHBOARD_TOKEN is 11 characters; beyond 127\.0\.0\.1 it must be at least 32/,
  );
});
