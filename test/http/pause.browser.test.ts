/**
 * Pausing from the dashboard in headless Chromium (as dashboard.browser.test.ts: playwright-core
 * and Debian's chromium package; skipped locally without it, a failure when CI=true): pause a
 * queue with its button and see no job start, see a job page say why it waits and the queue
 * flagged for having due jobs and no worker, resume and see the backlog drain; pause, resume
 * and run a schedule; lift a flow key's rate-limit pause from the job it holds.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { skipWithoutChromium } from "../helpers/chromium.js";
import { openSignedInDashboard, type SignedInDashboard } from "../helpers/dashboard-browser.js";
import { defs, TOKEN } from "./helpers.js";

const skip = skipWithoutChromium;

const started: string[] = [];
const mail = defineJob({
  name: "mail",
  queue: "mail",
  schema: z.object({ n: z.number() }),
  async run(payload) {
    started.push(String(payload.n));
  },
});

/** A rate-limited API per account: its budget is paused by hand below, as a 429 pauses it. */
const crm = defineJob({
  name: "crm-sync",
  queue: "crm",
  schema: z.object({ account: z.string() }),
  rateLimit: { limit: 10, per: "1s", key: (p) => p.account },
  async run() {},
});

describe("pausing from the dashboard in Chromium", { skip }, () => {
  let errand: Errand;
  let dashboard: SignedInDashboard | undefined;
  let page: Page;
  let base: string;
  const pageErrors: string[] = [];

  before(async () => {
    errand = await openErrand({ url: "memory:", jobs: defs(mail, crm), logger: silentLogger() });
    await errand.addSchedule({
      name: "digest",
      cron: "0 3 * * *",
      jobName: "mail",
      queue: "mail",
      payload: { n: 99 },
    });
    dashboard = await openSignedInDashboard(errand, { token: TOKEN, problems: pageErrors });
    ({ page, base } = dashboard);
  });

  after(async () => {
    await dashboard?.close();
    await errand?.close();
  });

  test("pause a queue, see why a job waits and that no worker serves it, resume it and see it drain", async () => {
    const row = page.locator("tr[data-queue=mail]");
    await row.waitFor();
    await row.locator("button[data-action=pause]").click();
    await page.waitForSelector(".toast >> text=Queue mail paused");
    await row.locator(".chip.paused").waitFor();
    assert.deepEqual(
      (await errand.pausedQueues()).map((p) => p.queue),
      ["mail"],
    );

    const job = await errand.enqueue(mail, { n: 1 });
    await page.goto(`${base}/#/jobs/${job.id}`);
    const waiting = page.locator("[data-testid=waiting]");
    await waiting.waitFor();
    assert.match((await waiting.textContent()) ?? "", /queue "mail" is paused/);
    assert.match((await waiting.textContent()) ?? "", /no live worker serves queue "mail"/);

    await page.goto(`${base}/`);
    await row.locator("[data-testid=no-worker]").waitFor();

    const worker = errand.work(["mail"], { pollInterval: 20 });
    try {
      // The worker runs and claims nothing while the queue is paused.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(started.length, 0, "nothing started while paused");
      await page.reload();
      await row.locator("button[data-action=resume]").click();
      await page.waitForSelector(".toast >> text=Queue mail resumed");
      const deadline = Date.now() + 10_000;
      while (!started.includes("1") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(started, ["1"], "the job ran once the queue was resumed");
      await row.locator("button[data-action=pause]").waitFor();
      assert.equal(await row.locator(".chip.paused").count(), 0);
    } finally {
      await worker.stop();
    }
  });

  test("pause, resume and run a schedule", async () => {
    await page.click("nav a[data-view=schedules]");
    const row = page.locator("tr[data-schedule=digest]");
    await row.waitFor();
    await row.locator("button[data-action=pause]").click();
    await page.waitForSelector(".toast >> text=Schedule digest paused");
    await row.locator(".chip.paused").waitFor();
    assert.ok((await errand.listSchedules())[0].pausedAt);

    await row.locator("button[data-action=run]").click();
    await page.waitForSelector(".toast >> text=/job #\\d+ enqueued/");
    const { jobs } = await errand.listJobs({ queue: "mail", state: "pending" });
    assert.equal(jobs.length, 1);
    assert.deepEqual(jobs[0].payload, { n: 99 });

    await row.locator("button[data-action=resume]").click();
    await page.waitForSelector(".toast >> text=Schedule digest resumed");
    await row.locator("button[data-action=pause]").waitFor();
    assert.equal((await errand.listSchedules())[0].pausedAt, null);
  });

  test("a job held by a rate-limit pause says so, and its button lifts the pause", async () => {
    await errand.store.pauseFlow({ queue: "crm", key: "acme", ms: 10 * 365 * 86_400_000 });
    await errand.store.pauseFlow({ queue: "crm", key: "globex", ms: 10 * 365 * 86_400_000 });
    const job = await errand.enqueue(crm, { account: "acme" });
    await page.goto(`${base}/#/jobs/${job.id}`);
    const waiting = page.locator("[data-testid=waiting]");
    await waiting.waitFor();
    assert.match(
      (await waiting.textContent()) ?? "",
      /key "acme" of queue "crm" is paused by a rate-limited answer/,
    );

    await waiting.locator("button[data-action=resume-limits]").click();
    await page.waitForSelector(".toast >> text=Rate-limit pause of key acme lifted");
    const paused = await errand.store.flowStatus({ queue: "crm", windowMs: 0 });
    assert.deepEqual([...paused.pausedUntil.keys()], ["globex"], "only acme's pause was lifted");
    // The page redrew: the job waits for no pause any more (only for a worker), and has no button.
    await waiting.filter({ hasNotText: "rate-limited" }).waitFor();
    assert.equal(await waiting.locator("button[data-action=resume-limits]").count(), 0);
    assert.deepEqual(
      (await errand.whyWaiting(job.id))?.map((r) => r.kind),
      ["no-worker"],
    );
  });

  test("no page broke its own Content-Security-Policy or threw", () => {
    assert.deepEqual(pageErrors, []);
  });
});
