/**
 * How long the dashboard's bulk actions by filter take on a dead-letter queue of N failed jobs
 * (half "gateway timeout", half "card declined"): count the matches, group the DLQ by error,
 * retry every "timeout" job (500 per store transaction). SQLite file and Postgres.
 *
 *   N=20000 node --import tsx bench/bulk-actions.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { z } from "zod";
import { defineJob, openErrand, PermanentError, silentLogger } from "../src/index.js";

const N = Number(process.env.N ?? 20_000);
const PG_URL = process.env.ERRAND_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const job = defineJob({
  name: "charge",
  queue: "q",
  schema: z.object({ i: z.number() }),
  async run() {
    throw new PermanentError("unused: the jobs are failed through the store");
  },
});

const dir = mkdtempSync(join(tmpdir(), "errand-bulk-bench-"));
for (const url of [`sqlite:${join(dir, "errand.db")}`, PG_URL]) {
  const schema = url.startsWith("postgres") ? `bench_bulk_${process.pid}` : undefined;
  const errand = await openErrand({ url, schema, jobs: [job], logger: silentLogger() });
  const store = errand.store;
  for (let i = 0; i < N; i += 1000) {
    const payloads = Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({ i: i + k }));
    await store.insertJobs(
      payloads.map((payload) => ({ queue: "q", name: "charge", payload, priority: 0, maxAttempts: 1 })),
    );
    const claimed = await store.claimJobs({ queue: "q", limit: 1000, workerId: "bench", leaseMs: 60_000 });
    await store.finishJobs(
      claimed.map((c) => ({
        id: c.id,
        leaseToken: c.leaseToken,
        kind: "failed" as const,
        worker: "bench",
        error: {
          message: (c.payload as { i: number }).i % 2 ? "gateway timeout" : "card declined",
          kind: "permanent" as const,
        },
      })),
    );
  }
  const time = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
    const t = performance.now();
    const value = await fn();
    return [value, performance.now() - t];
  };
  const [count, countMs] = await time(() => errand.countMatchingJobs({ action: "retry", search: "timeout" }));
  const [groups, groupsMs] = await time(() => errand.deadLetterGroups());
  const [done, retryMs] = await time(() =>
    errand.actOnMatchingJobs({ action: "retry", search: "timeout" }, count),
  );
  console.log(
    `${errand.storeKind}: ${N} failed; count ${count} in ${countMs.toFixed(0)} ms; ${groups.length} groups in ${groupsMs.toFixed(0)} ms; retried ${done} in ${retryMs.toFixed(0)} ms`,
  );
  await errand.close();
  if (schema) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA "${schema}" CASCADE`);
    await client.end();
  }
}
rmSync(dir, { recursive: true, force: true });
