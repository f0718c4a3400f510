/** Store conformance: arguments checked by checkedStore, the same way on every store (./helpers.ts). */
import assert from "node:assert/strict";
import { ValidationError } from "../../src/errors.js";
import { checkedStore } from "../../src/store/checked.js";
import type { Store } from "../../src/store/types.js";
import { claimOne, eachStore, finish, insertOne } from "./helpers.js";

// ---------------------------------------------------------------- checked arguments

/**
 * src/store/checked.ts wraps every store errand opens: the arguments it refuses are refused the
 * same way on every backend (before, `throughput(1h, 0)` threw on Postgres and answered NaN buckets
 * in memory), and a refused call changes nothing.
 */
eachStore((it) => {
  const itChecked = (title: string, fn: (store: Store) => Promise<void>) =>
    it(title, (store) => fn(checkedStore(store)));

  itChecked(
    "refuses bad arguments with a ValidationError naming them, and changes nothing",
    async (store) => {
      const waiting = await insertOne(store, { queue: "q" });
      const dead = await insertOne(store, { queue: "dlq" });
      await finish(store, await claimOne(store, "dlq"), "failed", {
        error: { message: "x", kind: "permanent" },
      });
      const refused: Array<[string, () => Promise<unknown>, RegExp]> = [
        ["throughput bucket 0", () => store.throughput(3_600_000, 0), /bucketMs/],
        ["throughput bucket NaN", () => store.throughput(3_600_000, Number.NaN), /bucketMs/],
        ["throughput since < 0", () => store.throughput(-1, 60_000), /sinceMs/],
        [
          "claim limit 0",
          () => store.claimJobs({ queue: "q", limit: 0, workerId: "w1", leaseMs: 60_000 }),
          /limit/,
        ],
        [
          "claim limit 1.5",
          () => store.claimJobs({ queue: "q", limit: 1.5, workerId: "w1", leaseMs: 60_000 }),
          /limit/,
        ],
        [
          "claim lease 0",
          () => store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 0 }),
          /leaseMs/,
        ],
        [
          "claim lease < 0",
          () => store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: -5 }),
          /leaseMs/,
        ],
        [
          "claim no queue",
          () => store.claimJobs({ queue: "", limit: 1, workerId: "w1", leaseMs: 60_000 }),
          /queue/,
        ],
        ["extend lease < 0", () => store.extendLeases([], -1), /leaseMs/],
        ["listWorkers NaN", () => store.listWorkers(Number.NaN), /staleMs/],
        [
          "prune age < 0",
          () => store.pruneFinished({ completedAgeMs: -1, failedAgeMs: 0 }),
          /completedAgeMs/,
        ],
        [
          "prune age Infinity",
          () => store.pruneFinished({ completedAgeMs: 0, failedAgeMs: Infinity }),
          /failedAgeMs/,
        ],
        ["listJobs limit 0", () => store.listJobs({ limit: 0 }), /limit/],
        ["retry ids not an array", () => store.retryJobs({ ids: dead.id as never }), /ids must be an array/],
        ["discard ids holding null", () => store.discardJobs({ ids: [null as never] }), /ids/],
        ["discard queue not a string", () => store.discardJobs({ queue: 5 as never }), /queue/],
        ["getJob without id", () => store.getJob(undefined as never), /job id/],
        [
          "bulk action unknown",
          () => store.actOnJobs({ action: "delete" as never, limit: 10 }),
          /action must be/,
        ],
        ["bulk limit 0", () => store.actOnJobs({ action: "discard", limit: 0 }), /limit/],
        ["bulk limit over 1000", () => store.actOnJobs({ action: "retry", limit: 5000 }), /limit/],
        [
          "bulk search not a string",
          () => store.actOnJobs({ action: "retry", search: 5 as never, limit: 10 }),
          /search/,
        ],
        ["timings window NaN", () => store.recentTimings(Number.NaN, 10), /windowMs/],
        // PostgreSQL answered a NUL in a search with its raw "invalid byte sequence for encoding
        // UTF8: 0x00" (and the JSON API with a 500); memory and SQLite searched for it.
        ["listJobs search with a NUL", () => store.listJobs({ search: "a\u0000b" }), /search contains a NUL/],
        ["listJobs queue with a NUL", () => store.listJobs({ queue: "q\u0000" }), /queue contains a NUL/],
        ["listJobs name with a NUL", () => store.listJobs({ name: "\u0000" }), /name contains a NUL/],
        ["retry queue with a NUL", () => store.retryJobs({ queue: "dlq\u0000" }), /queue contains a NUL/],
        ["discard queue with a NUL", () => store.discardJobs({ queue: "dlq\u0000" }), /queue contains a NUL/],
        ["dead letters of a NUL queue", () => store.deadLetterGroups("\u0000"), /queue contains a NUL/],
        [
          "pause a schedule with a NUL",
          () => store.setSchedulePaused("s\u0000", true),
          /name contains a NUL/,
        ],
        [
          "bulk search with a NUL",
          () => store.actOnJobs({ action: "retry", search: "\u0000", limit: 10 }),
          /search contains a NUL/,
        ],
      ];
      for (const [what, call, message] of refused) {
        await assert.rejects(call, (err: Error) => {
          assert.ok(err instanceof ValidationError, `${what}: a ValidationError, got ${err}`);
          assert.match(err.message, message, what);
          return true;
        });
      }
      assert.equal((await store.getJob(waiting.id))?.state, "pending", "no refused claim took the job");
      assert.equal(
        (await store.getJob(dead.id))?.state,
        "failed",
        "no refused retry or discard touched the DLQ",
      );
    },
  );

  itChecked("accepts a job id given as a number, and a well-formed call as before", async (store) => {
    const job = await insertOne(store, { queue: "q" });
    assert.ok(/^\d+$/.test(job.id), `ids are decimal strings here: ${job.id}`);
    assert.equal((await store.getJob(Number(job.id) as never))?.id, job.id);
    assert.deepEqual(await store.throughput(3_600_000, 60_000), []);
    assert.equal(
      (await store.claimJobs({ queue: "q", limit: 1, workerId: "w1", leaseMs: 60_000 })).length,
      1,
    );
  });
}, ": arguments checked by checkedStore");
