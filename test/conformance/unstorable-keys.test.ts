/**
 * The keys errand stores besides the payload, on every store (test/helpers/targets.ts): an
 * enqueue's idempotency `key` (with or without a `unique` scope), a debounce key (given, or from
 * a definition's key function) and a flow key (from a definition's `concurrency` or `rateLimit`
 * key function). A key no store can hold as given — with a NUL character (PostgreSQL text refuses
 * it), with a lone UTF-16 surrogate (SQLite and PostgreSQL write U+FFFD in its place: another
 * key), empty, over 512 characters, or not a string — is the same ValidationError on every store,
 * naming the field and the problem, thrown before anything is written: through enqueue,
 * enqueueMany (one bad item refuses the whole call, as documented: the good ones are not stored
 * either), enqueueFlow, and inside the application's transaction, which stays usable. The queue
 * keeps working: its good jobs are claimed and run.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type Database from "better-sqlite3";
import type pg from "pg";
import { z } from "zod";
import { defineJob, type Errand, ValidationError } from "../../src/index.js";
import { sqlTargets, targets, withErrand } from "../helpers/targets.js";

const NUL = /contains a NUL character \(\\u0000\), which cannot be stored/;
const SURROGATE = /contains a lone UTF-16 surrogate \(invalid Unicode\)/;
const notString = (got: string) =>
  new RegExp(`must be a non-empty string of at most 512 characters; got ${literal(got)}$`);

/** Values no store can hold as a key, each with the problem its error must name. */
const BAD: Record<string, { value: unknown; problem: RegExp }> = {
  nul: { value: "tenant\u0000a", problem: NUL },
  surrogate: { value: "tenant\ud800", problem: SURROGATE },
  "sentinel-like": { value: "\u0000debounce", problem: NUL },
  empty: { value: "", problem: notString("a string of 0") },
  "one-megabyte": { value: "k".repeat(1024 * 1024), problem: notString("a string of 1048576") },
  "one-too-long": { value: "k".repeat(513), problem: notString("a string of 513") },
  number: { value: 42, problem: notString("42") },
  object: { value: { a: 1 }, problem: notString('{"a":1}') },
};
/** The same, as a key function may return them (undefined too: a payload without the field). */
const BAD_RETURNS: Record<string, { value: unknown; problem: RegExp }> = {
  ...BAD,
  undefined: { value: undefined, problem: notString("undefined") },
};

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A key function's answer: the bad value a payload names, else the payload's own key. */
const keyOf = (p: { key: string }) => (p.key in BAD_RETURNS ? BAD_RETURNS[p.key].value : p.key) as string;

const schema = z.object({ key: z.string() });
const plain = defineJob({ name: "plain", queue: "plain", schema, run: () => {} });
const debounced = defineJob({
  name: "debounced",
  queue: "debounced",
  schema,
  debounce: { key: keyOf, delay: "1h" },
  run: () => {},
});
const perTenant = defineJob({
  name: "per-tenant",
  queue: "per-tenant",
  schema,
  concurrency: { key: keyOf, limit: 1 },
  run: () => {},
});
const rated = defineJob({
  name: "rated",
  queue: "rated",
  schema,
  rateLimit: { limit: 1000, per: "1s", key: keyOf },
  run: () => {},
});
const jobs = [plain, debounced, perTenant, rated];

type Item = { payload: { key: string }; [option: string]: unknown };

/** Each stored key: how an item carries a value into it, and the start of its error message. */
const FIELDS: Array<{ field: string; job: typeof plain; item: (bad: string) => Item; names: string }> = [
  {
    field: "idempotency key",
    job: plain,
    item: (bad) => ({ payload: { key: "p" }, key: BAD[bad].value }),
    names: "key",
  },
  {
    field: "scoped key (unique + onConflict)",
    job: plain,
    item: (bad) => ({
      payload: { key: "p" },
      key: BAD[bad].value,
      unique: { while: "pending" },
      onConflict: "replace",
    }),
    names: "key",
  },
  {
    field: "debounce key of the enqueue",
    job: plain,
    item: (bad) => ({ payload: { key: "p" }, debounce: { key: BAD[bad].value, delay: "1h" } }),
    names: "debounce.key",
  },
  {
    field: "debounce key from the definition's key function",
    job: debounced,
    item: (bad) => ({ payload: { key: bad } }),
    names: 'the debounce key of job "debounced" (from its key function)',
  },
  {
    field: "flow key from concurrency.key",
    job: perTenant,
    item: (bad) => ({ payload: { key: bad } }),
    names: 'the flow key of job "per-tenant" (from its key function)',
  },
  {
    field: "flow key from rateLimit.key",
    job: rated,
    item: (bad) => ({ payload: { key: bad } }),
    names: 'the flow key of job "rated" (from its key function)',
  },
];

