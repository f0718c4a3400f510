/**
 * An accessibility scan of every dashboard view in headless Chromium with axe-core: no serious
 * or critical violation on the login page, the overview (with a paused queue and a queue with no
 * worker), the jobs list, a failed job's page, the dead-letter queue and the schedules — at
 * desktop size in light mode, and on a phone (390×844) in dark mode, where the page must not
 * scroll sideways either.
 *
 * Needs /usr/bin/chromium (CI: `apt-get install -y chromium`), or CHROMIUM_PATH. Without it
 * the test is skipped locally and fails when CI=true.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { z } from "zod";
import { createFetchHandler } from "../../src/http/app.js";
import { toNodeHandler } from "../../src/http/node.js";
import { defineJob, type Errand, openErrand, PermanentError, silentLogger } from "../../src/index.js";
import { launchChromium, skipWithoutChromium } from "../helpers/chromium.js";
import { defs, runJobs, TOKEN } from "./helpers.js";

const skip = skipWithoutChromium;
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const report = defineJob({
  name: "render-report",
  queue: "reports",
  schema: z.object({ n: z.number() }),
  maxAttempts: 1,
  async run(payload) {
    if (payload.n === 2) throw new PermanentError("template missing");
    return { pages: payload.n };
  },
});

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe("dashboard accessibility (axe-core)", { skip }, () => {
  let errand: Errand;
  let server: Server;
  let browser: Browser;
  let page: Page;
  let base: string;
  let failedId: string;
  /** The dashboard's views, each with an element that shows it has rendered. */
  const views = (): [string, string][] => [
    ["/", "tr[data-queue=reports]"],
    ["/#/jobs", `a[href="#/jobs/${failedId}"]`],
    [`/#/jobs/${failedId}`, ".breadcrumb"],
    ["/#/dlq", `a[href="#/jobs/${failedId}"]`],
    ["/#/schedules", "text=nightly-report"],
  ];

  before(async () => {
    errand = await openErrand({ url: "memory:", jobs: defs(report), logger: silentLogger() });
    await errand.enqueueMany(report, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    await runJobs(errand, 2, ["reports"]);
    failedId = (await errand.listJobs({ state: "failed" })).jobs[0].id;
    await errand.enqueue(report, { n: 3 }); // due, and no worker serves "reports" now
    await errand.pauseQueue("reports");
    errand.schedule("nightly-report", "0 3 * * *", report, { n: 4 });
    await errand.syncSchedules();
    server = createServer(toNodeHandler(createFetchHandler(errand, { dashboardToken: TOKEN })));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
  });

  after(async () => {
    await browser?.close();
    if (server) await new Promise((r) => server.close(r));
    await errand?.close();
  });

  /** axe's serious and critical violations on the page as it is now. */
  async function scan(): Promise<string[]> {
    // Through the DevTools protocol, so the dashboard's Content-Security-Policy does not apply.
    await page.evaluate(AXE);
    const violations = (await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe;
      return (await axe.run()).violations;
    })) as Violation[];
    return violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
  }

  test("login, overview, jobs, a failed job, the dead-letter queue and schedules", async () => {
    await page.goto(`${base}/`);
    await page.waitForSelector("#token");
    assert.deepEqual(await scan(), [], "login page");
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForURL(`${base}/`);
    for (const [path, ready] of views()) {
      await page.goto(`${base}${path}`);
      await page.locator(ready).first().waitFor();
      assert.deepEqual(await scan(), [], `view ${path}`);
    }
  });

  test("on a phone (390×844) in dark mode: dark colours, no sideways page scroll, no serious or critical violation", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: "dark" });
    for (const [path, ready] of [...views(), ["/#/workers", "h1"]]) {
      await page.goto(`${base}${path}`);
      await page.locator(ready).first().waitFor();
      const layout = await page.evaluate(() => ({
        scrollWidth: document.documentElement.scrollWidth,
        viewport: document.documentElement.clientWidth,
        background: getComputedStyle(document.documentElement).backgroundColor,
      }));
      assert.ok(
        layout.scrollWidth <= layout.viewport,
        `view ${path}: the page is ${layout.scrollWidth}px wide in a ${layout.viewport}px viewport`,
      );
      const [r, g, b] = (layout.background.match(/\d+/g) ?? []).map(Number);
      assert.ok(r + g + b < 120, `view ${path}: dark background, got ${layout.background}`);
      assert.deepEqual(await scan(), [], `view ${path} (phone, dark)`);
    }
  });
});
