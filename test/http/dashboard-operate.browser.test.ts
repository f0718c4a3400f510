/**
 * Operating queues from the dashboard in headless Chromium: a list that refreshes live (a job
 * enqueued meanwhile appears without a reload, a ticked checkbox stays ticked), a bulk retry by
 * search after a confirmation showing the count, dead letters grouped by error with a link to
 * their jobs, cancelling every pending job of a queue, and the runtime/wait charts.
 *
 * Needs /usr/bin/chromium (CI: `apt-get install -y chromium`), or CHROMIUM_PATH. Without it
 * the test is skipped locally and fails when CI=true.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { z } from "zod";
import { defineJob, type Errand, openErrand, PermanentError, silentLogger } from "../../src/index.js";
import { skipWithoutChromium } from "../helpers/chromium.js";
import { openSignedInDashboard, type SignedInDashboard } from "../helpers/dashboard-browser.js";
import { defs, runJobs, TOKEN } from "./helpers.js";

const skip = skipWithoutChromium;

const charge = defineJob({
  name: "charge-card",
  queue: "billing",
  schema: z.object({ n: z.number(), error: z.string().optional() }),
  maxAttempts: 1,
  async run(payload) {
    if (payload.error) throw new PermanentError(payload.error);
    return { charged: payload.n };
  },
});
const mail = defineJob({
  name: "send-mail",
  queue: "mail",
  schema: z.object({ n: z.number() }),
  async run() {},
});

/** Page code (a string: no transpiler helpers in it) that hides or shows the tab, as a browser does. */
const tabHidden = (hidden: boolean) =>
  `Object.defineProperty(document, "hidden", { configurable: true, get() { return ${hidden}; } });
   document.dispatchEvent(new Event("visibilitychange"));`;