/** Every job of the store, to show nothing was written. */
async function allJobs(errand: Errand) {
  return (await errand.listJobs({ limit: 1000 })).jobs;
}

/** `call` is refused with a ValidationError: `prefix` then the problem, and nothing is stored. */
async function refused(errand: Errand, call: () => Promise<unknown>, prefix: string, problem: RegExp) {
  const before = (await allJobs(errand)).length;
  await assert.rejects(call, (err: Error) => {
    assert.ok(
      err instanceof ValidationError,
      `a ValidationError, got ${err.constructor.name}: ${err.message}`,
    );
    assert.ok(err.message.startsWith(prefix), `"${err.message.slice(0, 300)}" starts with "${prefix}"`);
    assert.match(err.message.slice(prefix.length), problem);
    assert.ok(err.message.length < 500, `a message of ${err.message.length} characters, not the key itself`);
    return true;
  });
  assert.equal((await allJobs(errand)).length, before, "nothing stored");
}

/** A key every store holds as given: U+FFFD itself, non-ASCII, a surrogate pair. */
const GOOD_KEY = "tenant\ufffd-é-😀";

const ids = (list: Array<{ id: string }>) => list.map((j) => j.id).sort();

const keyless = (item: Item) => item.payload.key in BAD_RETURNS;

for (const target of targets) {
  describe(`unstorable keys: ${target.name}`, { skip: target.skip || false }, () => {
    for (const { field, job, item, names } of FIELDS) {
      // A function's key may also be undefined; a given one of undefined means "no key".
      const values = job === plain ? Object.keys(BAD) : Object.keys(BAD_RETURNS);
      test(`${field}: refused by enqueue, enqueueMany and enqueueFlow, nothing stored; good keys still work`, () =>
        withErrand(
          target,
          async (errand) => {
            for (const bad of values) {
              const { payload, ...options } = item(bad);
              const problem = BAD_RETURNS[bad].problem;
              await refused(
                errand,
                () => errand.enqueue(job, payload, options),
                `payload: ${names} `,
                problem,
              );
              const good = (key: string): Item => withKey(item(bad), key);
              await refused(
                errand,
                () => errand.enqueueMany(job, [good(`first-${bad}`), item(bad), good(`last-${bad}`)]),
                `item 1 payload: ${names} `,
                problem,
              );
              if (job !== plain) {
                // A flow node takes no key or debounce option of its own; a definition's key function applies.
                await refused(
                  errand,
                  () =>
                    errand.enqueueFlow({
                      jobs: {
                        first: { job, payload: { key: `flow-${bad}` } },
                        bad: { job, payload, dependsOn: ["first"] },
                      },
                    }),
                  `flow job "bad" payload: ${names} `,
                  problem,
                );
              }
            }
            // The queue keeps working: a good key is stored as given, and the job claimed with it.
            const { payload, ...options } = withKey(item("nul"), GOOD_KEY);
            const stored = await errand.enqueue(job, payload, options);
            assert.equal(stored.created, true);
            assert.deepEqual(ids(await allJobs(errand)), [stored.id], "only the good job is stored");
            if ("debounce" in options || job === debounced) {
              assert.equal((await errand.getJob(stored.id))?.key, GOOD_KEY, "debounced: due in an hour");
              return;
            }
            const claim = { queue: job.queue, limit: 10, workerId: "w", leaseMs: 60_000 };
            const [claimed] =
              job === plain
                ? await errand.store.claimJobs(claim)
                : (await errand.store.claimFlowJobs({ ...claim, flow: { keyConcurrency: 1 } })).jobs;
            assert.equal(claimed?.id, stored.id, "the good job is claimed");
            assert.equal(job === plain ? claimed.key : claimed.flowKey, GOOD_KEY);
          },
          { jobs },
        ));
    }

    test("a lone surrogate does not meet the job of the key a store would write for it (U+FFFD)", () =>
      withErrand(
        target,
        async (errand) => {
          const holder = await errand.enqueue(plain, { key: "p" }, { key: "tenant\ufffd" });
          await refused(
            errand,
            () => errand.enqueue(plain, { key: "p" }, { key: "tenant\ud800" }),
            "payload: key ",
            SURROGATE,
          );
          await refused(
            errand,
            () =>
              errand.enqueueMany(plain, [
                { payload: { key: "good" } },
                { payload: { key: "p" }, key: "tenant\udfff" },
              ]),
            "item 1 payload: key ",
            SURROGATE,
          );
          const again = await errand.enqueue(plain, { key: "p" }, { key: "tenant\ufffd" });
          assert.deepEqual([again.created, again.id], [false, holder.id]);
        },
        { jobs },
      ));

    test("flow keys that cannot be stored stall nothing: the queue's good jobs all run", () =>
      withErrand(
        target,
        async (errand) => {
          const good = await errand.enqueueMany(
            perTenant,
            ["a", "b", "a", "c", "b"].map((key) => ({ payload: { key } })),
          );
          for (const bad of ["nul", "surrogate", "one-megabyte", "number", "undefined"]) {
            await refused(
              errand,
              () => errand.enqueue(perTenant, { key: bad }),
              'payload: the flow key of job "per-tenant" (from its key function) ',
              BAD_RETURNS[bad].problem,
            );
          }
          const worker = errand.work({ "per-tenant": { concurrency: 4 } }, { pollInterval: "20ms" });
          try {
            for (const job of good) assert.equal(await errand.waitFor(job, { timeout: "20s" }), null);
          } finally {
            await worker.stop();
          }
          const states = (await allJobs(errand)).map((j) => j.state);
          assert.deepEqual(states, Array(5).fill("completed"));
        },
        { jobs },
      ));
  });
}

