/**
 * PostgreSQL store: what only Postgres has (migrations under an advisory lock, transactional
 * enqueue on the caller's client, concurrency between pools and processes, LISTEN/NOTIFY and its
 * reconnection, fencing, completeInTransaction, connection loss). The scripted scenario run
 * against the memory store and every other store is test/conformance/differential.test.ts.
 *
 *   node --import tsx --test test/postgres-store.test.ts
 *
 * The file uses schemas of its own in the test database, dropped at the end. Without a
 * reachable server the tests are skipped with a message — or fail when CI=true.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { z } from "zod";
import { ValidationError } from "../src/errors.js";
import { defineJob, openErrand, silentLogger } from "../src/index.js";
import {
  openPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from "../src/store/postgres/index.js";
import { INSERT_CHUNK, INSERT_CHUNK_BYTES, insertChunks } from "../src/store/postgres/insert.js";
import { LATEST_VERSION, MIGRATIONS } from "../src/store/postgres/migrations.js";
import type { NewJob } from "../src/store/types.js";
import { testClock } from "./helpers/clock.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "./helpers/postgres.js";
import { waitFor } from "./helpers/wait.js";

const skip = await skipUnlessPostgres();

const url = postgresUrl();
const schemas = new Set<string>();
const opened: PostgresStore[] = [];

function schemaName(): string {
  const name = freshSchemaName("errand_pgt");
  schemas.add(name);
  return name;
}

function open(schema: string, options: Partial<PostgresStoreOptions> = {}): PostgresStore {
  const store = openPostgresStore({ url, schema, poolSize: 4, ...options });
  opened.push(store);
  return store;
}

async function migrated(
  schema = schemaName(),
  options: Partial<PostgresStoreOptions> = {},
): Promise<PostgresStore> {
  const store = open(schema, options);
  await store.migrate();
  return store;
}

function job(queue: string, name: string, extra: Partial<NewJob> = {}): NewJob {
  return { queue, name, payload: { n: name }, priority: 0, maxAttempts: 3, ...extra };
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Resolves with the first value `subscribe` hands its callback that passes `test`; rejects after `ms`. */
function nextEvent<T>(
  subscribe: (cb: (v: T) => void) => () => void,
  test: (v: T) => boolean,
  ms = 10_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no matching event within ${ms} ms`));
    }, ms);
    const stop = subscribe((v) => {
      if (!test(v)) return;
      clearTimeout(timer);
      stop();
      resolve(v);
    });
  });
}

/** Retries `fn` while it throws (a connection the pool has not yet noticed is dead), up to `tries`. */
async function eventually<T>(fn: () => Promise<T>, tries = 20): Promise<T> {
  let last: unknown;
  for (let i = 0; i < tries; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 50 * (i + 1)));
    }
  }
  throw last;
}

// ── tests ──────────────────────────────────────────────────────────────────────────────────

describe("PostgreSQL store", { skip }, () => {
  after(async () => {
    await Promise.all(opened.map((s) => s.close().catch(() => {})));
    await Promise.all([...schemas].map((schema) => dropSchema(schema)));
  });

  describe("migrations", () => {
    it("migrates a fresh schema from five pools at once, once", async () => {
      const schema = schemaName();
      const stores = Array.from({ length: 5 }, () => open(schema, { poolSize: 2 }));
      await Promise.all(stores.map((s) => s.migrate()));
      const rows = await admin(
        async (c) => (await c.query(`SELECT version FROM "${schema}".migrations ORDER BY version`)).rows,
      );
      assert.deepStrictEqual(
        rows.map((r) => r.version),
        MIGRATIONS.map((m) => m.version),
      );
      await Promise.all(stores.map((s) => s.migrate())); // idempotent, fast path
      await stores[0].insertJobs([job("q", "x")]);
      assert.equal((await stores[4].stats())[0].pending, 1);
    });

    it("refuses a schema carrying a breaking migration it does not know", async () => {
      const store = await migrated();
      await admin((c) =>
        c.query(
          `INSERT INTO "${store.schema}".migrations (version, name, breaking) VALUES ($1, 'future', true)`,
          [LATEST_VERSION + 1],
        ),
      );
      await assert.rejects(() => store.migrate(), /cannot work with: upgrade errand/);
    });

    it("validates the schema name", () => {
      for (const bad of ["", "1abc", "a-b", 'x"; drop', "pg_catalog", "a".repeat(51)]) {
        assert.throws(() => openPostgresStore({ url, schema: bad }), ValidationError, bad);
      }
      assert.throws(() => openPostgresStore({ url: "" }), ValidationError);
    });
  });

  describe("insert", () => {
    it("inserts 12,000 jobs in input order across statements, atomically", async () => {
      const store = await migrated();
      const jobs = Array.from({ length: 12_000 }, (_, i) =>
        job("bulk", `j${i}`, { payload: { i }, key: i % 1000 === 0 ? `k${i}` : null }),
      );
      const results = await store.insertJobs(jobs);
      assert.equal(results.length, 12_000);
      results.forEach((r, i) => {
        assert.equal(r.created, true);
        assert.equal(r.job.name, `j${i}`);
        assert.deepStrictEqual(r.job.payload, { i });
      });
      const ids = results.map((r) => BigInt(r.job.id));
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], "ids follow input order");
      assert.deepStrictEqual(await store.getJob(results[11_999].job.id), results[11_999].job);

      // One bad row in the third statement: nothing of the call is stored.
      const bad = Array.from({ length: 12_000 }, (_, i) =>
        job("atomic", `j${i}`, { maxAttempts: i === 11_000 ? 1.5 : 3 }),
      );
      await assert.rejects(() => store.insertJobs(bad));
      assert.equal((await store.listJobs({ queue: "atomic" })).jobs.length, 0);
    });

    it("passes any text through its array literals: queues, names, keys and payloads", async () => {
      const store = await migrated();
      const texts = ["NULL", 'a"b', "back\\slash", "{braces},comma", " spaced ", '""', "日本 🚀", '\\\\"'];
      const batch = (round: number) =>
        texts.flatMap((text) => [
          // Keyed (INSERT_JOBS) and keyless (INSERT_NEW_JOBS) statements.
          job(`q${text}`, `n${text}`, { key: text, payload: { text, round } }),
          job(`q${text}`, `n${text}`, { key: null, payload: { [text]: text, round } }),
        ]);
      const first = await store.insertJobs(batch(1));
      for (const [i, r] of first.entries()) {
        const text = texts[Math.floor(i / 2)];
        assert.equal(r.created, true, `${JSON.stringify(text)} #${i}`);
        const stored = await store.getJob(r.job.id);
        assert.deepStrictEqual(stored, r.job);
        assert.equal(stored?.queue, `q${text}`);
        assert.equal(stored?.name, `n${text}`);
        assert.equal(stored?.key, i % 2 ? null : text, "the string NULL is a key, not no key");
      }
      // The same keys again: found, not inserted.
      const again = await store.insertJobs(batch(2));
      again.forEach((r, i) => {
        assert.equal(r.created, i % 2 === 1);
        if (i % 2 === 0) assert.equal(r.job.id, first[i].job.id);
      });
    });

    it("gives up with an error when a conflicting key's job keeps vanishing before it is read", async () => {
      const store = await migrated();
      await store.insertJobs([job("q", "x", { key: "k" })]);
      const client = await store.pool.connect();
      try {
        // The caller's client, except that every read of existing keys finds nothing (as if a
        // pruner deleted the job between our insert and our read, round after round).
        let reads = 0;
        const vanishing = {
          query(config: pg.QueryConfig) {
            if (/AS k\(queue, key\)/.test(config.text)) {
              reads++;
              return Promise.resolve({ rows: [] });
            }
            return client.query(config);
          },
        };
        await assert.rejects(
          store.insertJobs([job("q", "y"), job("q", "x", { key: "k" }), job("q", "z")], vanishing),
          /could not insert or find 1 job\(s\) with an idempotency key; try again/,
        );
        assert.equal(reads, 5, "five rounds");
      } finally {
        client.release();
      }
    });

    it("splits a batch into statements by rows and by payload size, in input order", () => {
      const sizes = (chunks: number[][]) => chunks.map((c) => c.length);
      const small = Array.from({ length: 12_001 }, () => "{}");
      assert.deepEqual(sizes(insertChunks(small)), [INSERT_CHUNK, INSERT_CHUNK, 2_001]);
      assert.deepEqual(insertChunks(small).flat(), [...small.keys()]);
      // Payloads of a third of the byte budget (× 3 for UTF-8): three per statement.
      const third = "x".repeat(INSERT_CHUNK_BYTES / 9);
      assert.deepEqual(sizes(insertChunks([third, third, third, "{}", third, third])), [3, 3]);
      // A payload alone over the budget still gets a statement of its own, never an empty one.
      const huge = "x".repeat(INSERT_CHUNK_BYTES);
      assert.deepEqual(insertChunks(["{}", huge, "{}"]), [[0], [1], [2]]);
      // Positions (a retry round) keep their order.
      assert.deepEqual(insertChunks(small, [7, 3, 11_000]), [[7, 3, 11_000]]);
    });

    it("rejects payloads Postgres cannot hold, naming the problem", async () => {
      const store = await migrated();
      await assert.rejects(
        () => store.insertJobs([job("q", "x", { payload: { s: "a\u0000b" } })]),
        /NUL character/,
      );
      await assert.rejects(
        () => store.insertJobs([job("q", "x", { payload: { n: 1n } })]),
        /not JSON-serializable/,
      );
      assert.equal((await store.stats()).length, 0);
    });

    it("keeps one job per (queue, key) under concurrent enqueue from several pools", async () => {
      const schema = schemaName();
      const stores = await Promise.all(Array.from({ length: 5 }, () => migrated(schema, { poolSize: 3 })));
      const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`);
      const rounds = await Promise.all(
        stores.flatMap((s, si) =>
          [0, 1, 2].map((r) =>
            s.insertJobs(
              // Each call has every key, some twice, in its own order.
              [...keys, ...keys.slice(0, 5)]
                .sort(() => Math.random() - 0.5)
                .map((key) => job("idem", `s${si}r${r}`, { key })),
            ),
          ),
        ),
      );
      const byKey = new Map<string, Set<string>>();
      let created = 0;
      for (const results of rounds) {
        for (const r of results) {
          const key = r.job.key as string;
          if (!byKey.has(key)) byKey.set(key, new Set());
          byKey.get(key)?.add(r.job.id);
          if (r.created) created++;
        }
      }
      assert.equal(byKey.size, keys.length);
      for (const [key, ids] of byKey) assert.equal(ids.size, 1, `one job for ${key}`);
      assert.equal(created, keys.length, "exactly one created per key");
      const stats = await stores[0].stats();
      assert.equal(stats[0].pending, keys.length);
    });
  });

  describe("transactional enqueue", () => {
    it("joins the caller's transaction: rollback leaves no job, commit leaves it", async () => {
      const store = await migrated();
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      try {
        await pool.query(`CREATE TABLE "${store.schema}".users (id serial PRIMARY KEY, email text)`);
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await client.query(`INSERT INTO "${store.schema}".users (email) VALUES ('a@x')`);
          const [r] = await store.insertJobs([job("mail", "welcome", { key: "welcome-a" })], client);
          assert.equal(r.created, true);
          assert.equal(await store.getJob(r.job.id), null, "invisible before commit");
          await client.query("ROLLBACK");
          assert.equal(await store.getJob(r.job.id), null, "gone after rollback");

          await client.query("BEGIN");
          await client.query(`INSERT INTO "${store.schema}".users (email) VALUES ('b@x')`);
          const [c] = await store.insertJobs([job("mail", "welcome", { key: "welcome-a" })], client);
          assert.equal(c.created, true, "the rolled-back key is free again");
          await client.query("COMMIT");
          assert.equal((await store.getJob(c.job.id))?.state, "pending");
        } finally {
          client.release();
        }
      } finally {
        await pool.end();
      }
    });

    it("notifies listeners only when the caller commits", async () => {
      const store = await migrated();
      const seen: Array<string | null> = [];
      const stop = store.onJobsAvailable((q) => seen.push(q));
      await store.whenListening();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query("BEGIN");
        await store.insertJobs([job("txq", "x")], client);
        await client.query("ROLLBACK");
        await client.query("BEGIN");
        await store.insertJobs([job("txq2", "y")], client);
        await client.query("COMMIT");
        // The listener subscribed before the commit records the wake-up; subscribing only now could miss it.
        const deadline = Date.now() + 10_000;
        while (!seen.includes("txq2") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        assert.ok(seen.includes("txq2"), "a wake-up for the committed enqueue");
        assert.ok(!seen.includes("txq"), "no wake-up for a rolled-back enqueue");
      } finally {
        stop();
        await client.end();
      }
    });

    it("rejects a tx that is not a node-postgres client, naming the problem", async () => {
      const store = await migrated();
      await assert.rejects(
        () => store.insertJobs([job("q", "x")], { prepare() {} }),
        (err: unknown) => {
          assert.ok(err instanceof ValidationError);
          assert.match(err.message, /tx must be a node-postgres client/);
          return true;
        },
      );
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        await assert.rejects(() => store.insertJobs([job("q", "x")], pool), /tx is a pg\.Pool/);
      } finally {
        await pool.end();
      }
      assert.equal((await store.stats()).length, 0);
    });
  });

  describe("claiming", () => {
    it("never hands one job to two claimers across pools (SKIP LOCKED)", async () => {
      const schema = schemaName();
      const stores = await Promise.all(Array.from({ length: 4 }, () => migrated(schema, { poolSize: 3 })));
      await stores[0].insertJobs(
        Array.from({ length: 3_000 }, (_, i) => job("race", `j${i}`, { priority: i % 3 })),
      );
      const claimed: string[][] = await Promise.all(
        stores.flatMap((s, si) =>
          [0, 1].map(async (k) => {
            const mine: string[] = [];
            for (;;) {
              const batch = await s.claimJobs({
                queue: "race",
                limit: 25,
                workerId: `w${si}.${k}`,
                leaseMs: 60_000,
              });
              if (batch.length === 0) return mine;
              mine.push(...batch.map((c) => c.id));
            }
          }),
        ),
      );
      const all = claimed.flat();
      assert.equal(all.length, 3_000);
      assert.equal(new Set(all).size, 3_000, "no job claimed twice");
      assert.ok(claimed.filter((c) => c.length > 0).length > 1, "the work was shared");
    });

    it("fences a stale lease: it can neither finish, extend, nor report progress", async () => {
      const store = await migrated();
      await store.insertJobs([job("fence", "x")]);
      const [first] = await store.claimJobs({ queue: "fence", limit: 1, workerId: "slow", leaseMs: -1 });
      assert.equal((await store.rescueExpiredLeases()).length, 1);
      const [second] = await store.claimJobs({ queue: "fence", limit: 1, workerId: "fast", leaseMs: 60_000 });
      assert.equal(second.id, first.id);
      assert.equal(second.leaseToken, first.leaseToken + 1);
      assert.deepStrictEqual(await store.extendLeases([first], 60_000), [
        { id: first.id, held: false, cancelRequested: false },
      ]);
      assert.equal(await store.setProgress(first, { fraction: 1 }), false);
      assert.deepStrictEqual(await store.finishJobs([{ ...first, kind: "completed", worker: "slow" }]), [
        false,
      ]);
      assert.deepStrictEqual(await store.finishJobs([{ ...second, kind: "completed", worker: "fast" }]), [
        true,
      ]);
      const done = await store.getJob(first.id);
      assert.equal(done?.state, "completed");
      assert.deepStrictEqual(
        done?.attempts.map((a) => [a.attempt, a.outcome, a.worker]),
        [
          [1, "lost", "slow"],
          [2, "completed", "fast"],
        ],
      );
    });

    it("rescues each expired lease once when many rescuers run at once", async () => {
      const schema = schemaName();
      const stores = await Promise.all(Array.from({ length: 4 }, () => migrated(schema, { poolSize: 2 })));
      await stores[0].insertJobs(Array.from({ length: 2_500 }, (_, i) => job("lost", `j${i}`)));
      await stores[0].claimJobs({ queue: "lost", limit: 2_500, workerId: "dead", leaseMs: -1 });
      const rescued = (
        await Promise.all(stores.flatMap((s) => [s.rescueExpiredLeases(), s.rescueExpiredLeases()]))
      ).flat();
      assert.equal(rescued.length, 2_500);
      assert.equal(new Set(rescued.map((r) => r.id)).size, 2_500);
      const sample = await stores[1].getJob(rescued[0].id);
      assert.equal(sample?.attempts.length, 1);
      assert.equal(sample?.state, "pending");
    });
  });

  describe("completeInTransaction", () => {
    async function setup() {
      const store = await migrated();
      await store.pool.query(`CREATE TABLE "${store.schema}".effects (job_id text PRIMARY KEY)`);
      await store.insertJobs([job("tx", "x")]);
      const [claimed] = await store.claimJobs({ queue: "tx", limit: 1, workerId: "w", leaseMs: 60_000 });
      const effects = async () =>
        (await store.pool.query(`SELECT job_id FROM "${store.schema}".effects`)).rows.length;
      const write = (tx: unknown) =>
        (tx as pg.PoolClient).query(`INSERT INTO "${store.schema}".effects VALUES ($1)`, [claimed.id]);
      return { store, claimed, effects, write };
    }

    it("commits the handler's write and the completion together", async () => {
      const { store, claimed, effects, write } = await setup();
      const result = await store.completeInTransaction(claimed, "w", async (tx) => {
        await write(tx);
        return { done: 1 };
      });
      assert.deepStrictEqual(result, { applied: true, value: { done: 1 } });
      assert.equal(await effects(), 1);
      const done = await store.getJob(claimed.id);
      assert.equal(done?.state, "completed");
      assert.deepStrictEqual(done?.result, { done: 1 });
    });

    it("with a lost lease does nothing: no business write, no completion", async () => {
      const { store, claimed, effects, write } = await setup();
      const stale = { id: claimed.id, leaseToken: claimed.leaseToken + 1 };
      let ran = false;
      const result = await store.completeInTransaction(stale, "w", async (tx) => {
        ran = true;
        await write(tx);
      });
      assert.deepStrictEqual(result, { applied: false });
      assert.equal(ran, false);
      assert.equal(await effects(), 0);
      assert.equal((await store.getJob(claimed.id))?.state, "running");
    });

    it("rolls the business write back when the handler throws", async () => {
      const { store, claimed, effects, write } = await setup();
      await assert.rejects(
        () =>
          store.completeInTransaction(claimed, "w", async (tx) => {
            await write(tx);
            throw new Error("after the write");
          }),
        /after the write/,
      );
      assert.equal(await effects(), 0);
      assert.equal((await store.getJob(claimed.id))?.state, "running");
      assert.deepStrictEqual(await store.extendLeases([claimed], 60_000), [
        { id: claimed.id, held: true, cancelRequested: false },
      ]);
    });

    it("holds the lease while the handler runs: a rescuer cannot take the job", async () => {
      const clock = testClock();
      const store = await migrated(schemaName(), { clock });
      await store.insertJobs([job("tx", "x")]);
      const [claimed] = await store.claimJobs({ queue: "tx", limit: 1, workerId: "w", leaseMs: 50 });
      const result = await store.completeInTransaction(claimed, "w", async () => {
        clock.advance(120); // the lease expires meanwhile
        return await store.rescueExpiredLeases();
      });
      assert.equal(result.applied, true);
      assert.deepStrictEqual(result.value, []);
      assert.equal((await store.getJob(claimed.id))?.attempts.length, 1);
    });
  });

  describe("LISTEN/NOTIFY", () => {
    it("wakes listeners with the queue name, per schema", async () => {
      const schema = schemaName();
      const listener = await migrated(schema);
      const producer = await migrated(schema);
      const other = await migrated(); // another schema in the same database
      const seen: Array<string | null> = [];
      const stop = listener.onJobsAvailable((q) => seen.push(q));
      await listener.whenListening();
      await other.insertJobs([job("elsewhere", "x")]);
      const woke = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === "mail",
      );
      await producer.insertJobs([job("mail", "a"), job("mail", "b"), job("sms", "c")]);
      assert.equal(await woke, "mail");
      // Retries wake too.
      const [c] = await producer.claimJobs({ queue: "sms", limit: 1, workerId: "w", leaseMs: 60_000 });
      const retried = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === "sms",
      );
      await producer.finishJobs([
        { ...c, kind: "retry", worker: "w", error: { message: "x", kind: "retryable" } },
      ]);
      assert.equal(await retried, "sms");
      stop();
      assert.ok(!seen.includes("elsewhere"), "no cross-talk between schemas");
      assert.equal(seen.filter((q) => q === "mail").length, 1, "one notification per queue per statement");
    });

    it("reconnects after pg_terminate_backend and signals null (jobs may have been missed)", async () => {
      const schema = schemaName();
      const errors: Error[] = [];
      const listener = await migrated(schema, { onError: (e) => errors.push(e) });
      const producer = await migrated(schema);
      const stop = listener.onJobsAvailable(() => {});
      await listener.whenListening();
      const reconnected = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === null,
      );
      const killed = await admin(
        async (c) =>
          (
            await c.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
              [`errand-listen:${schema}`],
            )
          ).rowCount,
      );
      assert.equal(killed, 1);
      assert.equal(await reconnected, null);
      await listener.whenListening();
      const woke = nextEvent<string | null>(
        (cb) => listener.onJobsAvailable(cb),
        (q) => q === "after",
      );
      await producer.insertJobs([job("after", "x")]);
      assert.equal(await woke, "after");
      assert.ok(errors.length >= 1, "the drop was reported to onError");
      stop();
    });

    it("wakes in-process listeners before the LISTEN connection is up", async () => {
      const store = await migrated();
      const woke = nextEvent<string | null>(
        (cb) => store.onJobsAvailable(cb),
        (q) => q === "early",
      );
      await store.insertJobs([job("early", "x")]); // races the LISTEN
      assert.equal(await woke, "early");
    });
  });

  describe("connection loss", () => {
    it("survives every connection of its pool being killed", async () => {
      const schema = schemaName();
      const errors: Error[] = [];
      const store = await migrated(schema, { onError: (e) => errors.push(e) });
      store.onJobsAvailable(() => {});
      await store.whenListening();
      await store.insertJobs([job("k", "x")]);
      await Promise.all([store.stats(), store.getJob("1"), store.now()]); // warm several clients
      const killed = await admin(
        async (c) =>
          (
            await c.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ANY($1)",
              [[`errand:${schema}`, `errand-listen:${schema}`]],
            )
          ).rowCount,
      );
      assert.ok((killed ?? 0) >= 2, `killed ${killed} connections`);
      const claimed = await eventually(() =>
        store.claimJobs({ queue: "k", limit: 1, workerId: "w", leaseMs: 60_000 }),
      );
      assert.equal(claimed.length, 1);
      assert.deepStrictEqual(await store.finishJobs([{ ...claimed[0], kind: "completed", worker: "w" }]), [
        true,
      ]);
      await store.whenListening();
    });

    it("throws from a method when the database cannot be reached", async () => {
      const store = open(schemaName(), { url: "postgres://postgres@127.0.0.1:1/test" });
      await assert.rejects(() => store.now(), /ECONNREFUSED|connect/);
    });
  });

  describe("upkeep (vacuum of the churning tables)", () => {
    /** Runs `n` jobs through claim and finish (two dead row versions each), then closes the store: its backends flush their statistics as they exit. */
    async function churn(schema: string, n: number): Promise<void> {
      const store = await migrated(schema);
      await store.insertJobs(Array.from({ length: n }, (_, i) => job("churn", `j${i}`)));
      const claimed = await store.claimJobs({ queue: "churn", limit: n, workerId: "w", leaseMs: 60_000 });
      assert.equal(claimed.length, n);
      await store.finishJobs(claimed.map((c) => ({ ...c, kind: "completed" as const, worker: "w" })));
      await store.close();
    }

    const vacuumStats = (schema: string) =>
      admin(async (c) => {
        const { rows } = await c.query(
          "SELECT vacuum_count::int AS vacuums, n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relid = $1::regclass",
          [`"${schema}".jobs`],
        );
        return rows[0] as { vacuums: number; dead: number };
      });

    it("vacuums the jobs table once its dead rows pass the threshold, and not before", async () => {
      const schema = schemaName();
      await churn(schema, 200);
      await waitFor(
        async () => (await vacuumStats(schema)).dead >= 400,
        "the churn's dead rows in the statistics",
      );

      await open(schema, { vacuumDeadRows: 1_000 }).upkeep();
      assert.equal((await vacuumStats(schema)).vacuums, 0, "400 dead rows are under a threshold of 1,000");
      await open(schema, { vacuumDeadRows: 0 }).upkeep();
      assert.equal((await vacuumStats(schema)).vacuums, 0, "0 turns it off");

      await open(schema, { vacuumDeadRows: 300 }).upkeep();
      const after = await vacuumStats(schema);
      assert.equal(after.vacuums, 1);
      assert.equal(after.dead, 0);
    });

    it("is run by a worker on its own", async () => {
      const schema = schemaName();
      await churn(schema, 50);
      await waitFor(
        async () => (await vacuumStats(schema)).dead >= 100,
        "the churn's dead rows in the statistics",
      );
      const store = open(schema, { vacuumDeadRows: 10 });
      const noop = defineJob({ name: "noop", queue: "churn", schema: z.object({}), run: () => {} });
      const errand = await openErrand({ store, jobs: [noop], logger: silentLogger() });
      const worker = errand.work({ churn: { concurrency: 1 } });
      try {
        await waitFor(
          async () => (await vacuumStats(schema)).vacuums >= 1,
          "the worker's vacuum",
          15_000,
          100,
        );
      } finally {
        await worker.stop();
        await errand.close();
      }
    });

    it("rejects a threshold that is not a non-negative integer", () => {
      for (const bad of [-1, 1.5, Number.NaN]) {
        assert.throws(
          () => open(schemaName(), { vacuumDeadRows: bad }),
          (err: Error) => {
            assert.ok(err instanceof ValidationError);
            assert.match(err.message, /vacuumDeadRows must be a non-negative integer/);
            return true;
          },
        );
      }
    });
  });

  describe("retention and stats", () => {
    it("prunes by age in batches: completed/cancelled and failed on their own clocks", async () => {
      const store = await migrated();
      await store.insertJobs(Array.from({ length: 30 }, (_, i) => job("old", `j${i}`)));
      const claimed = await store.claimJobs({ queue: "old", limit: 30, workerId: "w", leaseMs: 60_000 });
      await store.finishJobs(
        claimed.map((c, i) => ({
          ...c,
          kind: i < 10 ? "completed" : i < 20 ? "failed" : "cancelled",
          worker: "w",
          error: i >= 10 && i < 20 ? { message: "x", kind: "permanent" as const } : undefined,
        })),
      );
      await store.pool.query(
        `UPDATE "${store.schema}".jobs SET finished_at = finished_at - interval '8 days'`,
      );
      const day = 86_400_000;
      assert.equal(await store.pruneFinished({ completedAgeMs: 7 * day, failedAgeMs: 30 * day }), 20);
      const left = await store.stats();
      assert.equal(left[0].failed, 10);
      assert.equal(left[0].completed + left[0].cancelled, 0);
      assert.equal(await store.pruneFinished({ completedAgeMs: 7 * day, failedAgeMs: 7 * day }), 10);
    });

    it("counts last hour and last day from finished_at", async () => {
      const store = await migrated();
      await store.insertJobs(Array.from({ length: 6 }, (_, i) => job("s", `j${i}`)));
      const claimed = await store.claimJobs({ queue: "s", limit: 6, workerId: "w", leaseMs: 60_000 });
      await store.finishJobs(claimed.map((c) => ({ ...c, kind: "completed" as const, worker: "w" })));
      const ids = claimed.map((c) => c.id);
      await store.pool.query(
        `UPDATE "${store.schema}".jobs SET finished_at = finished_at - interval '2 hours' WHERE id = ANY($1)`,
        [ids.slice(0, 2)],
      );
      await store.pool.query(
        `UPDATE "${store.schema}".jobs SET finished_at = finished_at - interval '2 days' WHERE id = ANY($1)`,
        [ids.slice(2, 3)],
      );
      const [s] = await store.stats();
      assert.deepStrictEqual([s.completed, s.completedLastHour, s.completedLastDay], [6, 3, 5]);
      const buckets = await store.throughput(3 * 3_600_000, 3_600_000);
      assert.equal(
        buckets.reduce((n, b) => n + b.completed, 0),
        5,
      );
    });
  });
});
