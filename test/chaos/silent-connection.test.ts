/**
 * Silent PostgreSQL connections (issue 12): connections that stay open but carry nothing — a
 * lost NAT entry, a frozen database VM, a stalled pooler. The worker's store goes through a TCP
 * proxy on loopback (proxy.ts) that black-holes them; the shared server is never touched.
 *
 * - Every connection of a running worker goes silent (new ones get through): the worker warns,
 *   drops the dead connections, opens new ones and goes on claiming and completing; stop() and
 *   close() end in bounded time.
 * - The connection goes silent inside completeInTransaction, the job's row locked: the server
 *   ends that transaction (idle_in_transaction_session_timeout sized from the lease), so another
 *   worker rescues the job soon after its lease expires instead of ~2 h later (TCP keepalive).
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { z } from "zod";
import { createLogger, defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { within } from "../helpers/wait.js";
import { TcpProxy } from "./proxy.js";

const skip = await skipUnlessPostgres();
const LEASE_MS = 2_000;

/** A logger whose lines (JSON) are kept for the test to read. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string; err?: { message?: string } }> = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ pretty: false, level: "info", destination }), lines };
}

/** Polls without failing the test: returns false after `ms` (the caller asserts). */
async function eventually(check: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe("silent PostgreSQL connections", { skip }, () => {
  const target = new URL(postgresUrl());
  let proxy: TcpProxy;
  let schema: { schema: string; drop: () => Promise<void> };
  let admin: Errand;
  const cleanups: Array<() => Promise<void>> = [];

  before(async () => {
    proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.listen();
    schema = freshSchema("errand_silent");
  });
  after(async () => {
    // Whatever a failed test left hanging: drop every proxied connection first.
    proxy.resume();
    proxy.cut();
    for (const cleanup of cleanups.reverse()) {
      console.error("cleanup", cleanup.toString().slice(0, 80));
      await cleanup().catch(() => {});
    }
    console.error("cleanups done");
    await proxy.close();
    await schema.drop();
  });

  test("all connections black-holed: the worker warns, reconnects and goes on", async () => {
    const done = new Set<string>();
    const tick = defineJob({
      name: "silent.tick",
      queue: "silent-a",
      schema: z.object({ n: z.number() }),
      run: (_p, ctx) => {
        done.add(ctx.job.id);
      },
    });
    admin = await openErrand({ url: postgresUrl(), schema: schema.schema, logger: silentLogger() });
    cleanups.push(() => admin.close());
    const { logger, lines } = capturingLogger();
    const errand = await openErrand({
      url: proxy.url(postgresUrl()),
      schema: schema.schema,
      logger,
      jobs: [tick],
    });
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await errand.close();
    });
    const worker = errand.work({ "silent-a": { concurrency: 2 } }, { lease: LEASE_MS, pollInterval: 200 });
    const first = await admin.enqueueMany(tick, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    assert.ok(
      await eventually(() => first.every((j) => done.has(j.id)), 30_000),
      "the worker completes jobs before the black hole",
    );

    const warningsBefore = lines.filter((l) => l.level >= 40).length;
    proxy.pause({ newConnections: "pass" });
    const pausedAt = Date.now();
    const second = await admin.enqueueMany(
      tick,
      Array.from({ length: 5 }, (_, i) => ({ payload: { n: 10 + i } })),
    );
    // A lease or two to notice (the query timeout is sized from the lease), then a few seconds
    // of slack for a loaded machine; without timeouts the worker waits ~2 h (TCP keepalive).
    const bound = 4 * LEASE_MS + 10_000;
    const completed = await eventually(async () => {
      const jobs = await Promise.all(second.map((j) => admin.getJob(j.id)));
      return jobs.every((j) => j?.state === "completed");
    }, bound);
    const warnings = lines.slice(0).filter((l) => l.level >= 40);
    assert.ok(
      completed,
      `the worker completes the jobs enqueued after the black hole within ${bound} ms; warnings: ${JSON.stringify(warnings.map((w) => w.msg))}`,
    );
    assert.ok(warnings.length > warningsBefore, "a warning is logged");
    assert.ok(
      warnings.some((w) => /did not answer|silent/i.test(`${w.msg} ${w.err?.message ?? ""}`)),
      `a warning says the connection went silent: ${JSON.stringify(warnings.map((w) => [w.msg, w.err?.message]))}`,
    );
    assert.ok(Date.now() - pausedAt < bound);

    // The black-holed connections are still open: stop() and close() must not wait for them.
    await within(worker.stop(), 4 * LEASE_MS + 10_000, "worker.stop() with black-holed connections");
    await within(errand.close(), 4 * LEASE_MS + 10_000, "errand.close() with black-holed connections");
    closed = true;
    proxy.resume();
  });

  test("black-holed inside completeInTransaction: another worker rescues the job within a lease or two", async () => {
    proxy.resume();
    let inside: (() => void) | undefined;
    const reachedTx = new Promise<void>((resolve) => {
      inside = resolve;
    });
    const attempts: string[] = [];
    const effect = defineJob({
      name: "silent.effect",
      queue: "silent-b",
      schema: z.object({}),
      async run(_p, ctx) {
        attempts.push(ctx.attempt === 1 ? "first" : "again");
        await ctx.completeInTransaction(async (tx) => {
          if (ctx.attempt === 1) {
            // The row is locked now; the connection goes silent before our next statement.
            inside?.();
            proxy.pause();
          }
          await (tx as pg.PoolClient).query("SELECT 1");
        });
      },
    });
    const silentErrand = await openErrand({
      url: proxy.url(postgresUrl()),
      schema: schema.schema,
      logger: silentLogger(),
      jobs: [effect],
    });
    cleanups.push(() => silentErrand.close());
    const silentWorker = silentErrand.work(
      { "silent-b": { concurrency: 1 } },
      { lease: LEASE_MS, shutdownTimeout: 1_000 },
    );
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await silentWorker.stop();
    });
    const job = await admin.enqueue(effect, {});
    await within(reachedTx, 30_000, "the first attempt inside completeInTransaction");
    const silentAt = Date.now();

    // The other worker connects directly (not through the proxy).
    const rescuer = await openErrand({
      url: postgresUrl(),
      schema: schema.schema,
      logger: silentLogger(),
      jobs: [effect],
    });
    cleanups.push(() => rescuer.close());
    const rescuerWorker = rescuer.work({ "silent-b": { concurrency: 1 } }, { lease: LEASE_MS });
    cleanups.push(async () => {
      await rescuerWorker.stop();
    });

    // The lease expires a lease after the last heartbeat; the server drops the silent
    // transaction a lease or so after its last statement; the rescuer runs every half lease.
    const bound = 5 * LEASE_MS + 10_000;
    const completed = await eventually(
      async () => (await admin.getJob(job.id))?.state === "completed",
      bound,
    );
    const locks = await idleInTransaction(schema.schema);
    assert.ok(
      completed,
      `the job is rescued and completed within ${bound} ms of the black hole (state ${(await admin.getJob(job.id))?.state}; idle-in-transaction backends of this schema: ${locks})`,
    );
    const final = await admin.getJob(job.id);
    assert.deepEqual(
      final?.attempts.map((a) => a.outcome),
      ["lost", "completed"],
    );
    assert.deepEqual(attempts, ["first", "again"]);
    assert.equal(await idleInTransaction(schema.schema), 0, "no backend of ours is left idle in transaction");
    assert.ok(Date.now() - silentAt < bound);

    // The silent worker never reaches the database again (new connections are held too): its
    // stop() gives up on the outcome it cannot record, and close() does not wait either.
    await within(silentWorker.stop(), 90_000, "stop() of a worker whose database went silent");
    stopped = true;
    await within(silentErrand.close(), 30_000, "close() of a store whose connections went silent");
    proxy.resume();
  });
});

/** Backends of errand's connections for `schema` that sit idle inside a transaction. */
async function idleInTransaction(schema: string): Promise<number> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'",
      [`errand:${schema}`],
    );
    return rows[0].n;
  } finally {
    await client.end();
  }
}
