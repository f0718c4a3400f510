/**
 * The claim answers with one row of arrays (src/store/postgres/claim-arrays.ts): text arrays as
 * Postgres prints them, payloads joined by U+0001. These tests feed the decoder what the server
 * really prints for values that need quoting, and claim jobs whose keys, names, queues and
 * payloads hold them, so a decoder that only splits on commas, or that takes the word NULL for
 * SQL NULL, fails.
 *
 *   node --import tsx --test test/postgres-store/claim-arrays.test.ts
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { parseTextArray } from "../../src/store/postgres/claim-arrays.js";
import * as Q from "../../src/store/postgres/queries.js";
import { admin, describePostgresStore, job, migrated, schemaName } from "./setup.js";

/** Values a text array must quote or escape, and some it need not. */
const AWKWARD = [
  "plain",
  "a,b",
  "NULL",
  "null",
  "",
  ' "quoted" ',
  "back\\slash",
  "\\",
  '"',
  "{braces}",
  "tab\tand\nnewline",
  "ünï¢ødé ✓",
  "trailing\\",
  'comma,\\,quote"',
];

describePostgresStore(() => {
  it("parses text arrays exactly as the server prints them", async () => {
    const printed = await admin(async (c) => {
      const { rows } = await c.query("SELECT $1::text[]::text AS t, $2::text[]::text AS plain", [
        [...AWKWARD, null],
        ["q", "email.send", null],
      ]);
      return rows[0] as { t: string; plain: string };
    });
    assert.deepEqual(parseTextArray(printed.t), [...AWKWARD, null]);
    assert.deepEqual(parseTextArray(printed.plain), ["q", "email.send", null], "the split path");
    assert.deepEqual(parseTextArray("{}"), []);
    assert.throws(() => parseTextArray('{"open}'), /unterminated/);
    assert.throws(() => parseTextArray("not an array"), /not an array/);
  });

  it("claims jobs whose key, name, queue and payload need quoting, in claim order", async () => {
    const store = await migrated(schemaName());
    const queue = 'q,"1"';
    const inserted = await store.insertJobs(
      AWKWARD.map((text, i) =>
        job(queue, `name ${text}`, {
          key: text === "" ? null : text,
          priority: i % 3,
          payload: { text, control: "\u0001\u0002", n: i, nested: [null, { s: text }] },
          traceContext: i % 2 === 0 ? null : `00-${"ab".repeat(16)}-${"cd".repeat(8)}-01`,
        }),
      ),
    );
    const claimed = await store.claimJobs({ queue, limit: 100, workerId: "w", leaseMs: 60_000 });
    assert.equal(claimed.length, AWKWARD.length);
    // Claim order: priority first (highest), then run_at, then id.
    const expected = inserted
      .map((r) => r.job)
      .sort(
        (a, b) =>
          b.priority - a.priority ||
          a.runAt.getTime() - b.runAt.getTime() ||
          Number(BigInt(a.id) - BigInt(b.id)),
      );
    assert.deepEqual(
      claimed.map((c) => c.id),
      expected.map((j) => j.id),
    );
    for (const c of claimed) {
      const stored = await store.getJob(c.id);
      assert.ok(stored);
      const text = AWKWARD[(c.payload as { n: number }).n];
      assert.equal(c.queue, queue);
      assert.equal(c.name, `name ${text}`);
      assert.equal(c.key, text === "" ? null : text, "a key NULL is the word, not SQL NULL");
      assert.deepEqual(c.payload, stored.payload);
      assert.deepEqual(c.payload, {
        text,
        control: "\u0001\u0002",
        n: (c.payload as { n: number }).n,
        nested: [null, { s: text }],
      });
      assert.equal(c.priority, stored.priority);
      assert.equal(c.attempt, 1);
      assert.equal(c.maxAttempts, 3);
      assert.equal(typeof c.leaseToken, "number");
      assert.equal(c.runAt.getTime(), stored.runAt.getTime());
      assert.equal(c.createdAt.getTime(), stored.createdAt.getTime());
      assert.ok(c.lockedUntil.getTime() > Date.now() + 50_000);
    }
    assert.equal(claimed.filter((c) => c.traceContext !== null).length, Math.floor(AWKWARD.length / 2));
    assert.deepEqual(await store.claimJobs({ queue, limit: 10, workerId: "w", leaseMs: 60_000 }), []);
  });

  it("answers a claim of big payloads in parts of bounded size, and puts them together", async () => {
    // 24 payloads of 1 MB: one row would be a 24 MB text; a claim of 1,000 such jobs, 1 GB,
    // more than a Postgres text value or a JavaScript string can hold.
    const schema = schemaName();
    const store = await migrated(schema);
    const big = (i: number) => ({ i, s: String(i % 10).repeat(1_000_000) });
    const jobs = (queue: string) =>
      Array.from({ length: 24 }, (_, i) => job(queue, "big", { payload: big(i) }));
    await store.insertJobs(jobs("raw"));
    const parts = await admin(async (c) => {
      const { rows } = await c.query(Q.bindSchema(Q.CLAIM_JOBS, schema), ["raw", 100, "w", 60_000]);
      return rows as { id: string; payload: string }[];
    });
    assert.ok(parts.length >= 3, `24 MB of payloads in ${parts.length} part(s)`);
    for (const part of parts) assert.ok(part.payload.length <= 8 * 1024 * 1024 + 1_000_100);
    await store.insertJobs(jobs("store"));
    const claimed = await store.claimJobs({ queue: "store", limit: 100, workerId: "w", leaseMs: 60_000 });
    assert.equal(claimed.length, 24);
    assert.deepEqual(
      claimed.map((c) => c.payload),
      Array.from({ length: 24 }, (_, i) => big(i)),
      "every payload whole, in claim order",
    );
  });

  it("orders jobs due within one millisecond by their microseconds, not by id", async () => {
    const schema = schemaName();
    const store = await migrated(schema);
    const inserted = await store.insertJobs([job("us", "a"), job("us", "b"), job("us", "c")]);
    const ids = inserted.map((r) => r.job.id);
    await admin((c) =>
      c.query(
        `UPDATE "${schema}".jobs SET run_at = t.at FROM unnest($1::bigint[], $2::timestamptz[]) AS t(id, at) WHERE jobs.id = t.id`,
        [ids, ["2020-01-01 00:00:00.0009+00", "2020-01-01 00:00:00.0005+00", "2020-01-01 00:00:00.0001+00"]],
      ),
    );
    const claimed = await store.claimJobs({ queue: "us", limit: 10, workerId: "w", leaseMs: 60_000 });
    assert.deepEqual(
      claimed.map((c) => c.id),
      [...ids].reverse(),
      "the job due at .0001 first, though it has the highest id",
    );
  });
});
