/**
 * The differential scenario: one scripted sequence of every store operation (insert with keys,
 * delays and run-at times, claims, extends, progress, cancel, a batch of every outcome, retry,
 * discard, stats, ledger, schedules, workers), run on the memory store (the reference) and on
 * each other store of the registry; the two logs must be identical step by step.
 *
 * Both stores read the same frozen test clock, so a step's times (and the minute buckets of
 * stats) never depend on when the run happens or how long a step takes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ValidationError } from "../../src/errors.js";
import type { NewJob, Store } from "../../src/store/types.js";
import { sqlTargets, target } from "../helpers/targets.js";

function job(queue: string, name: string, extra: Partial<NewJob> = {}): NewJob {
  return { queue, name, payload: { n: name }, priority: 0, maxAttempts: 3, ...extra };
}

/**
 * Ids and "now"-ish times differ between stores by nature: ids are renumbered by first
 * appearance, times near now become "<now>" (times the scenario sets itself, in 2099, are kept).
 */
function normalize(value: unknown): unknown {
  const ids = new Map<string, string>();
  const id = (v: string) => {
    if (!ids.has(v)) ids.set(v, `#${ids.size + 1}`);
    return ids.get(v);
  };
  const isNowish = (ms: number) => Math.abs(ms - Date.now()) < 24 * 3_600_000;
  const walk = (v: unknown, key?: string): unknown => {
    if (v instanceof Date) return isNowish(v.getTime()) ? "<now>" : v.toISOString();
    if (typeof v === "string") {
      if ((key === "id" || key === "jobId" || key === "nextCursor") && /^\d+$/.test(v)) return id(v);
      if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(v) && isNowish(Date.parse(v))) return "<now>";
      return v;
    }
    if (key === "oldestPendingMs" && typeof v === "number") return v >= 0 ? "<ms>" : v;
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === "object") {
      const entries = Object.entries(v as Record<string, unknown>);
      // A claimed job of the SQL stores (store/claimed-row.ts) makes its times on first read:
      // accessors of its class, not own properties, but fields all the same.
      const proto = Object.getPrototypeOf(v);
      if (proto && proto !== Object.prototype) {
        for (const [k, d] of Object.entries(Object.getOwnPropertyDescriptors(proto)))
          if (d.get) entries.push([k, (v as Record<string, unknown>)[k]]);
      }
      return Object.fromEntries(entries.map(([k, x]) => [k, walk(x, k)]));
    }
    return v;
  };
  return walk(value);
}

