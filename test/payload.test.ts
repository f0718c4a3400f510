/**
 * src/payload.ts `checkPayload`: one JSON.stringify, checks over that text, one plain JSON.parse.
 * It must accept and refuse exactly what the former check (stringify, then parse with a reviver
 * testing every key and string) did, with the same messages: `reference` below is that check,
 * and fast-check compares the two on payloads full of NULs, lone surrogates, escapes and
 * backslashes, in keys and in strings, at every depth.
 *
 * Runs: ERRAND_FUZZ_RUNS (default 60) × 20 per property.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ValidationError } from "../src/errors.js";
import { checkPayload, MAX_PAYLOAD_DEPTH, normalizePayload } from "../src/payload.js";

const RUNS = Number(process.env.ERRAND_FUZZ_RUNS ?? 60) * 20;
const LIMIT = 1024 * 1024;

/** The check checkPayload replaced, verbatim in behaviour: the oracle. */
function reference(payload: unknown, limit: number, what = "payload"): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload === undefined ? null : payload);
  } catch (err) {
    throw new ValidationError(`${what} is not JSON-serialisable: ${(err as Error).message}`);
  }
  if (text === undefined)
    throw new ValidationError(`${what} is not JSON-serialisable (a function or symbol)`);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limit) {
    throw new ValidationError(`${what} is ${bytes} bytes, over the limit of ${limit} bytes (payloadLimit)`);
  }
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  if (max > MAX_PAYLOAD_DEPTH) {
    throw new ValidationError(`${what} is nested ${max} levels deep, over the limit of ${MAX_PAYLOAD_DEPTH}`);
  }
  const check = (s: string, kind: string) => {
    if (s.includes("\u0000"))
      throw new ValidationError(`${kind} contains a NUL character (\\u0000), which cannot be stored`);
    if (!s.isWellFormed())
      throw new ValidationError(`${kind} contains a lone UTF-16 surrogate (invalid Unicode)`);
  };
  return JSON.parse(text, (key, value) => {
    check(key, `${what} key`);
    if (typeof value === "string") check(value, `${what} string`);
    return value;
  });
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

function outcome(fn: () => unknown): Outcome {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Both accept with the same value, or both refuse with a ValidationError and the same message. */
function assertSame(payload: unknown, limit = LIMIT): void {
  const expected = outcome(() => reference(payload, limit));
  let json: string | undefined;
  const actual = outcome(() => {
    const checked = checkPayload(payload, limit);
    json = checked.json;
    return checked.value;
  });
  if (!expected.ok) {
    assert.ok(!actual.ok, `refused by the reference (${(expected.error as Error).message}) but accepted`);
    assert.ok(actual.error instanceof ValidationError, `a ValidationError, got ${actual.error}`);
    assert.equal((actual.error as Error).message, (expected.error as Error).message);
    return;
  }
  assert.ok(
    actual.ok,
    `accepted by the reference but refused: ${!actual.ok && (actual.error as Error).message}`,
  );
  assert.deepStrictEqual(actual.value, expected.value);
  assert.equal(json, JSON.stringify(payload === undefined ? null : payload));
}

/** Characters that are hard on a text check: NUL, both halves of surrogate pairs, backslashes, quotes, escapes. */
const hard = fc.constantFrom(
  "\u0000",
  "\ud800",
  "\udbff",
  "\udc00",
  "\udfff",
  "\ud83d\ude00",
  "\\",
  "\\\\",
  '"',
  "\\u0000",
  "\\ud800",
  "u0000",
  "ud800",
  "\u0001",
  "\u001f",
  "\u2028",
  "é",
  "a",
);
const text = fc.oneof(
  fc.array(hard, { maxLength: 6 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 12 }),
);
const tree = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    fc.integer(),
    fc.constantFrom(null, true, undefined, Number.NaN, -0),
    fc.array(tie("node"), { maxLength: 4 }),
    fc.dictionary(text, tie("node"), { maxKeys: 4 }),
  ),
})).node;

