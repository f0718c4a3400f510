/**
 * The dashboard in headless Chromium (playwright-core + Debian's chromium package):
 * log in, read a queue's counts, open a failed job's history, retry it and watch it complete,
 * refuse a wrong token, show a payload's HTML as text. Mounted under /admin/jobs to prove the
 * mount prefix is honoured by every link and fetch.
 *
 * Needs /usr/bin/chromium (CI: `apt-get install -y chromium`), or CHROMIUM_PATH. Without it
 * the test is skipped locally and fails when CI=true.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { z } from "zod";
import { createFetchHandler } from "../../src/http/app.js";
import { toNodeHandler } from "../../src/http/node.js";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { launchChromium, skipWithoutChromium } from "../helpers/chromium.js";
import { defs, runJobs, TOKEN } from "./helpers.js";

const skip = skipWithoutChromium;

const PREFIX = "/admin/jobs";
const XSS = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;
let healthy = false;
const deliver = defineJob({
  name: "deliver-webhook",
  queue: "webhooks",
  schema: z.object({ url: z.string(), note: z.string().optional() }),
  maxAttempts: 2,
  backoff: ["5ms"],
  async run(payload) {
    if (!healthy) throw new Error("upstream answered HTTP 502");
    return { delivered: payload.url };
  },
});

describe("dashboard in Chromium", { skip }, () => {
  let errand: Errand;
  let server: Server;
  let browser: Browser;
  let page: Page;
  let base: string;
  let failedId: string;
  const cspViolations: string[] = [];

  before(async () => {
    errand = await openErrand({ url: "memory:", jobs: defs(deliver), logger: silentLogger() });
    await errand.enqueueMany(deliver, [
      { payload: { url: "https://a.example/1" } },
      { payload: { url: "https://a.example/2" } },
      { payload: { url: "https://a.example/3" } },
    ]);
    healthy = true;
    await runJobs(errand, 3, ["webhooks"]);
    healthy = false;
    const failing = await errand.enqueue(deliver, { url: "https://b.example/hook", note: XSS });
    await errand.enqueue(deliver, { url: "https://b.example/other" });
    await runJobs(errand, 2, ["webhooks"]);
    failedId = failing.id;
    assert.equal((await errand.getJob(failedId))?.state, "failed");

    server = createServer(
      toNodeHandler(createFetchHandler(errand, { dashboardToken: TOKEN, prefix: PREFIX })),
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${PREFIX}`;
    browser = await launchChromium();
    // One page for the whole suite, in order: a browser context costs seconds on a small CI box.
    page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    page.on("console", (msg) => {
      if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
    });
    page.on("pageerror", (err) => cspViolations.push(`page error: ${err.message}`));
  });

  after(async () => {
    await browser?.close();
    if (server) await new Promise((r) => server.close(r));
    await errand?.close();
  });

  async function signIn(token: string) {
    await page.goto(`${base}/`);
    assert.match(page.url(), /\/admin\/jobs\/login$/, "signed out: sent to the login page");
    await page.fill("#token", token);
    await page.click("button[type=submit]");
  }

  test("a wrong token is refused", async () => {
    await signIn("not-the-token");
    await page.waitForSelector(".form-error");
    assert.match((await page.textContent(".form-error")) ?? "", /not right/);
    assert.match(page.url(), /\/login$/);
    assert.deepEqual(await page.context().cookies(), []);
    const api = await page.evaluate(async (url) => (await fetch(url)).status, `${base}/api/stats`);
    assert.equal(api, 401);
  });

  test("log in, read counts, open a failed job's history, see its payload as text, retry it, see it complete", async () => {
    await signIn(TOKEN);
    await page.waitForURL(`${base}/`);
    const cookies = await page.context().cookies();
    assert.equal(cookies.length, 1);
    assert.equal(cookies[0].httpOnly, true);
    assert.equal(cookies[0].sameSite, "Strict");
    assert.equal(cookies[0].path, PREFIX);

    // The overview: the queue's counts.
    const row = page.locator("tr[data-queue=webhooks]");
    await row.waitFor();
    const cell = (col: string) => row.locator(`td[data-col=${col}]`).textContent();
    assert.equal(await cell("completedLastHour"), "3");
    assert.equal(await cell("completedLastDay"), "3");
    assert.equal(await cell("failedLastHour"), "2");
    assert.equal(await cell("failed"), "2");
    assert.equal(await cell("pending"), "0");
    assert.equal(await page.textContent("[data-testid=dlq-count]"), "2");
    // The charts render from their own request: wait for them before counting (under load the
    // queue table can be there first).
    await page.locator("svg.chart").nth(1).waitFor();
    assert.equal(await page.locator("svg.chart").count(), 2, "throughput and failure charts");
    await page.click(".segmented button >> text=Last 24 hours");
    await page.waitForSelector(".segmented button.on >> text=Last 24 hours");
    assert.equal(await page.locator("svg.chart").count(), 2);
    assert.equal(await row.locator("td[data-col=completedLastDay]").textContent(), "3");

    // To the dead-letter queue from the DLQ count, then to the job.
    await row.locator("td[data-col=failed] a").click();
    await page.waitForURL(/#\/dlq\?queue=webhooks$/);
    await page.locator(`tr[data-id="${failedId}"] a`).first().click();
    await page.waitForSelector("[data-testid=attempts]");
    assert.match(page.url(), new RegExp(`#/jobs/${failedId}$`));
    assert.equal(await page.textContent("h1 + .badge, .title .badge"), "failed");

    // The attempt timeline: both attempts, their outcomes and error.
    const attempts = page.locator("[data-testid=attempts] > li");
    assert.equal(await attempts.count(), 2);
    assert.equal(await attempts.nth(0).getAttribute("data-outcome"), "failed");
    assert.equal(await attempts.nth(1).getAttribute("data-outcome"), "retried");
    assert.match((await attempts.nth(0).textContent()) ?? "", /upstream answered HTTP 502/);
    assert.match((await attempts.nth(0).textContent()) ?? "", /deliver|on \S+:\d+:/);
    await attempts.nth(0).locator("summary").click();
    assert.match(
      (await attempts.nth(0).locator("details pre").textContent()) ?? "",
      /Error: upstream answered HTTP 502\n\s+at /,
    );

    // The payload's HTML is text: shown verbatim, never parsed, never run.
    const payload = page.locator("[data-testid=payload]");
    assert.ok((await payload.textContent())?.includes(JSON.stringify(XSS).slice(1, -1)));
    assert.equal(await payload.locator("script, img").count(), 0);
    assert.equal(await page.locator("body img").count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);

    // Retry with a worker running in this process: the page follows the job to completion.
    healthy = true;
    const worker = errand.work(["webhooks"], { pollInterval: 20 });
    try {
      await page.click("button[data-action=retry]");
      await page.waitForSelector(".toast >> text=queued for retry");
      await page.waitForSelector(".title .badge[data-state=completed]", { timeout: 15_000 });
    } finally {
      await worker.stop();
    }
    assert.equal(await attempts.count(), 3);
    assert.equal(await attempts.nth(0).getAttribute("data-outcome"), "completed");
    assert.match(
      (await page.textContent("[data-testid=result]")) ?? "",
      /"delivered": "https:\/\/b.example\/hook"/,
    );
    assert.equal((await errand.getJob(failedId))?.state, "completed");
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  });

  test("discard from the dead-letter queue in bulk, after a confirmation", async () => {
    await page.goto(`${base}/`);
    await page.click("nav a[data-view=dlq]");
    const rows = page.locator("tbody tr[data-id]");
    await rows.first().waitFor();
    const before = await rows.count();
    assert.equal(before, 1);
    await rows.first().locator("input[type=checkbox]").check();
    await page.click("button[data-bulk=discard]");
    const dialog = page.locator("dialog[open]");
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? "", /cannot be undone/);
    await dialog.locator("button", { hasText: "Cancel" }).click();
    assert.equal(await rows.count(), 1, "cancelled: nothing discarded");
    await page.click("button[data-bulk=discard]");
    await page.locator("dialog[open] button.confirm").click();
    await page.waitForSelector(".empty >> text=The dead-letter queue is empty.");
    assert.equal((await errand.stats()).find((s) => s.queue === "webhooks")?.failed, 0);
  });

  // A link cut or mangled on its way (a chat client, an e-mail) threw "URI malformed" and left
  // the previous view showing (a helper's find).
  test("a malformed link names the missing job instead of throwing", async () => {
    await page.goto(`${base}/#/jobs/%E0%A4%A`);
    await page.waitForSelector(".empty >> text=No job #");
    await page.goto(`${base}/#/jobs/%`);
    await page.waitForSelector(".empty >> text=No job #%");
  });

  test("no page broke its own Content-Security-Policy or threw", () => {
    assert.deepEqual(cspViolations, []);
  });
});
