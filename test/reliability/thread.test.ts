/**
 * runInThread in-process (memory store): what comes back across the thread boundary, and that an
 * aborted job's thread is terminated. The CPU-bound case with real processes and leases is in
 * blocked-loop.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, runInThread, silentLogger } from "../../src/index.js";
import { BUILD } from "../cli/helpers.js";
import { sleep, waitFor } from "../helpers/wait.js";

// The compiled fixture: the thread loads its module without tsx (src/worker/thread.ts).
const SPIN = join(BUILD, "test/fixtures/spin-thread.js");
const dir = mkdtempSync(join(tmpdir(), "errand-thread-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const input = z.object({
  ms: z.number(),
  mode: z.enum(["permanent", "crash"]).optional(),
  trace: z.string().optional(),
});
const threaded = defineJob({ name: "threaded", queue: "t", schema: input, run: runInThread(SPIN) });
// Its timeout must outlast a thread's start on a loaded machine (a 300 ms one ran out before the
// thread had begun, under a load average of 10 on 2 cores), so the job is aborted while computing.
const limited = defineJob({
  name: "limited",
  queue: "t",
  schema: input,
  timeout: "2s",
  maxAttempts: 1,
  run: runInThread(SPIN),
});
const noExport = defineJob({
  name: "no-export",
  queue: "t",
  schema: z.object({}),
  maxAttempts: 1,
  run: runInThread(join(BUILD, "src/duration.js")),
});

async function finished(mode: Record<string, unknown>, def = threaded) {
  const errand = await openErrand({
    url: "memory:",
    logger: silentLogger(),
    jobs: [threaded, limited, noExport],
  });
  const worker = errand.work({ t: { concurrency: 1 } });
  try {
    const job = await errand.enqueue(def as typeof threaded, mode as never);
    return await waitFor(
      async () => {
        const j = await errand.getJob(job.id);
        return j && ["completed", "failed"].includes(j.state) ? j : null;
      },
      "the job to finish",
      30_000,
    );
  } finally {
    await worker.stop({ timeout: "5s" });
    await errand.close();
  }
}

test("the result comes back", async () => {
  const job = await finished({ ms: 50 });
  assert.equal(job.state, "completed", JSON.stringify(job.attempts));
  assert.deepEqual(job.result, { spun: 50 });
});

test("a PermanentError thrown in the thread fails the job at once, kind permanent", async () => {
  const job = await finished({ ms: 0, mode: "permanent" });
  assert.equal(job.state, "failed");
  assert.deepEqual(
    job.attempts.map((a) => [a.outcome, a.kind, a.error]),
    [["failed", "permanent", "bad input, in the thread"]],
  );
});

test("an uncaught exception inside the thread fails that attempt, not the process", async () => {
  const job = await finished({ ms: 0, mode: "crash" }, limited);
  assert.equal(job.state, "failed");
  assert.match(job.attempts[0].error ?? "", /crash inside the thread/);
});

test("a module without a default function: a clear error", async () => {
  const job = await finished({}, noExport as never);
  assert.equal(job.state, "failed");
  assert.match(job.attempts[0].error ?? "", /exports no default function/);
});

test("an aborted job (timeout) terminates its thread", async () => {
  const trace = join(dir, "trace");
  writeFileSync(trace, "");
  const job = await finished({ ms: 20_000, trace }, limited);
  assert.equal(job.state, "failed");
  assert.equal(job.attempts[0].kind, "timeout");
  // A thread still computing appends every 20 ms; a terminated one no more.
  await sleep(200);
  const size = statSync(trace).size;
  assert.ok(size > 0, "the thread ran");
  await sleep(500);
  assert.equal(statSync(trace).size, size, "the thread still runs after its job was aborted");
});