async function scenario(store: Store): Promise<unknown[]> {
  const out: unknown[] = [];
  const log = (label: string, value: unknown) => out.push([label, value]);
  const finish = (c: { id: string; leaseToken: number }, kind: string, extra: Record<string, unknown> = {}) =>
    ({ id: c.id, leaseToken: c.leaseToken, kind, worker: "w1", ...extra }) as never;

  log(
    "insert",
    await store.insertJobs([
      job("a", "a1"),
      job("a", "a2", { priority: 5 }),
      job("a", "a3", { key: "k1" }),
      job("a", "a4", { key: "k1" }),
      job("a", "a5", { delayMs: 3_600_000 }),
      job("b", "b1", { maxAttempts: 1 }),
      job("b", "b2", { key: "k1", payload: "a string payload" }),
      job("b", "b3", { runAt: new Date("2099-01-01T00:00:00.000Z"), payload: [1, { x: null }] }),
    ]),
  );
  log(
    "insert duplicate key",
    await store.insertJobs([
      job("a", "again", { key: "k1" }),
      job("c", "c1", { priority: -3 }),
      job("c", "c2", { priority: 7, delayMs: 20_000 }), // delayed within the current minute or the next
    ]),
  );
  log("stats 1", await store.stats());
  log("nextRunAt", await store.nextRunAt(["a", "b", "zzz"]));
  log("nextRunAt none", await store.nextRunAt(["zzz"]));

  const a = await store.claimJobs({ queue: "a", limit: 2, workerId: "w1", leaseMs: 60_000 });
  log("claim a 2", a);
  const a3 = await store.claimJobs({ queue: "a", limit: 10, workerId: "w2", leaseMs: 60_000 });
  log("claim a rest", a3);
  log("claim a empty", await store.claimJobs({ queue: "a", limit: 10, workerId: "w2", leaseMs: 60_000 }));
  log("claim limit 0", await store.claimJobs({ queue: "b", limit: 0, workerId: "w2", leaseMs: 60_000 }));
  const b = await store.claimJobs({ queue: "b", limit: 5, workerId: "w1", leaseMs: 60_000 });
  log("claim b", b);

  log(
    "extend",
    await store.extendLeases(
      [a[0], a[1], { id: a[0].id, leaseToken: 99 }, { id: "999999", leaseToken: 1 }],
      60_000,
    ),
  );
  log("progress", await store.setProgress(a[0], { fraction: 0.5, message: "half" }));
  log("progress stale", await store.setProgress({ id: a[0].id, leaseToken: 7 }, { fraction: 1 }));
  log("cancel running", await store.cancelJob(a[1].id));
  log("extend sees cancel", await store.extendLeases([a[1]], 60_000));

  log(
    "finish batch",
    await store.finishJobs([
      finish(a[0], "completed", { result: { ok: true } }),
      finish(a[0], "completed", { result: "twice" }),
      finish(a[1], "retry", {
        delayMs: 1000,
        error: { message: "boom", stack: "Error: boom\n at x", kind: "retryable" },
      }),
      finish(a3[0], "retry", { delayMs: 0, error: { message: "again", kind: "unknown" } }),
      finish(b[0], "retry", { error: { message: "last", kind: "retryable" } }),
      finish(b[1], "snoozed", { delayMs: 3_600_000 }),
      finish({ id: a[0].id, leaseToken: 42 }, "failed"),
    ]),
  );
  for (const [i, c] of [...a, ...a3, ...b].entries()) log(`claimed job ${i}`, await store.getJob(c.id));

  const again = await store.claimJobs({ queue: "a", limit: 10, workerId: "w3", leaseMs: 60_000 });
  log("claim retried", again);
  log(
    "finish more",
    await store.finishJobs([
      finish(again[0], "released"),
      ...again
        .slice(1)
        .map((c) => finish(c, "failed", { error: { message: "bad input", kind: "permanent" } })),
    ]),
  );
  const released = await store.claimJobs({ queue: "a", limit: 10, workerId: "w3", leaseMs: 60_000 });
  log("claim released", released);
  log("finish cancelled", await store.finishJobs(released.map((c) => finish(c, "cancelled"))));

  // Leases that expire at once: the rescuer returns them (charged) or fails them when spent.
  const c1 = await store.claimJobs({ queue: "c", limit: 1, workerId: "dead-worker", leaseMs: -1000 });
  log("claim c expired", c1);
  log("rescue", await store.rescueExpiredLeases());
  log("rescue again", await store.rescueExpiredLeases());
  log("job c", await store.getJob(c1[0].id));
  const c2 = await store.claimJobs({ queue: "c", limit: 1, workerId: "w1", leaseMs: 60_000 });
  log("stale token after rescue", await store.finishJobs([finish(c1[0], "completed")]));
  log("fresh token", await store.finishJobs([finish(c2[0], "completed", { result: null })]));

  await store.insertJobs([
    job("d", "d1", { maxAttempts: 1 }),
    job("d", "d2", { maxAttempts: 2 }),
    job("d", "d3"),
  ]);
  const d = await store.claimJobs({ queue: "d", limit: 3, workerId: "gone", leaseMs: -1000 });
  await store.cancelJob(d[2].id);
  log("rescue spent / cancel requested", await store.rescueExpiredLeases());
  for (const [i, c] of d.entries()) log(`job d${i}`, await store.getJob(c.id));

  log("cancel pending", await store.cancelJob((await store.insertJobs([job("e", "e1")]))[0].job.id));
  log("cancel finished", await store.cancelJob(c2[0].id));
  log("cancel unknown", await store.cancelJob("424242"));
  log("cancel garbage", await store.cancelJob("nope"));
  log("get garbage", await store.getJob("1e3"));

  log("stats 2", await store.stats());
  log("list all", await store.listJobs({}));
  const page1 = await store.listJobs({ limit: 3 });
  log("list page 1", page1);
  log("list page 2", await store.listJobs({ limit: 3, cursor: page1.nextCursor ?? undefined }));
  log("list queue a failed", await store.listJobs({ queue: "a", state: "failed" }));
  log("list by name", await store.listJobs({ name: "b2" }));
  log("list search payload", await store.listJobs({ search: "string payload" }));
  log("list search key", await store.listJobs({ search: "k1" }));
  await assert.rejects(() => store.listJobs({ cursor: "x" }), ValidationError);

  log("retry by queue", await store.retryJobs({ queue: "d" }));
  log("retry by ids", await store.retryJobs({ ids: [d[0].id, "999999", "junk"] }));
  log("retry nothing", await store.retryJobs({ ids: [] }));
  log("retry all", await store.retryJobs({}));
  log("discard none", await store.discardJobs({ queue: "a" }));
  const f = await store.claimJobs({ queue: "b", limit: 5, workerId: "w1", leaseMs: 60_000 });
  await store.finishJobs(f.map((c) => finish(c, "failed", { error: { message: "x", kind: "permanent" } })));
  log("discard b", await store.discardJobs({ queue: "b" }));
  log("discard all", await store.discardJobs({}));
  log("prune none (young)", await store.pruneFinished({ completedAgeMs: 3_600_000, failedAgeMs: 3_600_000 }));
  log("throughput", await store.throughput(3_600_000, 60_000));
  log("stats 3", await store.stats());

  const once = (key: string, jobId: string, global = true) => ({ key, jobId, global });
  log("ledger miss", await store.ledgerGet(once("once:1", "1")));
  await store.ledgerPut(once("once:1", "1"), { sent: 1 });
  await store.ledgerPut(once("once:1", "2"), { sent: 2 });
  await store.ledgerPut(once("once:null", "3"), null);
  await store.ledgerPut(once("once:undef", "3"), undefined);
  await store.ledgerPut(once("once:1", "4", false), { sent: 4 });
  log("ledger hit", await store.ledgerGet(once("once:1", "1")));
  log("ledger null", await store.ledgerGet(once("once:null", "3")));
  log("ledger undefined", await store.ledgerGet(once("once:undef", "3")));
  log("ledger per job", await store.ledgerGet(once("once:1", "4", false)));
  log("ledger per job, global recorded by it", await store.ledgerGet(once("once:null", "3", false)));
  log("ledger per job, global of another job", await store.ledgerGet(once("once:1", "5", false)));

  const at = (iso: string) => new Date(iso);
  const sched = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    cron: "*/5 * * * *",
    timezone: "UTC",
    jobName: "tick",
    queue: "cron",
    payload: { from: name },
    priority: 1,
    missed: "latest" as const,
    source: "code" as const,
    nextRunAt: at("2099-01-01T00:05:00.000Z"),
    ...extra,
  });
  await store.syncSchedules([sched("s1"), sched("s2"), sched("old")]);
  await store.upsertSchedule(sched("manual", { source: "cli", nextRunAt: at("2000-01-01T00:00:00.000Z") }));
  await store.syncSchedules([
    sched("s1", { nextRunAt: at("2099-06-01T00:00:00.000Z") }),
    sched("s2", { cron: "0 * * * *", nextRunAt: at("2099-06-01T00:00:00.000Z") }),
  ]);
  log("schedules", await store.listSchedules());
  log("due", await store.dueSchedules());
  log(
    "advance",
    await store.advanceSchedule({
      name: "manual",
      expectedNextRunAt: at("2000-01-01T00:00:00.000Z"),
      nextRunAt: at("2000-01-01T00:05:00.000Z"),
      lastSlot: at("2000-01-01T00:00:00.000Z"),
    }),
  );
  log(
    "advance lost race",
    await store.advanceSchedule({
      name: "manual",
      expectedNextRunAt: at("2000-01-01T00:00:00.000Z"),
      nextRunAt: at("2000-01-01T00:10:00.000Z"),
      lastSlot: null,
    }),
  );
  log(
    "advance without slot",
    await store.advanceSchedule({
      name: "s1",
      expectedNextRunAt: at("2099-06-01T00:00:00.000Z"),
      nextRunAt: at("2099-07-01T00:00:00.000Z"),
      lastSlot: null,
    }),
  );
  log("schedules after", await store.listSchedules());
  log("remove", await store.removeSchedule("s2"));
  log("remove missing", await store.removeSchedule("s2"));

  await store.registerWorker({ id: "w1", host: "h", pid: 1, queues: { a: 2 }, running: 0, processed: 0 });
  await store.registerWorker({ id: "w2", host: "h", pid: 2, queues: { b: 1 }, running: 0, processed: 0 });
  await store.heartbeatWorker("w1", 2, 10);
  await store.unregisterWorker("w2");
  log("workers", await store.listWorkers(60_000));
  return out;
}

/** Mid-minute, so that "a delay of 20 s" stays in the same minute on every store. */
function frozenNow(): number {
  return Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
}

for (const other of sqlTargets) {
  describe(`${other.name}: differential`, { skip: other.skip || false }, () => {
    test("behaves exactly as the memory store through a scripted scenario", async () => {
      const now = frozenNow();
      const clock = () => now;
      const reference = await target("memory").openStore({ clock });
      const opened = await other.openStore({ clock });
      try {
        // Normalized as a whole: an id keeps its number across steps.
        const memory = normalize(await scenario(reference.store)) as unknown[];
        const actual = normalize(await scenario(opened.store)) as unknown[];
        assert.equal(actual.length, memory.length);
        for (let i = 0; i < memory.length; i++) {
          assert.deepStrictEqual(actual[i], memory[i], `step ${(memory[i] as [string])[0]}`);
        }
      } finally {
        await reference.cleanup();
        await opened.cleanup();
      }
    });
  });
}
