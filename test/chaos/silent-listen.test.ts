/**
 * waitFor on PostgreSQL when its LISTEN connection hears nothing: the waiter's errand reaches
 * the database through a TCP proxy on loopback (proxy.ts), the jobs are finished by a worker of
 * another errand connected directly. Every waiter uses `waitRecheck: "1h"`, so a wait that
 * settles here was settled by errand's notifications and its own silence detection, never by
 * the slow re-check.
 *
 * - Waits started before the black hole, jobs finished while the waiter is deaf (their NOTIFY
 *   is lost for good): the notifier finds the silence (its `SELECT 1`), reconnects, and the
 *   jobs are looked up once — although that lookup meets the pool's silent connections too.
 * - A wait started while every connection is silent: its record (the `awaited` row that makes
 *   the job's finish send a NOTIFY) fails on a silent connection and must be made again.
 * - The first-LISTEN race, held open on purpose: the LISTEN connection's bytes wait in the
 *   proxy while the job is awaited and finished; only then does the LISTEN go through.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/index.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { waitFor as until, within } from "../helpers/wait.js";
import { TcpProxy } from "./proxy.js";

const skip = await skipUnlessPostgres();

/**
 * The waiter's connection limits come from this lease (store.useLease, as a worker would): the
 * LISTEN connection is checked every 2 s and a statement unanswered for 3 s is given up on
 * (connection.ts limitsForLease). So the notifier notices the black hole 3–5 s after it starts,
 * and never before 3 s: the test finishes the jobs well inside that deaf window.
 */
const LEASE_MS = 2_000;
/**
 * How long a wait may take to settle once its job finished: the silence found (≤ 5 s), a
 * reconnect (≤ 0.1 s backoff), then lookups that may each meet a silent pool connection first
 * (3 s apiece, a few of them) — far below the 1 h re-check, with slack for a loaded machine.
 */
const SETTLE_BOUND_MS = 30_000;

/** The wait's result within SETTLE_BOUND_MS; else an error listing what the waiter's store reported. */
async function settlesWithin<T>(wait: Promise<T>, what: string, errors: Error[]): Promise<T> {
  try {
    return await within(wait, SETTLE_BOUND_MS, what);
  } catch (err) {
    const reported = JSON.stringify(errors.map((e) => e.message));
    throw new Error(`${(err as Error).message}; the waiter's store reported: ${reported}`);
  }
}

