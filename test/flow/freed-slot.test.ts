/**
 * A freed concurrency slot wakes the workers waiting for it (issue 16), on every store other
 * processes share: a worker whose claim a global concurrency cap held back claims as soon as
 * another worker's job ends there, not at its next poll. Postgres: the finish NOTIFYs the
 * queue's channel when a claim is waiting (flow_waits); SQLite: the other connection's commit is
 * seen by the commit watch. The pollers here wait 60 s, so only the wake-up can pass in time.
 * Three errands on one database (each its own store and connections, as separate processes).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { sqlTargets } from "../helpers/targets.js";
import { waitFor } from "../helpers/wait.js";

/** The gate a `hold` job waits on; each test sets its own. */
let release: () => void = () => {};
let held: Promise<void> = Promise.resolve();

const capped = defineJob({
  name: "capped",
  queue: "capped",
  schema: z.object({ hold: z.boolean() }),
  globalConcurrency: 1,
  async run(p) {
    if (p.hold) await held;
  },
});
const probe = defineJob({ name: "probe", queue: "probe", schema: z.object({}), run: () => {} });
const JOBS = [capped, probe];
const SLOW_POLL = { pollInterval: "60s", readAhead: 0 } as const;

for (const target of sqlTargets) {
  describe(`a freed slot wakes the waiting worker: ${target.name}`, {
    skip: target.skip || undefined,
  }, () => {
    test("the held-back worker claims when the slot frees, long before its 60 s poll", async () => {
      held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const db = await target.openStore();
      await db.store.close();
      const open = () =>
        openErrand({
          url: db.url,
          ...(db.schema ? { schema: db.schema } : {}),
          logger: silentLogger(),
          jobs: JOBS,
        });
      const errands: Errand[] = [];
      try {
        const [client, holder, waiter] = [await open(), await open(), await open()];
        errands.push(client, holder, waiter);

        // The holder takes the only slot and keeps it.
        const holding = holder.work({ capped: { concurrency: 1 } }, SLOW_POLL);
        const first = await client.enqueue(capped, { hold: true });
        await waitFor(
          async () => (await client.getJob(first.id))?.state === "running",
          "the first job to run",
        );
        const second = await client.enqueue(capped, { hold: false });

        // The waiter's claim is held back by the cap; it polls only every 60 s.
        let throttled = false;
        waiter.on("throttled", () => {
          throttled = true;
        });
        const waiting = waiter.work({ capped: { concurrency: 1 }, probe: { concurrency: 1 } }, SLOW_POLL);
        await waitFor(() => throttled, "the waiter's held-back claim");
        // Its wake-ups arrive (a job of another queue runs at once): nothing is lost to a late LISTEN.
        const ping = await client.enqueue(probe, {});
        await waitFor(async () => (await client.getJob(ping.id))?.state === "completed", "the probe", 10_000);

        // The holder stops; its job ends and frees the slot; the waiter must take the next job now.
        const stopped = holding.stop();
        const freedAt = Date.now();
        release();
        await stopped;
        await waitFor(
          async () => (await client.getJob(second.id))?.state === "completed",
          "the waiter to run the second job",
          10_000,
        );
        const record = await client.getJob(second.id);
        console.log(`# ${target.name}: the second job ended ${Date.now() - freedAt} ms after the slot freed`);
        assert.equal(record?.attempts.at(-1)?.worker, waiting.id, "the waiter ran it");
        await waiting.stop();
      } finally {
        release();
        for (const errand of errands) await errand.close().catch(() => {});
        await db.cleanup();
      }
    });
  });
}