describe("checkPayload", () => {
  test("accepts and refuses exactly as the reviver-based check did, with the same messages", () => {
    fc.assert(
      fc.property(tree, (payload) => assertSame(payload)),
      { numRuns: RUNS },
    );
  });

  test("names the first bad key or string as the reviver-based check did", () => {
    const cases: Array<[unknown, string]> = [
      [{ "a\u0000": 1 }, "payload key contains a NUL character"],
      [{ a: "x\u0000" }, "payload string contains a NUL character"],
      [{ "\ud800": 1 }, "payload key contains a lone UTF-16 surrogate"],
      [{ a: ["ok", { b: "\udfff" }] }, "payload string contains a lone UTF-16 surrogate"],
      // A backslash of the data, then a NUL: the escape after "\\\\" is real.
      [{ a: "\\\u0000" }, "payload string contains a NUL character"],
    ];
    for (const [payload, message] of cases) {
      assert.throws(
        () => checkPayload(payload, LIMIT),
        (err: Error) => err instanceof ValidationError && err.message.startsWith(message),
        message,
      );
      assertSame(payload);
    }
  });

  test("keeps the six-character texts \\u0000 and \\ud800 and a well-formed surrogate pair", () => {
    for (const payload of [
      { path: "C:\\u0000\\dir" },
      { "k\\u0000": "\\\\u0000" },
      { s: "\\ud800\\udfff" },
      { emoji: "😀", "😀": 1 },
    ]) {
      const { value, json } = checkPayload(payload, LIMIT);
      assert.deepStrictEqual(value, payload);
      assert.equal(json, JSON.stringify(payload));
    }
  });

  test("the byte limit counts UTF-8 bytes, at the boundary", () => {
    // {"s":"…"} is 8 bytes of syntax; é is 2 bytes, 😀 4 (two UTF-16 code units).
    for (const [char, bytes] of [
      ["x", 1],
      ["é", 2],
      ["😀", 4],
    ] as const) {
      const limit = 8 + bytes * 1000;
      const fits = { s: char.repeat(1000) };
      assert.equal(checkPayload(fits, limit).json.length, 8 + char.length * 1000);
      assert.throws(
        () => checkPayload({ s: char.repeat(1001) }, limit),
        new ValidationError(
          `payload is ${limit + bytes} bytes, over the limit of ${limit} bytes (payloadLimit)`,
        ),
      );
      assertSame(fits, limit);
      assertSame({ s: char.repeat(1001) }, limit);
    }
  });

  test("nesting: MAX_PAYLOAD_DEPTH levels pass, one more is refused", () => {
    const nest = (depth: number) => {
      let v: unknown = 1;
      for (let i = 0; i < depth; i++) v = i % 2 ? { d: v } : [v];
      return v;
    };
    assert.deepStrictEqual(checkPayload(nest(MAX_PAYLOAD_DEPTH), LIMIT).value, nest(MAX_PAYLOAD_DEPTH));
    assert.throws(
      () => checkPayload(nest(MAX_PAYLOAD_DEPTH + 1), LIMIT),
      new ValidationError(
        `payload is nested ${MAX_PAYLOAD_DEPTH + 1} levels deep, over the limit of ${MAX_PAYLOAD_DEPTH}`,
      ),
    );
    // Brackets inside strings are text, not nesting.
    assertSame({ s: "[".repeat(2000) });
    assert.equal(checkPayload({ s: "{".repeat(2000) }, LIMIT).json.length, 2008);
  });

  test("JSON-normalises: the value is what a worker will read back", () => {
    const when = new Date("2026-01-31T09:00:00.000Z");
    const { value, json } = checkPayload({ when, gone: undefined, list: [undefined, Number.NaN] }, LIMIT);
    assert.deepStrictEqual(value, { when: "2026-01-31T09:00:00.000Z", list: [null, null] });
    assert.equal(json, '{"when":"2026-01-31T09:00:00.000Z","list":[null,null]}');
    assert.deepStrictEqual(normalizePayload(undefined, LIMIT), null);
    assert.throws(() => checkPayload({ n: 1n }, LIMIT), /payload is not JSON-serialisable/);
    assert.throws(() => checkPayload(() => 1, LIMIT), /not JSON-serialisable \(a function or symbol\)/);
  });
});
