/**
 * Flow control across real worker processes, as issue 16 checks it: four `errand worker`
 * processes (concurrency 10 each) on one SQLite file, and four on one Postgres schema — both
 * sets at once, each check run on both together (the 30 s rate window once, not twice). The
 * handlers trace their own start and end times (test/fixtures/flow-jobs.ts); every check reads them.
 * - global concurrency 3: never more than 3 overlap, and 3 do run at once;
 * - a per-key rate of 50/s: no 1 s window holds more than 50 claims of a key (the store's
 *   clock), the handlers' own start times give 1,500 ± 5% in 30 s, and a second key's budget
 *   is independent;
 * - adaptive: a fake API answers its 100th call of a key with 429 Retry-After 2 s; it sees no
 *   call of that key for 2 s from any worker, then calls resume, and other keys go on meanwhile;
 * - kill -9 of a worker holding a slot: the slot comes back with the lease, nothing is stuck;
 * - fairness: tenant A enqueues 50,000 jobs, then tenant B 10: B's last job starts within two
 *   seconds, not after A's backlog (one store at a time: the other's workers are idle).
 * Rates and waits are measured here but asserted only where the issue makes them the behaviour.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import { FLOW_JOBS, type Running, scratch, start, waitFor } from "../cli/helpers.js";
import { flowApi, flowFair, flowGlobal, flowRate, readTraces, type Trace } from "../fixtures/flow-jobs.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

/** The most handlers running at once, from start/end traces. */
function maxOverlap(list: Trace[]): number {
  const events = list
    .map((t) => ({ at: t.at, d: t.what === "start" ? 1 : -1 }))
    .sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const e of events) {
    now += e.d;
    max = Math.max(max, now);
  }
  return max;
}

/** The most starts within any window of `ms`. */
function maxInWindow(times: number[], ms: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let from = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (sorted[i] - sorted[from] >= ms) from++;
    max = Math.max(max, i - from + 1);
  }
  return max;
}

