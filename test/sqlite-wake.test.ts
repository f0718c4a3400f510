/**
 * How a SQLite store learns of other connections' commits: the watch on the database's
 * directory (src/store/sqlite/watch.ts) and the poll behind it. Each test gets its own file
 * under os.tmpdir(). The safety-net poll is set to a minute wherever a wake-up must come from
 * the watch, so a wake-up that arrives within the (generous) wait cannot be the poll's.
 *
 *   node --import tsx --test test/sqlite-wake.test.ts
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import fs from "node:fs";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { type TestContext, test } from "node:test";
import Database from "better-sqlite3";
import { z } from "zod";
import { createLogger, defineJob, openErrand } from "../src/index.js";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/index.js";
import { watchCommits } from "../src/store/sqlite/watch.js";
import { connection, fresh, job, ROOT, STORE_MODULE, tempPath } from "./helpers/sqlite.js";
import { sleep, within } from "./helpers/wait.js";

/** Long enough that a wake-up seen within WAIT_MS cannot have come from the poll. */
const NO_POLL = { pollIntervalMs: 60_000 };
const WAIT_MS = 5_000;

let commits = 0;
/** One commit on `db` (a row in errand's ledger, which nothing in these tests reads). */
function commitOn(db: Database.Database): void {
  db.prepare("INSERT INTO errand_ledger (key, job_id, value, created_at) VALUES (?, '1', NULL, 0)").run(
    `commit-${commits++}`,
  );
}

/** Subscribes to `store` and hands out one promise per expected wake-up. */
function wakes(t: TestContext, store: SqliteStore) {
  const calls: (string | null)[] = [];
  let resolve: (queue: string | null) => void = () => {};
  const off = store.onJobsAvailable((queue) => {
    calls.push(queue);
    resolve(queue);
  });
  t.after(off);
  return {
    calls,
    off,
    /** The next wake-up (call before the commit that should cause it). */
    next(): Promise<string | null> {
      return new Promise((r) => (resolve = r));
    },
  };
}

/**
 * Spies on fs.watch (calls go through to the real one): every watcher made, and whether it was
 * closed. `fail` makes fs.watch throw instead, or the watcher emit an error once it is made.
 */
function spyOnWatch(t: TestContext, fail?: { throws?: Error; emits?: Error }) {
  const real = fs.watch;
  const made: { dir: string; closed: boolean }[] = [];
  t.mock.method(fs, "watch", (...args: Parameters<typeof fs.watch>) => {
    if (fail?.throws) throw fail.throws;
    const watcher = real(...args);
    const entry = { dir: String(args[0]), closed: false };
    made.push(entry);
    const close = watcher.close.bind(watcher);
    watcher.close = () => {
      entry.closed = true;
      close();
    };
    const emits = fail?.emits;
    if (emits) setImmediate(() => watcher.emit("error", emits));
    return watcher;
  });
  return made;
}

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

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

// ── watch.ts on its own: coalescing and follow-ups ─────────────────────────────────────────

/** A directory with a would-be database `x.db` in it; the files are plain files here. */
async function watchedDir(t: TestContext): Promise<{ dir: string; file: string }> {
  const file = await tempPath(t, "errand-sqlite-watch-");
  return { dir: dirname(file), file };
}

/**
 * watchCommits on `file` with a check that answers `answer(n)` for its n-th call (1-based; it
 * may throw) and counts its calls. `commitSeen()` resolves at the next call that answers true.
 */
function countedWatch(t: TestContext, file: string, answer: (n: number) => boolean = () => true) {
  let checks = 0;
  let seen: (() => void) | null = null;
  const watch = watchCommits(
    file,
    () => {
      const changed = answer(++checks);
      if (changed) seen?.();
      return changed;
    },
    (err) => assert.fail(err),
  );
  t.after(() => watch.close());
  return {
    checks: () => checks,
    commitSeen: () => new Promise<void>((resolve) => (seen = resolve)),
  };
}

test("a burst of file events is looked at once per event-loop turn, not once per event", async (t) => {
  const { dir, file } = await watchedDir(t);
  let events = 0;
  const counter = fs.watch(dir, { persistent: false }, () => events++);
  t.after(() => counter.close());
  const watch = countedWatch(t, file);
  const first = watch.commitSeen();
  // Alternating names, so the kernel cannot merge consecutive identical events: 400 events.
  for (let i = 0; i < 200; i++) {
    fs.appendFileSync(`${file}-wal`, "frame");
    fs.appendFileSync(file, "page");
  }
  await within(first, WAIT_MS, "the first check");
  await sleep(300); // room for any further checks to run
  assert.ok(events > 50, `the burst raised only ${events} events: this test proves nothing`);
  assert.ok(watch.checks() < 5, `${events} events in one turn were looked at ${watch.checks()} times`);
});