function withKey(item: Item, key: string): Item {
  if (keyless(item)) return { payload: { key } };
  if (item.debounce) return { ...item, debounce: { ...(item.debounce as object), key } };
  return { ...item, key };
}

/** Bad enqueues inside a transaction `tx`, each with the start of its error and its problem. */
function badInTransaction(errand: Errand, tx: unknown): Array<[() => unknown, string, RegExp]> {
  return [
    [() => errand.enqueue(plain, { key: "p" }, { key: "a\u0000b", tx }), "payload: key ", NUL],
    [() => errand.enqueue(plain, { key: "p" }, { key: "a\udc00", tx }), "payload: key ", SURROGATE],
    [
      () => errand.enqueue(plain, { key: "p" }, { debounce: { key: "a\u0000b", delay: "1h" }, tx }),
      "payload: debounce.key ",
      NUL,
    ],
    [
      () => errand.enqueue(perTenant, { key: "surrogate" }, { tx }),
      'payload: the flow key of job "per-tenant"',
      SURROGATE,
    ],
    [
      () =>
        errand.enqueueMany(plain, [{ payload: { key: "good" } }, { payload: { key: "p" }, key: "x\u0000" }], {
          tx,
        }),
      "item 1 payload: key ",
      NUL,
    ],
    [
      () =>
        errand.enqueueFlow(
          {
            jobs: {
              a: { job: plain, payload: { key: "p" } },
              "b\u0000": { job: plain, payload: { key: "p" } },
            },
          },
          { tx },
        ),
      'enqueueFlow: the flow job name "b\\u0000" ',
      NUL,
    ],
  ];
}

function assertRefused(err: unknown, prefix: string, problem: RegExp): void {
  assert.ok(err instanceof ValidationError, `a ValidationError, got ${err}`);
  assert.ok(err.message.startsWith(prefix), `"${err.message}" starts with "${prefix}"`);
  assert.match(err.message, problem);
}

for (const target of sqlTargets) {
  describe(`unstorable keys inside the application's transaction: ${target.name}`, {
    skip: target.skip || false,
  }, () => {
    test("refused before the transaction is touched: the application's other writes commit", () =>
      withErrand(
        target,
        async (errand) => {
          if (target.name === "sqlite") {
            const db = (errand.store as unknown as { db: Database.Database }).db;
            const errors: unknown[] = [];
            let first: Promise<{ id: string }> | undefined;
            let last: Promise<{ id: string }> | undefined;
            const attempts = badInTransaction(errand, db);
            db.transaction(() => {
              first = errand.enqueue(plain, { key: "before" }, { tx: db });
              for (const [call] of attempts) {
                try {
                  void call();
                } catch (err) {
                  errors.push(err);
                }
              }
              last = errand.enqueue(plain, { key: "after" }, { tx: db });
            })();
            assert.equal(
              errors.length,
              attempts.length,
              "each refused, synchronously, inside the transaction",
            );
            for (const [i, err] of errors.entries()) assertRefused(err, attempts[i][1], attempts[i][2]);
            assert.deepEqual(ids(await allJobs(errand)), [(await first)?.id, (await last)?.id].sort());
            return;
          }
          const client = (await (
            errand.store as unknown as { pool: pg.Pool }
          ).pool.connect()) as pg.PoolClient;
          try {
            await client.query("BEGIN");
            const first = await errand.enqueue(plain, { key: "before" }, { tx: client });
            for (const [call, prefix, problem] of badInTransaction(errand, client)) {
              await assert.rejects(
                async () => call(),
                (err) => {
                  assertRefused(err, prefix, problem);
                  return true;
                },
              );
            }
            const last = await errand.enqueue(plain, { key: "after" }, { tx: client });
            await client.query("COMMIT");
            assert.deepEqual(ids(await allJobs(errand)), [first.id, last.id].sort());
          } finally {
            client.release();
          }
        },
        { jobs },
      ));
  });
}