/** The fake API: counts calls per key; answers the 100th call of `limitedKey` 429 with Retry-After 2. */
function fakeApi(limitedKey: string) {
  const calls: { key: string; at: number }[] = [];
  let limitedAt: number | null = null;
  const server: Server = createServer((req, res) => {
    const key = decodeURIComponent((req.url ?? "/").slice(1));
    calls.push({ key, at: Date.now() });
    if (key === limitedKey && calls.filter((c) => c.key === key).length === 100) {
      limitedAt = Date.now();
      res.writeHead(429, { "retry-after": "2" }).end("slow down");
      return;
    }
    res.writeHead(200).end("ok");
  });
  return {
    calls,
    limitedAt: () => limitedAt,
    listen: () =>
      new Promise<string>((resolve) =>
        server.listen(0, "127.0.0.1", () =>
          resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
        ),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Target {
  name: string;
  skip: string | false;
  open(): Promise<{ url: string; args: string[]; errand: Errand; cleanup(): Promise<void> }>;
}

const JOBS = [flowGlobal, flowRate, flowFair, flowApi];

const targets: Target[] = [
  {
    name: "sqlite",
    skip: false,
    async open() {
      const s = scratch("errand-flow-");
      const errand = await openErrand({ url: s.db, logger: silentLogger(), jobs: JOBS });
      return {
        url: s.db,
        args: ["--url", s.db],
        errand,
        async cleanup() {
          await errand.close();
          s.cleanup();
        },
      };
    },
  },
  {
    name: "postgres",
    skip: await skipUnlessPostgres(),
    async open() {
      const { schema, drop } = freshSchema("errand_flow");
      const url = postgresUrl();
      const errand = await openErrand({ url, schema, logger: silentLogger(), jobs: JOBS });
      return {
        url,
        args: ["--url", url, "--schema", schema],
        errand,
        async cleanup() {
          await errand.close();
          await drop();
        },
      };
    },
  },
];

interface Setup {
  name: string;
  errand: Errand;
  dir: string;
  workers: Running[];
  api: ReturnType<typeof fakeApi>;
  cleanup(): Promise<void>;
}

describe("flow control across four worker processes, on SQLite and on Postgres at once", () => {
  const setups: Setup[] = [];
  const scratchDirs: { cleanup(): void }[] = [];

  before(async () => {
    for (const target of targets) {
      if (target.skip) {
        console.log(`# ${target.name} skipped: ${target.skip}`);
        continue;
      }
      const opened = await target.open();
      const scratchDir = scratch("errand-flow-trace-");
      scratchDirs.push(scratchDir);
      const api = fakeApi("a");
      const apiUrl = await api.listen();
      const workers: Running[] = [];
      for (let i = 0; i < 4; i++) {
        workers.push(
          start(
            [
              "worker",
              "--jobs",
              FLOW_JOBS,
              ...opened.args,
              "--concurrency",
              "10",
              // Long enough that a worker starved for a few seconds on a loaded machine keeps its
              // leases (the global test counts on it), short enough that the kill -9 test's slot
              // comes back within seconds.
              "--lease",
              "5s",
              "--poll-interval",
              "500ms",
            ],
            { ERRAND_FIXTURE_DIR: scratchDir.dir, FLOW_API_URL: apiUrl },
          ),
        );
      }
      setups.push({
        name: target.name,
        errand: opened.errand,
        dir: scratchDir.dir,
        workers,
        api,
        cleanup: opened.cleanup,
      });
    }
    for (const s of setups)
      await waitFor(
        `four ${s.name} workers`,
        async () => (await s.errand.listWorkers(10_000)).length === 4,
        30_000,
      );
  });

  after(async () => {
    for (const s of setups) for (const w of s.workers) w.child.kill("SIGKILL");
    for (const s of setups) {
      await Promise.all(s.workers.map((w) => w.exited.catch(() => {})));
      await s.api.close();
      await s.cleanup();
    }
    for (const d of scratchDirs) d.cleanup();
  });

  /** The check on every store at once (the 30 s rate window), or one store after the other. */
  const onEach = async (check: (s: Setup) => Promise<void>, together = false) => {
    if (together) {
      // Every store's check runs to its end (and prints its figures) before a failure is reported.
      const failed = (await Promise.allSettled(setups.map(check))).find((r) => r.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
    } else for (const s of setups) await check(s);
  };

  test("global concurrency 3: never more than 3 handlers overlap, and 3 do", () =>
    onEach(async (s) => {
      await s.errand.enqueueMany(
        flowGlobal,
        Array.from({ length: 30 }, () => ({ payload: { key: "g", ms: 150 } })),
      );
      await waitFor(
        "30 ends",
        () => readTraces(s.dir, "flow-global").filter((t) => t.what === "end").length === 30,
      );
      const list = readTraces(s.dir, "flow-global");
      // The limit counts leases: a worker stalled past its lease (a CI machine's load) is taken
      // for dead, and its jobs run again beside its own late-finishing handlers. A SIGSTOP of 3 s
      // under a 2 s lease gave exactly 6 here (3 stalled and 3 new), as one CI run on 5815e40 did:
      // that is the lease at work, not the limit, so it is named as such.
      const lost = [];
      for (const id of new Set(list.map((t) => t.id))) {
        const job = await s.errand.getJob(id);
        if (job?.attempts.some((a) => a.outcome === "lost")) lost.push(job);
      }
      assert.deepEqual(
        lost.map((j) => ({ id: j.id, attempts: j.attempts })),
        [],
        "a worker stalled past its lease, so its jobs ran again beside it",
      );
      assert.equal(maxOverlap(list), 3);
      const starts = list.filter((t) => t.what === "start").map((t) => t.at);
      const span = Math.max(...list.map((t) => t.at)) - Math.min(...starts);
      const pids = new Set(list.map((t) => t.pid));
      console.log(
        `# ${s.name} global 3: 30 jobs of 150 ms in ${span.toFixed(0)} ms (ideal 1500) on ${pids.size} processes`,
      );
    }));

  test("a per-key rate of 50/s holds within 5% over 30 s across workers; another key's budget is independent", () =>
    onEach(async (s) => {
      // 31 s of work per key at 50/s: the first 30 s of starts are all limited by the rate.
      const perKey = 1550;
      await s.errand.enqueueMany(flowRate, [
        ...Array.from({ length: perKey }, () => ({ payload: { key: "a" } })),
        ...Array.from({ length: perKey }, () => ({ payload: { key: "b" } })),
      ]);
      // Each job's first start (a job whose lease ran out under load may start twice).
      const firstStarts = () => [
        ...new Map(
          readTraces(s.dir, "flow-rate")
            .reverse()
            .map((t) => [t.id, t]),
        ).values(),
      ];
      await waitFor(`${2 * perKey} jobs started`, () => firstStarts().length >= 2 * perKey, 120_000);
      const list = firstStarts();
      // The claim times, on the store's clock: where the limit is enforced.
      const records = [];
      let cursor: string | undefined;
      do {
        const page = await s.errand.listJobs({
          queue: "flow-rate",
          limit: 1000,
          ...(cursor ? { cursor } : {}),
        });
        records.push(...page.jobs);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      assert.equal(records.length, 2 * perKey);
      for (const key of ["a", "b"]) {
        const times = list.filter((t) => t.key === key).map((t) => t.at);
        const first = Math.min(...times);
        const inThirty = times.filter((t) => t < first + 30_000).length;
        const claimed = records
          .filter((j) => (j.payload as { key: string }).key === key)
          .map((j) => (j.startedAt as Date).getTime());
        const claimPeak = maxInWindow(claimed, 1000);
        console.log(
          `# ${s.name} rate key ${key}: ${inThirty} handler starts in the first 30 s; at most ${claimPeak} claims in any 1 s (store clock), ${maxInWindow(times, 1000)} handler starts in any 1 s (handlers' clocks)`,
        );
        assert.ok(claimPeak <= 50, `key ${key}: ${claimPeak} claims within one second (limit 50)`);
        assert.ok(
          inThirty >= 1425 && inThirty <= 1575,
          `key ${key}: ${inThirty} handler starts in 30 s (1,500 ± 5%)`,
        );
      }
      assert.ok(new Set(list.map((t) => t.pid)).size > 1, "several processes took part");
    }, true));

  test("a 429 with Retry-After pauses that key for every worker, then calls resume", () =>
    onEach(async (s) => {
      await s.errand.enqueueMany(flowApi, [
        ...Array.from({ length: 130 }, () => ({ payload: { key: "a" } })),
        ...Array.from({ length: 130 }, () => ({ payload: { key: "b" } })),
      ]);
      await waitFor("261 calls", () => s.api.calls.length >= 261, 120_000);
      const limitedAt = s.api.limitedAt();
      assert.ok(limitedAt !== null, "the 100th call of key a was answered 429");
      const aAfter = s.api.calls
        .filter((c) => c.key === "a" && c.at > limitedAt)
        .map((c) => c.at - limitedAt);
      const bDuring = s.api.calls.filter((c) => c.key === "b" && c.at > limitedAt && c.at < limitedAt + 2000);
      console.log(
        `# ${s.name} adaptive: first call of key a ${aAfter[0]?.toFixed(0)} ms after its 429; key b got ${bDuring.length} calls meanwhile`,
      );
      assert.ok(
        aAfter.length > 0 && aAfter[0] >= 1950,
        `key a called ${aAfter[0]} ms after its 429 (Retry-After 2 s)`,
      );
      assert.ok(
        bDuring.length > 0 || s.api.calls.filter((c) => c.key === "b").length === 130,
        "key b was not paused",
      );
    }));

  test("kill -9 of a worker holding a slot: the slot comes back with the lease, nothing is stuck", () =>
    onEach(async (s) => {
      const [hung] = await s.errand.enqueueMany(flowGlobal, [{ payload: { key: "hang", hang: true } }]);
      const holder = await waitFor("the hanging job to start", () =>
        readTraces(s.dir, "flow-global").find((t) => t.what === "start" && t.id === hung.id),
      );
      const victim = s.workers.find((w) => w.pid === holder.pid);
      assert.ok(victim, "the job runs on one of our workers");
      victim.child.kill("SIGKILL");
      await victim.exited;
      await waitFor(
        "the hanging job back from its lost lease and completed",
        async () => (await s.errand.getJob(hung.id))?.state === "completed",
        30_000,
      );
      const record = await s.errand.getJob(hung.id);
      assert.deepEqual(
        record?.attempts.map((a) => a.outcome),
        ["lost", "completed"],
      );
      // The dead worker's slot is free again: three of the next jobs run at once.
      const more = await s.errand.enqueueMany(
        flowGlobal,
        Array.from({ length: 9 }, () => ({ payload: { key: "after", ms: 200 } })),
      );
      await waitFor("the next jobs", async () => {
        for (const job of more) if ((await s.errand.getJob(job.id))?.state !== "completed") return false;
        return true;
      });
      assert.equal(maxOverlap(readTraces(s.dir, "flow-global").filter((t) => t.key === "after")), 3);
    }));

  // One store at a time: B's wait is the behaviour checked, not the other store's load.
  test("fairness: tenant B's 10 jobs start within two seconds behind tenant A's 50,000", async () => {
    for (const s of setups) {
      await s.errand.enqueueMany(
        flowFair,
        Array.from({ length: 50_000 }, () => ({ payload: { key: "A", ms: 5 } })),
      );
      await waitFor("A to start", () => readTraces(s.dir, "flow-fair").length > 0);
      const enqueuedAt = Date.now();
      await s.errand.enqueueMany(
        flowFair,
        Array.from({ length: 10 }, () => ({ payload: { key: "B", ms: 5 } })),
      );
      await waitFor(
        "B's 10 starts",
        () => readTraces(s.dir, "flow-fair").filter((t) => t.key === "B").length === 10,
        30_000,
      );
      const lastB = Math.max(
        ...readTraces(s.dir, "flow-fair")
          .filter((t) => t.key === "B")
          .map((t) => t.at),
      );
      const aDone = readTraces(s.dir, "flow-fair").filter((t) => t.key === "A").length;
      console.log(
        `# ${s.name} fairness: B's last job started ${(lastB - enqueuedAt).toFixed(0)} ms after B enqueued; A had run ${aDone} of 50,000`,
      );
      assert.ok(aDone < 50_000 / 2, "B did not wait for A's backlog");
      assert.ok(
        lastB - enqueuedAt < 2000,
        `B's last job started ${lastB - enqueuedAt} ms after it was enqueued`,
      );
    }
  });
});
