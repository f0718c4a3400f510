/**
 * The package as a user gets it: `npm pack`, then in an empty folder `npm install <tarball> zod`
 * and the README's five-minute path exactly as written — its `app.mjs`, `node app.mjs`, then
 * `npx errand jobs list` — on SQLite and on PostgreSQL.
 *
 * Installing stays off the network where it can: `--offline` from the npm cache that `npm ci`
 * filled; if the cache lacks something (npm ci caches tarballs, not the registry's package
 * documents a fresh install resolves ranges with), `--prefer-offline`, which asks the registry
 * only for what is missing. Install scripts are skipped and better-sqlite3's native binary is
 * copied from this checkout's node_modules (same version, checked): compiling it from source
 * took 1 min 36 s of CPU on this machine, and it is better-sqlite3's build, not errand's.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { postgresUrl, skipUnlessPostgres } from "./helpers/postgres.js";

const exec = promisify(execFile);
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const pgSkip = await skipUnlessPostgres();

let dir: string;
let app: string;
/** The environment of the user's shell: nothing of errand's or the test runner's. */
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("ERRAND_") && !k.startsWith("NODE_TEST")),
);

function npm(args: string[], cwd: string) {
  return exec("npm", args, { cwd, env: userEnv, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
}

/** The README's code block that starts with `// app.mjs`. */
function readmeApp(): string {
  const block = /```js\n(\/\/ app\.mjs\n[\s\S]*?)```/.exec(README);
  assert.ok(block, "the README has no ```js block starting with // app.mjs");
  return block[1];
}

before(
  async () => {
    dir = mkdtempSync(join(tmpdir(), "errand-package-"));
    const { stdout } = await npm(["pack", "--pack-destination", dir, "--silent"], ROOT);
    const tarball = join(dir, stdout.trim().split("\n").pop() ?? "");
    app = join(dir, "app");
    mkdirSync(app);
    const install = (mode: string) =>
      npm(["install", mode, "--ignore-scripts", "--no-audit", "--no-fund", tarball, "zod"], app);
    try {
      await install("--offline");
    } catch (err) {
      if (!/ENOTCACHED/.test(String((err as { stderr?: string }).stderr ?? err))) throw err;
      await install("--prefer-offline");
    }
    const version = (path: string) => (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
    const ours = join(ROOT, "node_modules/better-sqlite3");
    const theirs = join(app, "node_modules/better-sqlite3");
    assert.equal(version(join(theirs, "package.json")), version(join(ours, "package.json")));
    mkdirSync(join(theirs, "build/Release"), { recursive: true });
    copyFileSync(
      join(ours, "build/Release/better_sqlite3.node"),
      join(theirs, "build/Release/better_sqlite3.node"),
    );
    writeFileSync(join(app, "app.mjs"), readmeApp());
  },
  { timeout: 600_000 },
);

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `node app.mjs` and `npx errand jobs list`, as the README says, with `env` added. */
async function fiveMinutes(env: Record<string, string>, listArgs: string[]) {
  const run = await exec(process.execPath, ["app.mjs"], {
    cwd: app,
    env: { ...userEnv, ...env },
    timeout: 60_000,
  });
  assert.match(run.stdout, /^enqueued job 1$/m);
  assert.match(run.stdout, /^job 1 completed: \{"sent":true\}$/m);
  const list = await exec("npx", ["errand", "jobs", "list", ...listArgs], {
    cwd: app,
    env: userEnv,
    timeout: 60_000,
  });
  assert.match(list.stdout, /send-email/);
  assert.match(list.stdout, /completed/);
  return list;
}

test("the packed package installs in an empty folder and the README's app.mjs runs on SQLite", async () => {
  assert.ok(README.includes("\nnode app.mjs "), "the README runs `node app.mjs`");
  assert.ok(README.includes("\nnpx errand jobs list "), "the README runs `npx errand jobs list`");
  await fiveMinutes({}, []);
  // The default file, in the folder the user ran it in.
  assert.ok(readFileSync(join(app, "errand.db")).length > 0);
});

test("the same app.mjs on PostgreSQL, with the README's ERRAND_URL form", { skip: pgSkip }, async () => {
  assert.match(README, /^ERRAND_URL=postgres:\/\/\S+ node app\.mjs$/m);
  // A database of its own (the README's is `postgres`; the shared test server keeps it clean).
  const database = `errand_readme_${process.pid}`;
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
    const url = new URL(postgresUrl());
    url.pathname = `/${database}`;
    await fiveMinutes({ ERRAND_URL: url.toString() }, ["--url", url.toString()]);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
});

test("errand/testing resolves from the installed package: a job retried on its fake clock, no waiting", async () => {
  writeFileSync(
    join(app, "testing.mjs"),
    `import { defineJob } from "errand";
import { createTestErrand } from "errand/testing";
import { z } from "zod";

const t = await createTestErrand({ now: "2026-01-01T00:00:00Z", jitter: false });
let runs = 0;
const flaky = defineJob({
  name: "flaky",
  schema: z.object({}),
  backoff: { base: "1h", max: "1d" },
  run() {
    if (++runs < 3) throw new Error("not yet");
  },
});
await t.errand.enqueue(flaky, {});
await t.drain({ untilIdle: true });
t.expectEnqueued(flaky, undefined, { count: 1 });
console.log(runs, t.clock.now().toISOString());
await t.close();
`,
  );
  const { stdout } = await exec(process.execPath, ["testing.mjs"], {
    cwd: app,
    env: userEnv,
    timeout: 60_000,
  });
  // Retried after 1 h, then after 2 h more: the third run at 03:00 on the fake clock.
  assert.equal(stdout.trim(), "3 2026-01-01T03:00:00.000Z");
});
