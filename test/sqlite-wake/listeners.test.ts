/**
 * How a SQLite store learns of other connections' commits: the watch on the database's directory
 * (src/store/sqlite/watch.ts) wakes its listeners — for another connection, another process,
 * rollback-journal mode, and its own commits — and exists only while someone listens.
 *
 * Each test gets its own file under os.tmpdir(). The safety-net poll is set to a minute wherever a
 * wake-up must come from the watch, so a wake-up that arrives within the (generous) wait cannot be
 * the poll's.
 *
 *   node --import tsx --test test/sqlite-wake/listeners.test.ts
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import fs from "node:fs";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import Database from "better-sqlite3";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { connection, fresh, job, ROOT, STORE_MODULE, tempPath } from "../helpers/sqlite.js";
import { sleep, within } from "../helpers/wait.js";
import { commitOn, NO_POLL, spyOnWatch, WAIT_MS, wakes } from "./setup.js";

// ── the watch wakes listeners ──────────────────────────────────────────────────────────────

test("another connection's commit wakes a listener through the watch, not the poll", async (t) => {
  const { path, store } = await fresh(t, NO_POLL);
  const other = connection(t, path);
  const w = wakes(t, store);
  for (let i = 0; i < 5; i++) {
    const woken = w.next();
    commitOn(other);
    assert.equal(await within(woken, WAIT_MS, `wake-up ${i} from another connection`), null);
  }
});

test("another process's commits wake a listener through the watch, one wake-up per commit", async (t) => {
  const { path, store } = await fresh(t, NO_POLL);
  const w = wakes(t, store);
  const rounds = 20;
  // The child inserts one job per line it reads on stdin and answers "ok" after the commit.
  const child = spawnChild(
    t,
    `
      const store = openSqliteStore({ path: process.env.DB_PATH });
      const readline = await import("node:readline");
      process.stdout.write("ready\\n");
      for await (const line of readline.createInterface({ input: process.stdin })) {
        if (line === "end") break;
        await store.insertJobs([{ queue: "q", name: "t", payload: { line }, priority: 0, maxAttempts: 1 }]);
        process.stdout.write("ok\\n");
      }
      await store.close();
    `,
    { DB_PATH: path },
  );
  await within(child.line(), 60_000, "the child process to start");
  for (let i = 0; i < rounds; i++) {
    const woken = w.next();
    const committed = child.line();
    child.proc.stdin.write(`${i}\n`);
    await within(committed, WAIT_MS * 4, `the child's commit ${i}`);
    assert.equal(await within(woken, WAIT_MS, `the wake-up for the child's commit ${i}`), null);
  }
  child.proc.stdin.end("end\n");
  assert.equal(await within(child.exit, 60_000, "the child to exit"), 0);
  assert.equal(
    (await store.claimJobs({ queue: "q", limit: 100, workerId: "w", leaseMs: 60_000 })).length,
    rounds,
  );
});

test("a commit in rollback-journal mode (no WAL) wakes a listener through the watch", async (t) => {
  const path = await tempPath(t);
  const app = new Database(path);
  t.after(() => app.close());
  app.pragma("journal_mode = DELETE");
  app.pragma("busy_timeout = 5000");
  // A shared handle: errand leaves its journal mode alone.
  const store = openSqliteStore({ db: app, ...NO_POLL });
  t.after(() => store.close());
  await store.migrate();
  assert.equal(app.pragma("journal_mode", { simple: true }), "delete");
  const other = connection(t, path);
  const w = wakes(t, store);
  const woken = w.next();
  commitOn(other);
  assert.equal(await within(woken, WAIT_MS, "a wake-up from a commit in rollback-journal mode"), null);
});

test("the store's own commits wake listeners once, in-process, with their queue", async (t) => {
  const { store } = await fresh(t, NO_POLL);
  const w = wakes(t, store);
  const woken = w.next();
  await store.insertJobs([job({ queue: "mine" })]);
  assert.equal(await within(woken, WAIT_MS, "an in-process wake-up"), "mine");
  // Its own WAL writes raise events, but data_version does not move for them: no null wake-up.
  await store.insertJobs([job({ queue: "mine" })]);
  await sleep(300);
  assert.deepEqual(w.calls, ["mine", "mine"]);
});

// ── lifecycle ──────────────────────────────────────────────────────────────────────────────

test("the watch exists only while someone listens: one for many listeners, closed with the last", async (t) => {
  const made = spyOnWatch(t);
  const { path, store } = await fresh(t, NO_POLL);
  assert.equal(made.length, 0, "no watch before anyone listens");
  const offA = store.onJobsAvailable(() => {});
  const offB = store.onJobsAvailable(() => {});
  assert.equal(made.length, 1, "one watch for two listeners");
  assert.equal(fs.realpathSync(made[0].dir), fs.realpathSync(join(path, "..")));
  offA();
  assert.equal(made[0].closed, false, "still a listener left");
  offB();
  assert.equal(made[0].closed, true, "closed with the last listener");

  store.onJobsAvailable(() => {});
  assert.equal(made.length, 2, "a new watch for a new listener");
  await store.close();
  assert.equal(made[1].closed, true, "close() ends the watch");
});

test("an in-memory database and watch: false set up no watch; in-process wake-ups still come", async (t) => {
  const made = spyOnWatch(t);
  const memory = openSqliteStore({ path: ":memory:" });
  t.after(() => memory.close());
  await memory.migrate();
  const { store: unwatched } = await fresh(t, { watch: false });
  for (const store of [memory, unwatched]) {
    const w = wakes(t, store);
    const woken = w.next();
    await store.insertJobs([job()]);
    assert.equal(await within(woken, WAIT_MS, "an in-process wake-up"), "q");
  }
  assert.equal(made.length, 0);
});

test("a process with a listening store exits by itself, whether or not it unsubscribed and closed", async (t) => {
  const path = await tempPath(t);
  const setup = openSqliteStore({ path });
  await setup.migrate();
  await setup.close();
  // Store a is left listening and open; store b unsubscribes and closes. Each saw a wake-up
  // from the watch first (the poll is a minute away), so the watch was set up.
  const child = spawnChild(
    t,
    `
      const Database = (await import("better-sqlite3")).default;
      const opts = { path: process.env.DB_PATH, pollIntervalMs: 60000 };
      const a = openSqliteStore(opts);
      const b = openSqliteStore(opts);
      const woken = (store) => new Promise((resolve) => {
        const off = store.onJobsAvailable(() => resolve(off));
      });
      // Neither the watch nor the poll keeps a process alive: this timer does, until the wake-ups.
      const alive = setInterval(() => {}, 1000);
      const wa = woken(a);
      const wb = woken(b);
      const other = new Database(process.env.DB_PATH);
      other.prepare("INSERT INTO errand_ledger (key, job_id, value, created_at) VALUES ('k', '1', NULL, 0)").run();
      other.close();
      await wa;
      const offB = await wb;
      offB();
      await b.close();
      clearInterval(alive);
      process.stdout.write("woken\\n");
    `,
    { DB_PATH: path },
  );
  assert.equal(await within(child.line(), 60_000, "the child's wake-ups"), "woken");
  assert.equal(await within(child.exit, 30_000, "the child to exit on its own"), 0);
});

// ── child processes ────────────────────────────────────────────────────────────────────────

/**
 * A node process running `body` (an ES module with `openSqliteStore` in scope), killed after
 * the test if it is still running. `line()` resolves with its next line on stdout.
 */
function spawnChild(t: TestContext, body: string, env: Record<string, string>) {
  const code = `
    const { openSqliteStore } = await import(${JSON.stringify(STORE_MODULE)});
    ${body}
  `;
  const proc: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", code],
    { cwd: ROOT, env: { ...process.env, ...env } },
  );
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill();
  });
  let buffered = "";
  let stderr = "";
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  proc.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    let at = buffered.indexOf("\n");
    while (at >= 0) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      const waiter = waiting.shift();
      if (waiter) waiter(line);
      else lines.push(line);
      at = buffered.indexOf("\n");
    }
  });
  proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve, reject) => {
    proc.on("error", reject);
    proc.on("close", (status) => {
      if (status !== 0) reject(new Error(`child exited ${status}: ${stderr}`));
      else resolve(status);
    });
  });
  exit.catch(() => {}); // observed by the test when it awaits it
  return {
    proc,
    exit,
    line(): Promise<string> {
      const ready = lines.shift();
      if (ready !== undefined) return Promise.resolve(ready);
      return Promise.race([
        new Promise<string>((resolve) => waiting.push(resolve)),
        exit.then(() => {
          throw new Error(`child exited before printing a line: ${stderr}`);
        }),
      ]);
    },
  };
}
