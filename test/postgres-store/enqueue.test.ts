/**
 * PostgreSQL store: inserting jobs (batches split into statements, any text through the array
 * literals, payload limits, one job per key across pools) and the transactional enqueue on the
 * caller's own client.
 *
 *   node --import tsx --test test/postgres-store/enqueue.test.ts
 *
 * Each file uses schemas of its own in the test database, dropped at the end (setup.ts). Without a
 * reachable server the tests are skipped with a message — or fail when CI=true.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { ValidationError } from "../../src/errors.js";
import { INSERT_CHUNK, INSERT_CHUNK_BYTES, insertChunks } from "../../src/store/postgres/insert.js";
import { admin, describePostgresStore, job, migrated, schemaName, url } from "./setup.js";

describePostgresStore(() => {
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

    it("a client outside a transaction (no BEGIN) gets one of its own: a failure halfway stores nothing", async () => {
      const store = await migrated();
      const [dep] = await store.insertJobs([job("q", "dep")]);
      // The edge's write, after the job's insert statement, fails (a stand-in for any error there).
      await admin(async (c) => {
        await c.query(`CREATE FUNCTION "${store.schema}".refuse() RETURNS trigger LANGUAGE plpgsql
          AS $$ BEGIN RAISE EXCEPTION 'edge refused'; END $$`);
        await c.query(`CREATE TRIGGER refuse BEFORE INSERT ON "${store.schema}".job_dependencies
          FOR EACH ROW EXECUTE FUNCTION "${store.schema}".refuse()`);
      });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const dependent = job("q", "dependent", {
          dependencies: { ids: [dep.job.id], rows: [], onFailure: "fail" },
        });
        await assert.rejects(() => store.insertJobs([dependent], client), /edge refused/);
        const names = (await store.listJobs({ limit: 10 })).jobs.map((j) => j.name);
        assert.deepEqual(names, ["dep"], "the dependent job was not left stored, pending, without its edge");
        // The client is left as it was given: outside a transaction, each later call its own.
        const [alone] = await store.insertJobs([job("q", "alone")], client);
        assert.equal((await store.getJob(alone.job.id))?.state, "pending", "committed on return");
      } finally {
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
});