test("events on other files in the directory are not looked at", async (t) => {
  const { dir, file } = await watchedDir(t);
  const watch = countedWatch(t, file);
  for (let i = 0; i < 20; i++) fs.appendFileSync(join(dir, "app.log"), "line\n");
  fs.appendFileSync(`${file}-shm`, "mapped");
  await sleep(100); // their events are delivered in turns of their own
  const woken = watch.commitSeen();
  fs.appendFileSync(`${file}-journal`, "page"); // a real one, after the others
  await within(woken, WAIT_MS, "the check for the journal");
  assert.equal(watch.checks(), 1);
});

test("a check that finds nothing new is repeated shortly (the writer may not have published yet)", async (t) => {
  const { file } = await watchedDir(t);
  // The first look finds nothing (as when the WAL frames are written but the shared-memory
  // index not yet updated); only a later look, with no further event, can see the commit.
  const watch = countedWatch(t, file, (n) => n >= 2);
  const woken = watch.commitSeen();
  fs.appendFileSync(`${file}-wal`, "frame");
  await within(woken, WAIT_MS, "a second look without a second event");
  await sleep(300);
  assert.equal(watch.checks(), 2, "no more looks once one saw the commit");
});

test("a check that throws counts as nothing new: no crash, and a follow-up looks again", async (t) => {
  const { file } = await watchedDir(t);
  const watch = countedWatch(t, file, (n) => {
    if (n < 2) throw new Error("SQLITE_BUSY");
    return true;
  });
  const woken = watch.commitSeen();
  fs.appendFileSync(`${file}-wal`, "frame");
  await within(woken, WAIT_MS, "a look after the one that threw");
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

// ── when the watch cannot help ─────────────────────────────────────────────────────────────

test("when the directory cannot be watched, the store says so and the poll carries the wake-ups", async (t) => {
  spyOnWatch(t, { throws: errno("ENOSPC", "System limit for number of file watchers reached") });
  const errors: Error[] = [];
  const { path, store } = await fresh(t, { onWatchError: (err) => errors.push(err) });
  const other = connection(t, path);
  const w = wakes(t, store);
  assert.deepEqual(
    errors.map((e) => (e as NodeJS.ErrnoException).code),
    ["ENOSPC"],
  );
  const woken = w.next();
  commitOn(other);
  assert.equal(await within(woken, WAIT_MS, "a wake-up from the poll"), null);
});

test("when the watch fails later, it is closed, the store says so and the poll carries the wake-ups", async (t) => {
  const made = spyOnWatch(t, { emits: errno("EIO", "the watch broke") });
  let reported: (err: Error) => void = () => {};
  const error = new Promise<Error>((r) => (reported = r));
  const { path, store } = await fresh(t, { onWatchError: (err) => reported(err) });
  const other = connection(t, path);
  const w = wakes(t, store);
  const err = await within(error, WAIT_MS, "the watch's error to be reported");
  assert.equal((err as NodeJS.ErrnoException).code, "EIO");
  assert.equal(made[0].closed, true);
  const woken = w.next();
  commitOn(other);
  assert.equal(await within(woken, WAIT_MS, "a wake-up from the poll"), null);
});

test("openErrand logs a warning when the watch cannot be set up, and its worker still starts", async (t) => {
  spyOnWatch(t, { throws: errno("ENOSPC", "System limit for number of file watchers reached") });
  const lines: string[] = [];
  const logger = createLogger({
    pretty: false,
    destination: new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  });
  const noop = defineJob({ name: "noop", queue: "q", schema: z.object({}), run: () => {} });
  const errand = await openErrand({ url: await tempPath(t), logger, jobs: [noop] });
  t.after(() => errand.close());
  const worker = errand.work({ q: { concurrency: 1 } });
  t.after(() => worker.stop());
  const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40);
  assert.equal(warnings.length, 1, lines.join(""));
  assert.match(warnings[0].msg, /cannot watch the SQLite database's directory/);
  assert.equal(warnings[0].err.code, "ENOSPC");
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
