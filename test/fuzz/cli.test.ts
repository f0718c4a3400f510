/**
 * Bad input at the CLI door: `errand enqueue` with fuzzed arguments (fast-check, a bounded
 * number of real spawns: ERRAND_FUZZ_CLI_RUNS, default 30). Each run exits 0 having stored one
 * job, or exits 1/2 with a short message naming the problem — never a stack trace, never
 * another exit code — and a refused command stores nothing: at the end the database holds
 * exactly the jobs the successful runs reported.
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { CLI, JOBS, scratchDir, spawnNode } from "../chaos/harness.js";

const RUNS = Number(process.env.ERRAND_FUZZ_CLI_RUNS ?? 30);
const dir = scratchDir("errand-fuzz-cli-");
after(() => rmSync(dir, { recursive: true, force: true }));

function hasStack(text: string): boolean {
  return /^\s+at .+(\(.*:\d+:\d+\)|:\d+:\d+)$/m.test(text);
}

const db = join(dir, "errand.db");
const bigPayload = join(dir, "big.json");
writeFileSync(bigPayload, JSON.stringify({ ms: 1, pad: "x".repeat(2_000_000) }));
const goodPayload = join(dir, "good.json");
writeFileSync(goodPayload, '{"ms": 5}');

const wild = fc.string({ unit: "binary", maxLength: 20 }).map((s) => s.replaceAll("\u0000", ""));

/** Bad values per flag; one of them (or an odd extra argument) spoils an otherwise good command line. */
const BAD: Record<string, string[]> = {
  name: ["nope", "", "-x", "clock;rm -rf /", "\u00e9t\u00e9", "a".repeat(300)],
  "--payload": [
    "{",
    "[]",
    "null",
    '{"ms":"x"}',
    '{"ms":-1}',
    '{"ms":1e999}',
    "@/nonexistent/file.json",
    `@${bigPayload}`,
    '"\\ud800"',
  ],
  "--priority": ["1.5", "abc", "99999999999", "", "0x10", "1e3"],
  "--delay": ["-1s", "soon", "1y", "", "5"],
  "--run-at": ["tomorrow", "2030-13-45", "", "2030-01-01T25:00:00Z"],
  "--key": ["", "k".repeat(600)],
  "--max-attempts": ["0", "-1", "1001", "two"],
};
const EXTRA = [
  ["--bogus"],
  ["extra-arg"],
  ["--url", "mysql://x"],
  ["--jobs", "/nonexistent.ts"],
  ["--jobs", bigPayload],
  ["-p"],
  ["--delay", "1s", "--run-at", "2030-01-01T00:00:00Z"],
];

const argv = fc
  .record({
    payload: fc.constantFrom('{"ms":1}', "{}", `@${goodPayload}`, '{"__proto__":{"ms":1},"ms":2}'),
    priority: fc.option(fc.constantFrom("0", "10", "-5"), { nil: undefined }),
    when: fc.option(fc.constantFrom(["--delay", "250ms"], ["--run-at", "2030-01-01T00:00:00Z"]), {
      nil: undefined,
    }),
    key: fc.option(fc.constantFrom("k1", "k2", "ключ"), { nil: undefined }),
    maxAttempts: fc.option(fc.constantFrom("1", "3"), { nil: undefined }),
    json: fc.boolean(),
    spoil: fc.oneof(
      { arbitrary: fc.constant(null), weight: 2 },
      {
        arbitrary: fc
          .constantFrom(...Object.keys(BAD))
          .chain((flag) => fc.oneof(fc.constantFrom(...BAD[flag]), wild).map((value) => ({ flag, value }))),
        weight: 4,
      },
      { arbitrary: fc.constantFrom(...EXTRA).map((extra) => ({ extra })), weight: 1 },
    ),
  })
  .map((r) => {
    const pairs: [string, string][] = [["--payload", r.payload]];
    if (r.priority) pairs.push(["--priority", r.priority]);
    if (r.when) pairs.push(r.when as [string, string]);
    if (r.key) pairs.push(["--key", r.key]);
    if (r.maxAttempts) pairs.push(["--max-attempts", r.maxAttempts]);
    let name = "clock";
    const extra: string[] = [];
    const spoil = r.spoil;
    if (spoil && "flag" in spoil) {
      if (spoil.flag === "name") name = spoil.value;
      else {
        const at = pairs.findIndex(([f]) => f === spoil.flag);
        if (at >= 0) pairs[at] = [spoil.flag, spoil.value];
        else pairs.push([spoil.flag, spoil.value]);
      }
    } else if (spoil) extra.push(...spoil.extra);
    const args = ["--url", db, "enqueue", name, "--jobs", JOBS, ...pairs.flat(), ...extra];
    if (r.json) args.push("--json");
    return args;
  });

test(`errand enqueue with ${RUNS} fuzzed command lines: exit 0 with one job, or 1/2 with a short message and nothing stored`, {
  timeout: 600_000,
}, async () => {
  const store = openSqliteStore({ path: db });
  await store.migrate(); // children find the schema ready
  const cases = fc.sample(argv, { numRuns: RUNS, seed: Number(process.env.ERRAND_FUZZ_SEED ?? 4242) });
  let created = 0;
  const codes = new Map<number, number>();
  let next = 0;
  const lane = async () => {
    while (next < cases.length) {
      const args = cases[next++];
      const proc = spawnNode(CLI, args, {});
      const timer = setTimeout(() => proc.child.kill("SIGKILL"), 120_000);
      const { code } = await proc.exited;
      clearTimeout(timer);
      const out = proc.stdout();
      const err = proc.stderr();
      const what = `errand ${args
        .slice(2)
        .map((a) => JSON.stringify(a.slice(0, 60)))
        .join(" ")}\nexit ${code}\nstderr: ${err.slice(0, 600)}`;
      codes.set(code ?? -1, (codes.get(code ?? -1) ?? 0) + 1);
      assert.ok(code === 0 || code === 1 || code === 2, `exit code 0, 1 or 2: ${what}`);
      assert.ok(!hasStack(err) && !hasStack(out), `no stack trace: ${what}`);
      if (code === 0) {
        if (/enqueued job \d+|"created":\s*true/.test(out)) created++;
        else
          assert.match(
            out,
            /already has key|"created":\s*false/,
            `a successful enqueue says what it stored: ${what}`,
          );
      } else {
        const lines = err.trim().split("\n");
        assert.ok(lines[0].length > 0 && lines[0].length < 600, `a message naming the problem: ${what}`);
        assert.ok(
          lines.length === 1 || (lines.length === 2 && /^\(Did you mean/.test(lines[1])),
          `one line: ${what}`,
        );
      }
    }
  };
  try {
    await Promise.all([lane(), lane(), lane()]);
    const stored = (await store.listJobs({ limit: 1000 })).jobs.length;
    console.log(
      `# ${RUNS} command lines: exit codes ${[...codes]
        .sort()
        .map(([c, n]) => `${c}×${n}`)
        .join(" ")}; ${created} jobs created`,
    );
    assert.equal(stored, created, "the database holds exactly the jobs the successful runs created");
  } finally {
    await store.close();
  }
});
