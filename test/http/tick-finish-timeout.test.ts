/**
 * createFetchHandler's tick (what `errand serve` and a framework mount) takes the finish
 * timeout too, as createTickHandler and runTick do: a platform that cuts a request at 30 s cut
 * a tick whose job outlived the 10 s budget before its 30 s finish timeout released it, and the
 * job was charged as lost (a helper's find: a 36 s job answered after 36 s).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { createFetchHandler, defineJob, openErrand, silentLogger } from "../../src/index.js";

const SECRET = "finish-secret-0123456789";
const long = defineJob({
  name: "long",
  queue: "long",
  schema: z.object({}),
  run: (_p, ctx) => sleep(60_000, undefined, { signal: ctx.signal }),
});

test("tickFinishTimeout releases a job still running past the budget, uncharged, and the tick answers", async () => {
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs: [long] });
  try {
    const { id } = await errand.enqueue(long, {});
    const handler = createFetchHandler(errand, {
      cronSecret: SECRET,
      tickTimeBudget: 200,
      tickFinishTimeout: 300,
    });
    const began = Date.now();
    const response = await handler(
      new Request("http://localhost/api/cron/tick", {
        method: "POST",
        headers: { authorization: `Bearer ${SECRET}` },
      }),
    );
    const took = Date.now() - began;
    assert.equal(response.status, 200);
    const summary = (await response.json()) as { claimed: number; released: number };
    assert.deepEqual([summary.claimed, summary.released], [1, 1]);
    assert.ok(took < 5_000, `the tick answered after ${took} ms`);
    const job = await errand.getJob(id);
    assert.equal(job?.state, "pending");
    assert.deepEqual(
      job?.attempts.map((a) => a.outcome),
      ["interrupted"],
    );
  } finally {
    await errand.close();
  }
});
