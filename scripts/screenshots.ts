/**
 * Screenshots of the dashboard's main views into docs/screenshots/, from a seeded in-memory
 * errand (an hour of traffic over four queues, a dead-letter queue, a running job with
 * progress, schedules and workers) served on 127.0.0.1.
 *
 *   node --import tsx scripts/screenshots.ts
 *
 * Needs Chromium at /usr/bin/chromium (Debian: apt-get install -y chromium), or CHROMIUM_PATH.
 */
import { mkdir } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium } from "playwright-core";
import { z } from "zod";
import { createFetchHandler } from "../src/http/app.js";
import { toNodeHandler } from "../src/http/node.js";
import { defineJob, MemoryStore, openErrand, PermanentError, silentLogger } from "../src/index.js";

const OUT = new URL("../docs/screenshots/", import.meta.url);
const TOKEN = "screenshot-token-0123456789";
let offset = 0;
const store = new MemoryStore({ clock: () => Date.now() + offset });

const outcome = z.object({ fail: z.string().optional(), ms: z.number().optional() }).passthrough();
const handler = async (p: z.infer<typeof outcome>) => {
  if (p.ms) await new Promise((r) => setTimeout(r, p.ms));
  if (p.fail === "permanent") throw new PermanentError("recipient address rejected: 550 5.1.1 user unknown");
  if (p.fail) throw new Error(p.fail);
  return { ok: true, at: new Date().toISOString() };
};
const sendEmail = defineJob({
  name: "send-email",
  queue: "emails",
  schema: outcome,
  maxAttempts: 1,
  run: handler,
});
const deliverWebhook = defineJob({
  name: "deliver-webhook",
  queue: "webhooks",
  schema: outcome,
  maxAttempts: 3,
  backoff: { base: "5ms", max: "10ms", jitter: 0 },
  run: handler,
});
const resizeImage = defineJob({
  name: "resize-image",
  queue: "images",
  schema: outcome,
  maxAttempts: 1,
  run: handler,
});
const buildReport = defineJob({
  name: "build-report",
  queue: "reports",
  schema: z.object({ month: z.string(), fail: z.string().optional() }),
  maxAttempts: 2,
  async run(p, ctx) {
    if (p.fail) throw new Error(p.fail);
    await ctx.progress(0.42, "rendering page 42 of 100");
    await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
  },
});

const errand = await openErrand({
  store,
  jobs: [sendEmail, deliverWebhook, resizeImage, buildReport],
  logger: silentLogger(),
});
let finished = 0;
for (const e of ["completed", "failed"] as const) errand.on(e, () => finished++);
const worker = errand.work(
  { emails: { concurrency: 20 }, webhooks: { concurrency: 10 }, images: { concurrency: 8 } },
  { pollInterval: 20 },
);

async function until(target: number) {
  while (finished < target) await new Promise((r) => setTimeout(r, 2));
}

// An hour of traffic, minute by minute, with an incident around 20 minutes ago.
let expected = 0;
let seed = 7;
const rand = () => {
  seed = (seed * 16807) % 2147483647;
  return seed / 2147483647;
};
for (let m = 60; m >= 1; m--) {
  offset = -m * 60_000;
  const incident = m >= 17 && m <= 22;
  const emails = Array.from({ length: 8 + Math.floor(rand() * 10) }, (_, i) => ({
    payload:
      rand() < (incident ? 0.35 : 0.03)
        ? { to: `user${m}-${i}@example.com`, fail: "permanent" }
        : { to: `user${m}-${i}@example.com` },
  }));
  const hooks = Array.from({ length: 3 + Math.floor(rand() * 5) }, (_, i) => ({
    payload:
      rand() < (incident ? 0.5 : 0.02)
        ? { url: `https://hooks.example.com/${m}/${i}`, fail: "HTTP 502 from hooks.example.com" }
        : { url: `https://hooks.example.com/${m}/${i}` },
  }));
  const images = Array.from({ length: 2 + Math.floor(rand() * 4) }, (_, i) => ({
    payload: { file: `uploads/${m}-${i}.png` },
  }));
  await errand.enqueueMany(sendEmail, emails);
  await errand.enqueueMany(deliverWebhook, hooks);
  await errand.enqueueMany(resizeImage, images);
  expected += emails.length + hooks.length + images.length;
  await until(expected);
}
offset = -30_000;
// The job the XSS check and the job page are about: HTML in the payload, three failed attempts.
const xss = await errand.enqueue(
  deliverWebhook,
  {
    url: "https://hooks.example.com/orders",
    note: "<script>window.__pwned=1</script><img src=x onerror=alert(1)>",
    fail: "ECONNRESET: socket hang up",
  },
  { key: "order-1042-paid" },
);
expected++;
await until(expected);
offset = 0;
await worker.stop();

