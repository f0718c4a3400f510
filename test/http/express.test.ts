/**
 * The dashboard and API mounted in a real Express app behind `express.json()` and
 * `express.urlencoded()`: those parsers read the request body before errand sees it, which made
 * every POST fail with "Response body object should not be disturbed or locked". toNodeHandler
 * now takes the body the parser left on `req.body`.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import express from "express";
import { toNodeHandler } from "../../src/http/node.js";
import { type Harness, harness, seed, sendEmail, TOKEN } from "./helpers.js";

const PREFIX = "/admin/jobs";

describe("mounted in Express behind body parsers", () => {
  let h: Harness;
  let base: string;
  let close: () => Promise<void>;

  before(async () => {
    h = await harness({ dashboardToken: TOKEN, prefix: PREFIX });
    const app = express();
    app.use(express.json());
    app.use(express.urlencoded({ extended: false }));
    app.use(PREFIX, toNodeHandler(h.handler));
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${PREFIX}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  after(async () => {
    await close();
    await h.cleanup();
  });

  const post = (path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  test("retry, discard and cancel work", async () => {
    await seed(h.errand, 0, 3); // three failed jobs in the dead-letter queue
    const failed = (await h.errand.listJobs({ state: "failed" })).jobs.map((j) => j.id);
    assert.equal(failed.length, 3);

    const retried = await post("/api/dlq/retry", { ids: [failed[0]] });
    assert.equal(retried.status, 200, await retried.clone().text());
    assert.equal((await h.errand.getJob(failed[0]))?.state, "pending");

    const cancelled = await post(`/api/jobs/${failed[0]}/cancel`);
    assert.equal(cancelled.status, 200, await cancelled.clone().text());
    assert.equal((await h.errand.getJob(failed[0]))?.state, "cancelled");

    const discarded = await post(`/api/jobs/${failed[1]}/discard`);
    assert.equal(discarded.status, 200, await discarded.clone().text());
    assert.equal(await h.errand.getJob(failed[1]), null);

    const bulk = await post("/api/dlq/retry", { all: true });
    assert.equal(bulk.status, 200, await bulk.clone().text());
    assert.equal((await h.errand.getJob(failed[2]))?.state, "pending");
  });

  test("bulk actions by filter work: retry and discard failed jobs matching a search, cancel a queue's pending jobs", async () => {
    await seed(h.errand, 0, 2);
    const retried = await post("/api/jobs/bulk", { action: "retry", search: "mailbox" });
    assert.equal(retried.status, 200, await retried.clone().text());
    assert.ok(((await retried.json()) as { done: number }).done >= 2);
    assert.equal((await h.errand.listJobs({ state: "failed" })).jobs.length, 0);

    await h.errand.enqueue(sendEmail, { n: 99 });
    const cancelled = await post("/api/jobs/bulk", { action: "cancel", queue: "emails" });
    assert.equal(cancelled.status, 200, await cancelled.clone().text());
    assert.equal((await h.errand.listJobs({ state: "pending", queue: "emails" })).jobs.length, 0);

    await seed(h.errand, 0, 1);
    const discarded = await post("/api/jobs/bulk", { action: "discard", queue: "emails", search: "mailbox" });
    assert.equal(discarded.status, 200, await discarded.clone().text());
    assert.deepEqual(await discarded.json(), {
      action: "discard",
      queue: "emails",
      search: "mailbox",
      done: 1,
    });
  });

  test("a wrong field is errand's 400, naming it; nothing changes", async () => {
    const job = await h.errand.enqueue(sendEmail, { n: 1 });
    const wrong = await post("/api/dlq/retry", { ids: "not-a-list" });
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /ids/);
    assert.equal((await h.errand.getJob(job.id))?.state, "pending", "nothing changed");
  });

  test("the login form works behind express.urlencoded()", async () => {
    const response = await fetch(`${base}/login`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: new URL(base).origin,
        "sec-fetch-site": "same-origin",
      },
      body: new URLSearchParams({ token: TOKEN }).toString(),
    });
    assert.equal(response.status, 303, await response.clone().text());
    assert.match(response.headers.get("set-cookie") ?? "", /=/);
  });
});

test("mounted behind express.raw(): the Buffer it read is the body", async () => {
  const h = await harness({ dashboardToken: TOKEN, prefix: PREFIX });
  const app = express();
  app.use(express.raw({ type: "*/*" }));
  app.use(PREFIX, toNodeHandler(h.handler));
  const server = app.listen(0, "127.0.0.1");
  try {
    await new Promise((resolve) => server.once("listening", resolve));
    await seed(h.errand, 0, 1);
    const [failed] = (await h.errand.listJobs({ state: "failed" })).jobs;
    const response = await fetch(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}${PREFIX}/api/dlq/retry`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ ids: [failed.id] }),
      },
    );
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal((await h.errand.getJob(failed.id))?.state, "pending");
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await h.cleanup();
  }
});