describe("waitFor through a silent LISTEN connection", { skip, timeout: 240_000 }, () => {
  const target = new URL(postgresUrl());
  const targetAddress = { host: target.hostname, port: Number(target.port || 5432) };
  let schema: { schema: string; drop: () => Promise<void> };
  let worker: Errand;
  let admin: pg.Client;
  const cleanups: Array<() => Promise<unknown>> = [];
  /** Handlers of `gated` jobs wait for this to open (set per test). */
  let gate: Promise<void> = Promise.resolve();
  let started = 0;

  /** A job whose handler counts its start and waits for the gate; one definition per queue. */
  const gatedJob = (queue: string) =>
    defineJob({
      name: `${queue}.gated`,
      queue,
      schema: z.object({ n: z.number() }),
      run: async ({ n }) => {
        started++;
        await gate;
        return { n };
      },
    });
  const gated = gatedJob("silent-listen");
  const never = gatedJob("silent-listen-never");
  const late = gatedJob("silent-listen-late");
  const race = gatedJob("silent-listen-race");

  /** A gate the test opens; the handlers started before it opens wait for it. */
  const closeGate = () => {
    let open = () => {};
    gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    return open;
  };

  /**
   * A waiting errand whose store is ours (so the test sets its limits and sees its errors).
   * `listenUrl` is where its LISTEN connection goes; `pool`: its statements' own pool (else they
   * go to `listenUrl` too).
   */
  async function openWaiter(listenUrl: string, pool?: pg.Pool) {
    const errors: Error[] = [];
    const store: PostgresStore = openPostgresStore({
      url: listenUrl,
      ...(pool ? { pool } : {}),
      schema: schema.schema,
      onError: (err) => errors.push(err),
    });
    const errand = await openErrand({ store, logger: silentLogger(), waitRecheck: "1h" });
    cleanups.push(async () => {
      await errand.close();
      await store.close();
    });
    return { store, errand, errors };
  }

  async function openProxy(): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetAddress);
    await proxy.listen();
    cleanups.push(() => proxy.close());
    return proxy;
  }

  /** Rows of `awaited` for these jobs (any waiter): a row means the finish will send a NOTIFY. */
  async function awaitedRows(ids: string[]): Promise<number> {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM "${schema.schema}".awaited WHERE job_id = ANY($1::bigint[])`,
      [ids],
    );
    return rows[0].n;
  }

  const allCompleted = async (ids: string[]) =>
    (await Promise.all(ids.map((id) => worker.getJob(id)))).every((j) => j?.state === "completed");

  before(async () => {
    schema = freshSchema("errand_silent_listen");
    worker = await openErrand({
      url: postgresUrl(),
      schema: schema.schema,
      logger: silentLogger(),
      jobs: [gated, never, late, race],
    });
    admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await worker.close();
    await admin.end();
    await schema.drop();
  });

  test("jobs finished while the LISTEN connection was silent are looked up after the notifier reconnects", async () => {
    const proxy = await openProxy();
    const { store, errand, errors } = await openWaiter(proxy.url(postgresUrl()));
    store.useLease(LEASE_MS);
    const jobs = await worker.enqueueMany(
      gated,
      Array.from({ length: 5 }, (_, n) => ({ payload: { n } })),
    );
    const ids = jobs.map((j) => j.id);
    const waits = Promise.all(jobs.map((job) => errand.waitFor(job)));
    await until(async () => (await awaitedRows(ids)) === 5, "the five jobs recorded as awaited");
    await within(store.whenListening(), 10_000, "the waiter's LISTEN");

    // The worker holds all five inside their handlers, then everything of the waiter goes silent.
    const open = closeGate();
    started = 0;
    const running = worker.work({ "silent-listen": { concurrency: 5 } }, { pollInterval: 100 });
    cleanups.push(() => running.stop());
    await until(() => started === 5, "the worker running the five jobs", 30_000);
    proxy.pause({ newConnections: "pass" });
    open();
    await until(() => allCompleted(ids), "the five jobs completed", 30_000);
    assert.equal(await awaitedRows(ids), 0, "the finishes notified (the trigger dropped the awaited rows)");
    assert.ok(
      !errors.some((e) => /LISTEN/.test(e.message)),
      "the jobs finished before the notifier noticed the silence: their NOTIFY went to the dead connection",
    );

    const results = await settlesWithin(waits, "the five waits", errors);
    assert.deepEqual(
      results.map((r) => r.n),
      [0, 1, 2, 3, 4],
    );
    assert.ok(
      errors.some((e) => /LISTEN connection's check/.test(e.message)),
      "the notifier's check found the silent connection",
    );
    await running.stop();
  });

  test("a wait started while every connection is silent settles when its job finishes", async () => {
    const proxy = await openProxy();
    const { store, errand, errors } = await openWaiter(proxy.url(postgresUrl()));
    store.useLease(LEASE_MS);
    // A job nobody runs keeps the waiter subscribed (the LISTEN connection lives while a wait does).
    const keep = await worker.enqueue(never, { n: -1 });
    const kept = errand.waitFor(keep).catch((err: unknown) => err);
    await until(async () => (await awaitedRows([keep.id])) === 1, "the kept job recorded as awaited");
    await within(store.whenListening(), 10_000, "the waiter's LISTEN");
    const lateJob = await worker.enqueue(late, { n: 7 });

    // Lookups of the late job: the last one the reconnect asks for must be over before it finishes.
    const lookups: Array<{ ids: string[]; at: number }> = [];
    const getJobs = store.getJobs.bind(store);
    store.getJobs = async (ids) => {
      try {
        return await getJobs(ids);
      } finally {
        lookups.push({ ids, at: Date.now() });
      }
    };

    proxy.pause({ newConnections: "pass" });
    const wait = errand.waitFor(lateJob);
    await until(
      () => errors.some((e) => /LISTEN connection's check/.test(e.message)),
      "the notifier finding the silence",
      30_000,
    );
    const silentFound = Date.now();
    await within(store.whenListening(), 30_000, "the waiter's LISTEN again");
    await until(
      () => lookups.some((l) => l.at >= silentFound && l.ids.includes(lateJob.id)),
      "the lookup after the reconnect",
      30_000,
    );

    const running = worker.work({ "silent-listen-late": { concurrency: 1 } }, { pollInterval: 100 });
    cleanups.push(() => running.stop());
    await until(() => allCompleted([lateJob.id]), "the late job completed", 30_000);
    const result = await settlesWithin(wait, "the wait started during the silence", errors);
    assert.deepEqual(result, { n: 7 });
    await running.stop();
    await errand.close();
    assert.ok((await kept) instanceof Error, "the kept wait ends with the errand");
  });

  test("a job awaited and finished before the first LISTEN is up settles once the LISTEN is", async () => {
    // Only the LISTEN connection goes through the proxy; the waiter's statements have their own pool.
    const proxy = await openProxy();
    const pool = new pg.Pool({ connectionString: postgresUrl(), max: 4 });
    cleanups.push(() => pool.end());
    const { store, errand, errors } = await openWaiter(proxy.url(postgresUrl()), pool);
    const job = await worker.enqueue(race, { n: 42 });

    // The LISTEN connection opens with the first wait; the proxy holds its bytes.
    proxy.pause();
    let listening = false;
    void store.whenListening().then(() => {
      listening = true;
    });
    const wait = errand.waitFor(job);
    await until(async () => (await awaitedRows([job.id])) === 1, "the job recorded as awaited");
    assert.equal(proxy.connections, 1, "the LISTEN connection is held in the proxy");

    const running = worker.work({ "silent-listen-race": { concurrency: 1 } }, { pollInterval: 100 });
    cleanups.push(() => running.stop());
    await until(() => allCompleted([job.id]), "the job completed", 30_000);
    await running.stop();
    assert.equal(await awaitedRows([job.id]), 0, "the finish notified (the trigger dropped the awaited row)");
    assert.equal(listening, false, "the job finished before the waiter's first LISTEN");

    proxy.resume();
    await within(store.whenListening(), 20_000, "the waiter's first LISTEN");
    const result = await settlesWithin(wait, "the wait after the first LISTEN", errors);
    assert.deepEqual(result, { n: 42 });
    // A connection that failed first would make it a reconnect (a different path, covered above).
    assert.deepEqual(
      errors.map((e) => e.message),
      [],
      "the first LISTEN went through at its first try",
    );
  });
});