// Work waiting and in flight.
await errand.enqueueMany(
  sendEmail,
  Array.from({ length: 37 }, (_, i) => ({ payload: { to: `later${i}@example.com` } })),
);
offset = -95_000;
await errand.enqueueMany(
  resizeImage,
  Array.from({ length: 12 }, (_, i) => ({ payload: { file: `backlog/${i}.png` } })),
);
offset = 0;
await errand.enqueueMany(
  deliverWebhook,
  Array.from({ length: 5 }, (_, i) => ({
    payload: { url: `https://hooks.example.com/later/${i}` },
    delay: "10m",
  })),
);
await errand.enqueue(buildReport, { month: "2026-11" });
const reports = errand.work({ reports: { concurrency: 2 } }, { id: "reports-1.internal:4127:9f2c01aa" });
while ((await store.listJobs({ queue: "reports", state: "running" })).jobs.length === 0)
  await new Promise((r) => setTimeout(r, 5));
await store.registerWorker({
  id: "web-2.internal:318:5be07d13",
  host: "web-2.internal",
  pid: 318,
  queues: { emails: 20, webhooks: 10, images: 8 },
  running: 0,
  processed: 18234,
});

const now = Date.now();
const HOUR = 3_600_000;
/** The next instant after `now` that is `minute` past some hour (and, with `hour`, that hour, UTC). */
const next = (minute: number, hour?: number) => {
  const d = new Date(now);
  d.setUTCSeconds(0, 0);
  d.setUTCMinutes(minute);
  if (hour !== undefined) d.setUTCHours(hour);
  while (d.getTime() <= now) d.setTime(d.getTime() + (hour === undefined ? HOUR : 24 * HOUR));
  return d;
};
const quarter = new Date(Math.ceil(now / 900_000) * 900_000);
const base = {
  timezone: "UTC",
  payload: {},
  priority: 0,
  missed: "latest" as const,
  source: "code" as const,
};
await store.upsertSchedule({
  ...base,
  name: "nightly-report",
  cron: "0 3 * * *",
  jobName: "build-report",
  queue: "reports",
  nextRunAt: next(0, 3),
});
await store.upsertSchedule({
  ...base,
  name: "digest-emails",
  cron: "*/15 * * * *",
  jobName: "send-email",
  queue: "emails",
  timezone: "Europe/Berlin",
  nextRunAt: quarter,
});
await store.upsertSchedule({
  ...base,
  name: "cleanup-uploads",
  cron: "30 * * * *",
  jobName: "resize-image",
  queue: "images",
  missed: "all",
  source: "cli",
  nextRunAt: next(30),
});
// digest-emails fired its last slot (a quarter hour before the next one), a second after it was due.
offset = quarter.getTime() - 900_000 + 1000 - Date.now();
await store.advanceSchedule({
  name: "digest-emails",
  expectedNextRunAt: quarter,
  nextRunAt: quarter,
  lastSlot: new Date(quarter.getTime() - 900_000),
});
offset = 0;

const server = createServer(toNodeHandler(createFetchHandler(errand, { dashboardToken: TOKEN })));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  await mkdir(OUT, { recursive: true });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  const shot = async (name: string, fullPage = true) => {
    await page.waitForLoadState("networkidle");
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.screenshot({ path: new URL(`${name}.png`, OUT).pathname, fullPage });
    console.log(`docs/screenshots/${name}.png`);
  };
  await page.goto(`${origin}/login`);
  await shot("login");
  await page.fill("#token", TOKEN);
  await page.click("button[type=submit]");
  await page.waitForSelector("tr[data-queue=emails]");
  await shot("overview");
  await page.goto(`${origin}/#/jobs?queue=webhooks`);
  await page.waitForSelector("tr[data-id]");
  await shot("jobs", false);
  await page.goto(`${origin}/#/jobs/${xss.id}`);
  await page.waitForSelector("[data-testid=attempts]");
  await page.click("details.stack summary");
  await shot("job");
  await page.goto(`${origin}/#/dlq`);
  await page.waitForSelector("tr[data-id]");
  await page.locator("tbody input[type=checkbox]").nth(1).check();
  await page.locator("tbody input[type=checkbox]").nth(2).check();
  await shot("dlq", false);
  await page.goto(`${origin}/#/schedules`);
  await page.waitForSelector("tr[data-schedule]");
  await shot("schedules");
  await page.goto(`${origin}/#/workers`);
  await page.waitForSelector("tr[data-worker]");
  await shot("workers");
  if (await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned))
    throw new Error("a payload's script ran");
} finally {
  await browser.close();
  server.close();
  await reports.stop({ timeout: 50 });
  await errand.close();
}
