/**
 * Pause under load, as the issue checks it: four `errand worker` processes on one store (a
 * SQLite file; a Postgres schema) run a backlog of jobs whose handlers record their start times;
 * `errand.pauseQueue` is called from this process. No handler starts after it returned; the
 * jobs left stay pending, none running; after `resume` the backlog drains and every job ran
 * exactly once. `errand queue list|resume` on the way.
 *
 * The backlog is fast jobs (2 ms) then slow ones (300 ms), and the pause comes as the first
 * slow job starts: the workers' read-ahead, sized from the fast jobs' rate, then holds seconds of
 * slow jobs claimed but not started — the jobs a pause must stop too (without the start window
 * of worker/pause-window.ts, 49 of them on SQLite and 12 on Postgres started after pauseQueue
 * returned).
 */
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { Errand } from "../../src/index.js";
import { openErrand, silentLogger } from "../../src/index.js";
import { stamp } from "../fixtures/jobs.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { exitOf, FIXTURE_JOBS, inspect, type Running, run, scratch, start, waitFor } from "./helpers.js";

const FAST = 600;
const SLOW = 160;
const JOBS = FAST + SLOW;
const WORKERS = 4;

/**
 * The handlers' start lines, in the order they were appended to stamps.log (O_APPEND: one order
 * for every process), and where the test's own "paused" line falls among them: a start after
 * that line began after pauseQueue had returned — no clock is compared across processes.
 */
function stamps(dir: string): { id: string; pid: string; ms: number; afterPause: boolean }[] {
  const path = join(dir, "stamps.log");
  if (!existsSync(path)) return [];
  let afterPause = false;
  const out: { id: string; pid: string; ms: number; afterPause: boolean }[] = [];
  for (const line of readFileSync(path, "utf8").split("\n").filter(Boolean)) {
    if (line === "paused") {
      afterPause = true;
      continue;
    }
    const [id, pid, , ms] = line.split(" ");
    out.push({ id, pid, ms: Number(ms), afterPause });
  }
  return out;
}

const pgSkip = await skipUnlessPostgres();

const targets: Array<{
  name: string;
  skip: string | false;
  open(dir: string): Promise<{ url: string[]; errand: Errand; drop(): Promise<void> }>;
}> = [
  {
    name: "SQLite file",
    skip: false,
    async open(dir) {
      const db = join(dir, "errand.db");
      return { url: ["--url", db], errand: await inspect(db, [stamp]), drop: async () => {} };
    },
  },
  {
    name: "Postgres",
    skip: pgSkip,
    async open() {
      const { schema, drop } = freshSchema("errand_pause");
      const errand = await openErrand({ url: postgresUrl(), schema, jobs: [stamp], logger: silentLogger() });
      return { url: ["--url", postgresUrl(), "--schema", schema], errand, drop };
    },
  },
];

for (const target of targets) {
  describe(`pause under load: ${WORKERS} worker processes on ${target.name}`, { skip: target.skip }, () => {
    const cleanups: Array<() => void | Promise<void>> = [];
    after(async () => {
      for (const c of cleanups.reverse()) await c();
    });

    test("no handler starts after pause returns; resume drains the backlog; each job runs once", async () => {
      const s = scratch("errand-pause-");
      cleanups.push(() => s.cleanup());
      const { url, errand, drop } = await target.open(s.dir);
      cleanups.push(drop);
      cleanups.push(() => errand.close());
      const env = { ERRAND_FIXTURE_DIR: s.dir };
      await errand.enqueueMany(stamp, [
        ...Array.from({ length: FAST }, () => ({ payload: { ms: 2 } })),
        ...Array.from({ length: SLOW }, () => ({ payload: { ms: 300 } })),
      ]);
      const procs: Running[] = [];
      cleanups.push(() => {
        for (const p of procs) p.child.kill("SIGKILL");
      });
      for (let i = 0; i < WORKERS; i++) {
        procs.push(
          start(
            [
              "worker",
              "--jobs",
              FIXTURE_JOBS,
              ...url,
              "--queue",
              "paced",
              "--concurrency",
              "4",
              "--poll-interval",
              "200ms",
            ],
            env,
          ),
        );
      }
      await waitFor("the first slow job to start", () => stamps(s.dir).some((x) => x.ms === 300), 60_000, 5);

      await errand.pauseQueue("paced");
      appendFileSync(join(s.dir, "stamps.log"), "paused\n");
      const atPause = stamps(s.dir).length;
      // The read-ahead buffers are given back and nothing runs any more.
      await waitFor(
        "the paused queue to have nothing running",
        async () => (await errand.stats()).find((q) => q.queue === "paced")?.running === 0,
        20_000,
        20,
      );
      await new Promise((r) => setTimeout(r, 500));
      const seen = stamps(s.dir);
      const late = seen.filter((x) => x.afterPause);
      assert.deepEqual(late, [], `${late.length} handlers started after pauseQueue returned`);
      assert.ok(seen.length < JOBS, `the pause held jobs back (${seen.length} of ${JOBS} started)`);
      const held = (await errand.stats()).find((q) => q.queue === "paced");
      assert.equal(held?.pending, JOBS - seen.length, "every job not started is pending again");
      assert.ok(seen.length >= atPause, "jobs started before the pause returned are allowed");
      const cli = await run(["queue", "list", ...url]);
      assert.match(cli.stdout, /paced\s+paused since/);

      const resumed = await run(["queue", "resume", "paced", ...url]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.match(resumed.stdout, /queue "paced" resumed/);
      await waitFor(
        "the backlog to drain after resume",
        async () => (await errand.stats()).find((q) => q.queue === "paced")?.completed === JOBS,
        20_000,
        50,
      );
      const all = stamps(s.dir);
      assert.equal(all.length, JOBS, "each job ran once");
      assert.equal(new Set(all.map((x) => x.id)).size, JOBS);
      assert.ok(new Set(all.map((x) => x.pid)).size > 1, "several processes ran the jobs");

      for (const p of procs) p.child.kill("SIGTERM");
      for (const p of procs) assert.equal((await exitOf(p)).code, 0);
    });
  });
}
