/**
 * Bad input at the enqueue door, on every store: fast-check payloads with deep nesting, huge
 * strings, lone UTF-16 surrogates, NUL characters, prototype-pollution keys (`__proto__`,
 * `constructor`, `prototype`), odd numbers, BigInt, functions and cycles. Each one is either
 * stored and read back exactly as its JSON form, or refused with a ValidationError — never
 * another error, never a crash, never a stored half-job (enqueueMany with one bad item stores
 * nothing), and Object.prototype is never touched.
 *
 * Runs: ERRAND_FUZZ_RUNS (default 60 per store and property).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { defineJob, type Errand, ValidationError } from "../../src/index.js";
import { targets } from "../helpers/targets.js";

const RUNS = Number(process.env.ERRAND_FUZZ_RUNS ?? 60);

/** Accepts any payload (Standard Schema): the fuzz targets errand's own checks, not a validator's. */
const anything = {
  "~standard": { version: 1 as const, vendor: "fuzz", validate: (value: unknown) => ({ value }) },
};
const sink = defineJob({ name: "fuzz-sink", queue: "fuzz", schema: anything, run: () => {} });

const nasty = fc.constantFrom(
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\ud83d",
  "\ud83d\ude00",
  "\\u0000",
  "'; DROP TABLE jobs; --",
  "$1",
  "{{schema}}",
  "\u2028\u2029",
  "\ufeff",
  "",
);
const key = fc.oneof(
  { arbitrary: nasty, weight: 2 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 12 }), weight: 3 },
);
const text = fc.oneof(
  { arbitrary: nasty, weight: 2 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 4 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }), weight: 2 },
);
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(
    0,
    -0,
    1e308,
    -1e308,
    5e-324,
    Number.MAX_SAFE_INTEGER,
    2 ** 53 + 1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
  ),
);
const leaf = fc.oneof(
  text,
  number,
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.date({ noInvalidDate: true }),
);
const tree = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("node"), { maxLength: 4 }),
    fc.dictionary(key, tie("node"), { maxKeys: 4 }),
  ),
})).node;

/** Shapes that hit limits: nesting thousands deep, strings around the 1 MiB payload limit. */
const extreme = fc.oneof(
  fc.integer({ min: 1, max: 20_000 }).map((depth) => {
    let v: unknown = "bottom";
    for (let i = 0; i < depth; i++) v = i % 2 ? { d: v } : [v];
    return v;
  }),
  fc
    .constantFrom(1_000, 500_000, 1_048_560, 1_048_600, 3_000_000)
    .chain((n) =>
      fc
        .constantFrom("x", "é", "\ud83d\ude00", "\ud800")
        .map((c) => ({ big: c.repeat(Math.ceil(n / c.length)) })),
    ),
  fc.constant(10n).map((b) => ({ b })),
  fc.constant(() => 1).map((f) => ({ f })),
  fc.constant(null).map(() => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    return cycle;
  }),
);
const payload = fc.oneof({ arbitrary: tree, weight: 4 }, { arbitrary: extreme, weight: 1 });

function jsonForm(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value === undefined ? null : value));
}

async function count(errand: Errand): Promise<number> {
  return (await errand.stats()).reduce(
    (n, s) => n + s.pending + s.delayed + s.running + s.completed + s.failed + s.cancelled,
    0,
  );
}

for (const target of targets) {
  describe(`enqueue fuzz on ${target.name}`, { skip: target.skip }, () => {
    test("a payload is stored and read back as its JSON form, or refused with a ValidationError", {
      timeout: 300_000,
    }, async () => {
      const { errand, cleanup } = await target.openErrand({ jobs: [sink as never] });
      try {
        await fc.assert(
          fc.asyncProperty(payload, async (p) => {
            const before = await count(errand);
            let stored: Awaited<ReturnType<typeof errand.enqueue>> | undefined;
            try {
              stored = await errand.enqueue(sink, p as never);
            } catch (err) {
              assert.ok(
                err instanceof ValidationError,
                `only a ValidationError may refuse a payload; got ${(err as Error)?.stack ?? err}`,
              );
              assert.ok(
                (err as Error).message.length > 0 && (err as Error).message.length < 500,
                "a short, clear message",
              );
              assert.equal(await count(errand), before, "nothing stored");
              return;
            }
            const read = await errand.getJob(stored.id);
            assert.ok(read, "the job exists");
            assert.deepStrictEqual(read.payload, jsonForm(p), "read back as stored");
            assert.equal(await count(errand), before + 1, "exactly one job stored");
            assert.equal(Object.getPrototypeOf(read.payload ?? {}) === null, false);
            assert.equal(({} as Record<string, unknown>).polluted, undefined);
          }),
          { numRuns: RUNS },
        );
        assert.deepEqual(Object.keys(Object.prototype), [], "Object.prototype untouched");
      } finally {
        await cleanup();
      }
    });

    test("deep nesting is refused with a ValidationError naming the limit", async () => {
      const { errand, cleanup } = await target.openErrand({ jobs: [sink as never] });
      try {
        for (const depth of [600, 2_500, 4_000, 50_000]) {
          let v: unknown = "bottom";
          for (let i = 0; i < depth; i++) v = i % 2 ? { d: v } : [v];
          await assert.rejects(
            errand.enqueue(sink, v as never),
            (err: Error) => err instanceof ValidationError && /nested|serialisable/.test(err.message),
            `depth ${depth}`,
          );
        }
        let ok: unknown = "bottom";
        for (let i = 0; i < 500; i++) ok = [ok];
        const deep = await errand.enqueue(sink, ok as never);
        assert.deepStrictEqual((await errand.getJob(deep.id))?.payload, ok);
      } finally {
        await cleanup();
      }
    });

    test("a backslash-u0000 text is not a NUL: every store keeps it", async () => {
      const { errand, cleanup } = await target.openErrand({ jobs: [sink as never] });
      try {
        // Six characters, backslash first: JSON text, not a NUL character.
        const path = { path: "C:\\u0000\\dir", nested: { "k\\u0000": 1 }, even: "\\\\u0000" };
        const job = await errand.enqueue(sink, path as never);
        assert.deepStrictEqual((await errand.getJob(job.id))?.payload, path);
      } finally {
        await cleanup();
      }
    });

    test("enqueueMany with one bad item stores nothing", { timeout: 300_000 }, async () => {
      const { errand, cleanup } = await target.openErrand({ jobs: [sink as never] });
      try {
        const bad = fc.constantFrom<unknown>(
          { s: "\u0000" },
          { s: "\ud800" },
          { b: 1n },
          { big: "x".repeat(1_100_000) },
        );
        await fc.assert(
          fc.asyncProperty(fc.array(tree, { maxLength: 5 }), bad, fc.nat(5), async (good, oneBad, at) => {
            const items = good.map((p) => ({ payload: p }));
            items.splice(at % (items.length + 1), 0, { payload: oneBad });
            const before = await count(errand);
            await assert.rejects(errand.enqueueMany(sink, items as never), ValidationError);
            assert.equal(await count(errand), before, "nothing stored");
          }),
          { numRuns: Math.ceil(RUNS / 3) },
        );
      } finally {
        await cleanup();
      }
    });
  });
}
