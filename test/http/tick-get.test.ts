/**
 * Vercel Cron calls the tick with GET and `Authorization: Bearer $CRON_SECRET`. GET with the right
 * bearer token ticks like POST; without it, GET does nothing (a cross-site page cannot attach an
 * Authorization header, so a GET link or image cannot trigger a tick).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import {
  createFetchHandler,
  createTickHandler,
  defineJob,
  openErrand,
  silentLogger,
} from "../../src/index.js";

const SECRET = "tick-get-secret-0123456789abcdef";

async function setUp() {
  const ran: number[] = [];
  const work = defineJob({
    name: "work",
    queue: "q",
    schema: z.object({ n: z.number() }),
    run: (p) => {
      ran.push(p.n);
    },
  });
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs: [work] });
  await errand.enqueue(work, { n: 1 });
  await errand.enqueue(work, { n: 2 });
  return { errand, ran };
}

test("GET with the bearer token runs a tick (Vercel Cron); the summary is the same as POST's", async () => {
  const { errand, ran } = await setUp();
  try {
    const handler = createFetchHandler(errand, { cronSecret: SECRET });
    const response = await handler(
      new Request("http://localhost/api/cron/tick", { headers: { authorization: `Bearer ${SECRET}` } }),
    );
    assert.equal(response.status, 200);
    const summary = (await response.json()) as Record<string, number>;
    assert.equal(summary.claimed, 2);
    assert.equal(summary.completed, 2);
    assert.deepEqual(ran.sort(), [1, 2]);
  } finally {
    await errand.close();
  }
});

test("GET without or with a wrong token is a 401 and does nothing; other methods get 405 naming GET and POST", async () => {
  const { errand, ran } = await setUp();
  try {
    const handler = createTickHandler(errand, { cronSecret: SECRET });
    const wrong: Record<string, string>[] = [{}, { authorization: "Bearer wrong-token-0123456789abcdef00" }];
    for (const headers of wrong) {
      const response = await handler(new Request("http://localhost/tick", { headers }));
      assert.equal(response.status, 401);
    }
    for (const method of ["PUT", "DELETE", "PATCH"]) {
      const response = await handler(new Request("http://localhost/tick", { method }));
      assert.equal(response.status, 405, method);
      assert.equal(response.headers.get("allow"), "GET, POST", method);
    }
    assert.deepEqual(ran, []);
    const jobs = (await errand.listJobs({ limit: 10 })).jobs;
    assert.ok(jobs.every((j) => j.state === "pending" && j.attempts.length === 0));
  } finally {
    await errand.close();
  }
});