describe("operating queues from the dashboard in Chromium", { skip }, () => {
  let errand: Errand;
  let dashboard: SignedInDashboard | undefined;
  let page: Page;
  let base: string;
  const problems: string[] = [];

  before(async () => {
    errand = await openErrand({ url: "memory:", jobs: defs(charge, mail), logger: silentLogger() });
    const payloads = [
      { n: 1 },
      { n: 2 },
      { n: 3, error: "gateway timeout after 30s" },
      { n: 4, error: "gateway timeout after 30s" },
      { n: 5, error: "gateway timeout after 30s" },
      { n: 6, error: "card declined" },
      { n: 7, error: "card declined" },
    ];
    await errand.enqueueMany(
      charge,
      payloads.map((payload) => ({ payload })),
    );
    await runJobs(errand, payloads.length, ["billing"]);
    await errand.enqueueMany(mail, [{ payload: { n: 1 } }, { payload: { n: 2 }, delay: "1h" }]);
    dashboard = await openSignedInDashboard(errand, {
      token: TOKEN,
      problems,
      signInPath: "/login",
    });
    ({ page, base } = dashboard);
  });

  after(async () => {
    await dashboard?.close();
    await errand?.close();
  });

  test("the job list shows a job enqueued meanwhile without a reload", async () => {
    await page.goto(`${base}/#/jobs?queue=mail`);
    await page.locator("tbody tr[data-key]").first().waitFor();
    assert.equal(await page.locator("tbody tr[data-key]").count(), 2);
    const firstRow = await page.locator("tbody tr[data-key]").last().elementHandle();
    await page.evaluate(() => {
      (window as unknown as { stillHere: boolean }).stillHere = true;
    });
    const added = await errand.enqueue(mail, { n: 3 });
    await page.locator(`tbody tr[data-key="${added.id}"]`).waitFor({ timeout: 15_000 });
    assert.equal(await page.locator("tbody tr[data-key]").count(), 3);
    assert.equal(
      await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere),
      true,
      "no reload",
    );
    assert.equal(
      await firstRow?.evaluate((el) => el.isConnected),
      true,
      "an unchanged row keeps its element (no redraw, no flicker)",
    );
  });

  test("a hidden tab stops polling; coming back refreshes at once", async () => {
    await page.goto(`${base}/#/schedules`);
    await page.locator("h1", { hasText: "Schedules" }).waitFor();
    const calls: string[] = [];
    const onRequest = (request: { url(): string }) => {
      if (request.url().includes("/api/schedules")) calls.push(request.url());
    };
    page.on("request", onRequest);
    await page.evaluate(tabHidden(true));
    calls.length = 0;
    await page.waitForTimeout(7000); // more than two polling periods
    assert.deepEqual(calls, [], "no poll while hidden");
    const refreshed = page.waitForRequest((r) => r.url().includes("/api/schedules"), { timeout: 1500 });
    await page.evaluate(tabHidden(false));
    await refreshed; // at once, not after the next 3 s period
    page.off("request", onRequest);
  });

  test("dead letters grouped by error, with a link to their jobs; a live refresh keeps a ticked box", async () => {
    await page.goto(`${base}/#/dlq`);
    const groups = page.locator("tr[data-group]");
    await groups.first().waitFor();
    const text = await groups.allTextContents();
    assert.equal(text.length, 2);
    assert.match(text[0], /gateway timeout after 30s\s*3/);
    assert.match(text[1], /card declined\s*2/);

    const ticked = await page.locator("tbody tr[data-key]").first().getAttribute("data-key");
    const box = page.locator(`tbody tr[data-key="${ticked}"] input[type=checkbox]`);
    await box.check();
    // Another failure arrives: the list refreshes, the ticked box stays ticked.
    await errand.enqueue(charge, { n: 8, error: "card declined" });
    await runJobs(errand, 1, ["billing"]);
    await page.locator("tr[data-group]", { hasText: /card declined\s*3/ }).waitFor({ timeout: 15_000 });
    await page.waitForFunction(
      () => document.querySelectorAll("tbody tr[data-key] input[type=checkbox]").length === 6,
    );
    assert.equal(await box.isChecked(), true);
    assert.match((await page.textContent(".bulkbar")) ?? "", /1 selected/);

    await groups.filter({ hasText: "gateway timeout" }).locator("a", { hasText: "Show jobs" }).click();
    await page.waitForURL(/#\/jobs\?/);
    assert.equal(
      new URL(page.url().replace("#/", "")).searchParams.get("search"),
      "gateway timeout after 30s",
    );
    await page.locator("tbody tr[data-key]").first().waitFor();
    assert.equal(await page.locator("tbody tr[data-key]").count(), 3);
  });

  test("retry every failed job matching a search, after a confirmation showing the count", async () => {
    await page.goto(`${base}/#/jobs?state=failed&search=timeout`);
    await page.locator("tbody tr[data-key]").first().waitFor();
    await page.click("button[data-bulk=retry-matching]");
    const dialog = page.locator("dialog[open]");
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? "", /Retry 3 failed jobs matching “timeout”/);
    await dialog.locator("button", { hasText: "Cancel" }).click();
    assert.equal((await errand.listJobs({ state: "failed" })).jobs.length, 6, "cancelled: nothing retried");

    await page.click("button[data-bulk=retry-matching]");
    await page.locator("dialog[open] button.confirm").click();
    await page.locator(".toast", { hasText: "Retried 3 jobs" }).waitFor();
    const failed = (await errand.listJobs({ state: "failed" })).jobs;
    assert.deepEqual(
      failed.map((j) => j.lastError),
      ["card declined", "card declined", "card declined"],
    );
    const pending = (await errand.listJobs({ state: "pending", queue: "billing" })).jobs;
    assert.equal(pending.length, 3);
    for (const job of pending) assert.equal(job.lastError, "gateway timeout after 30s");
  });

  test("cancel every pending job of a queue (due and delayed)", async () => {
    await page.goto(`${base}/#/jobs?queue=mail&state=pending`);
    await page.locator("tbody tr[data-key]").first().waitFor();
    await page.click("button[data-bulk=cancel-matching]");
    const dialog = page.locator("dialog[open]");
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? "", /Cancel 3 pending jobs of queue “mail”/);
    await dialog.locator("button.confirm").click();
    await page.locator(".toast", { hasText: "Cancelled 3 jobs" }).waitFor();
    assert.equal((await errand.listJobs({ queue: "mail", state: "cancelled" })).jobs.length, 3);
    assert.equal(
      (await errand.listJobs({ queue: "billing", state: "pending" })).jobs.length,
      3,
      "other queue kept",
    );
  });

  test("runtime and wait charts per queue on the overview", async () => {
    await page.goto(`${base}/#/`);
    const row = page.locator("tr[data-timings=billing]");
    await row.waitFor();
    assert.equal(await row.locator("svg.timing-chart").count(), 2);
    const label = (await row.locator("svg.timing-chart").first().getAttribute("aria-label")) ?? "";
    assert.match(label, /^runtime: median \d/);
    const widths = await row
      .locator("svg.timing-chart")
      .first()
      .locator("rect")
      .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute("width"))));
    assert.equal(widths.length, 2);
    assert.ok(widths[0] >= widths[1] && widths[1] >= 1, `p95 bar at least the median bar: ${widths}`);
  });

  test("no page broke its Content-Security-Policy or threw", () => {
    assert.deepEqual(problems, []);
  });
});
