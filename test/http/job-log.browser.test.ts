/**
 * The dashboard's job page shows each attempt's job log (the handler's ctx.log lines), as text
 * (a line holding HTML is not markup), with the count of lines a cap dropped. Headless Chromium,
 * as test/http/dashboard.browser.test.ts (skipped locally without it, required in CI).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { z } from "zod";
import { createFetchHandler } from "../../src/http/app.js";
import { toNodeHandler } from "../../src/http/node.js";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { JOB_LOG_MAX_LINES } from "../../src/worker/job-log.js";
import { launchChromium, skipWithoutChromium } from "../helpers/chromium.js";
import { runJobs, TOKEN } from "./helpers.js";

const skip = skipWithoutChromium;

const HTML = `<img src=x onerror="window.__pwned = 1">`;
const chatty = defineJob({
  name: "chatty",
  queue: "q",
  schema: z.object({}),
  run(_payload, ctx) {
    ctx.log.info({ customer: 17 }, "syncing customer");
    ctx.log.warn(`odd name ${HTML}`);
    for (let i = 0; i < JOB_LOG_MAX_LINES; i++) ctx.log.info(`row ${i}`);
  },
});

describe("job log on the dashboard's job page", { skip }, () => {
  let errand: Errand;
  let server: Server;
  let browser: Browser;
  let base: string;
  let jobId: string;

  before(async () => {
    errand = await openErrand({ url: "memory:", jobs: [chatty], logger: silentLogger() });
    jobId = (await errand.enqueue(chatty, {})).id;
    await runJobs(errand, 1, ["q"]);
    server = createServer(toNodeHandler(createFetchHandler(errand, { dashboardToken: TOKEN })));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    if (server) await new Promise((r) => server.close(r));
    await errand?.close();
  });

  test("the attempt's lines, as text, and how many the cap dropped", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/`);
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForURL(`${base}/`);
    await page.goto(`${base}/#/jobs/${jobId}`);
    const log = page.locator("[data-testid=job-log-1]");
    await log.waitFor();
    assert.equal(
      await log.locator("summary").textContent(),
      `Job log (${JOB_LOG_MAX_LINES} lines, 2 more not kept)`,
    );
    await log.locator("summary").click();
    const text = (await log.locator("pre").textContent()) ?? "";
    const lines = text.split("\n");
    assert.equal(lines.length, JOB_LOG_MAX_LINES);
    assert.match(lines[0], /^\d\d:\d\d:\d\d INFO {2}syncing customer \{"customer":17\}$/);
    assert.equal(lines[1].slice(9), `WARN  odd name ${HTML}`, "HTML in a line is text");
    assert.equal(await page.evaluate(() => (window as { __pwned?: number }).__pwned), undefined);
    assert.match((await log.textContent()) ?? "", /job log truncated: 2 more lines not kept/);
  });
});
