/**
 * Each framework example (examples/frameworks/) run as a user runs it — its own process, on a
 * free loopback port, on a SQLite file this test shares — and driven over HTTP as the dashboard
 * drives it: retry a dead-lettered job (a JSON body, which the framework's body parser may have
 * read already), cancel and discard jobs, sign in through the login form, and a tick that runs
 * the due job.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { jobs, sendWelcome } from "../../examples/frameworks/jobs.js";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import { ROOT } from "../helpers/sqlite.js";

const TOKEN = "framework-dashboard-token-0123456789abcdef";
const CRON_SECRET = "framework-cron-secret-0123456789abcdef";

interface Example {
  /** The example's entry file, from the repository's root. */
  file: string;
  /** Where the dashboard is mounted. */
  dashboard: string;
  /** Where the tick is mounted. */
  tick: string;
  env?: Record<string, string>;
}

const EXAMPLES: Record<string, Example> = {
  Express: { file: "examples/frameworks/express.ts", dashboard: "/admin/jobs", tick: "/api/cron/tick" },
  Fastify: { file: "examples/frameworks/fastify.ts", dashboard: "/admin/jobs", tick: "/api/cron/tick" },
  Hono: { file: "examples/frameworks/hono.ts", dashboard: "/admin/jobs", tick: "/api/cron/tick" },
  "Next.js route handlers": {
    file: "examples/frameworks/nextjs/serve.ts",
    dashboard: "/admin/jobs",
    tick: "/api/cron/tick",
  },
  NestJS: {
    file: "examples/frameworks/nestjs/main.ts",
    dashboard: "/admin/jobs",
    tick: "/api/cron/tick",
    // Nest's decorators are TypeScript's legacy ones: the example has its own tsconfig.
    env: { TSX_TSCONFIG_PATH: "examples/frameworks/nestjs/tsconfig.json" },
  },
};

/** Starts an example; resolves with its base URL once it says where it listens. */
async function start(example: Example, url: string): Promise<{ base: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--import", "tsx", example.file], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...example.env,
      ERRAND_URL: url,
      PORT: "0",
      ERRAND_DASHBOARD_TOKEN: TOKEN,
      CRON_SECRET,
      ERRAND_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${example.file} did not start in 60 s:\n${output}`)),
      60_000,
    );
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${example.file} exited with ${code} before listening:\n${output}`));
    });
  });
  return { base, child };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

for (const [framework, example] of Object.entries(EXAMPLES)) {
  describe(`${framework}: ${example.file}`, () => {
    let errand: Errand;
    let base: string;
    let child: ChildProcess | undefined;
    const ids: Record<"bounced" | "bouncedToo" | "later" | "due", string> = {
      bounced: "",
      bouncedToo: "",
      later: "",
      due: "",
    };

    const dir = mkdtempSync(join(tmpdir(), "errand-framework-"));

    before(async () => {
      const url = `sqlite:${join(dir, "errand.db")}`;
      errand = await openErrand({ url, jobs, logger: silentLogger() });
      // Two jobs in the dead-letter queue, one pending for later, one due for the tick.
      ids.bounced = (await errand.enqueue(sendWelcome, { to: "ada@bounce.test" })).id;
      ids.bouncedToo = (await errand.enqueue(sendWelcome, { to: "bob@bounce.test" })).id;
      await errand.processJobs({ limit: 10 });
      ids.later = (await errand.enqueue(sendWelcome, { to: "cy@example.com" }, { delay: "1h" })).id;
      ids.due = (await errand.enqueue(sendWelcome, { to: "di@example.com" })).id;
      ({ base, child } = await start(example, url));
    });

    after(async () => {
      if (child) await stop(child);
      await errand?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const dashboardPost = (path: string, body?: unknown) =>
      fetch(`${base}${example.dashboard}/api${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          // As the dashboard's own script sends them: a content type only with a body.
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    test("retry (a JSON body), cancel and discard from the dashboard's API", async () => {
      assert.equal((await errand.getJob(ids.bounced))?.state, "failed");
      const retried = await dashboardPost("/dlq/retry", { ids: [ids.bounced] });
      assert.equal(retried.status, 200, await retried.clone().text());
      assert.equal((await errand.getJob(ids.bounced))?.state, "pending");

      const cancelled = await dashboardPost(`/jobs/${ids.later}/cancel`);
      assert.equal(cancelled.status, 200, await cancelled.clone().text());
      assert.equal((await errand.getJob(ids.later))?.state, "cancelled");

      const discarded = await dashboardPost(`/jobs/${ids.bouncedToo}/discard`);
      assert.equal(discarded.status, 200, await discarded.clone().text());
      assert.equal(await errand.getJob(ids.bouncedToo), null);
    });

    test("the dashboard's page is served at the mount path", async () => {
      const page = await fetch(`${base}${example.dashboard}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(page.status, 200, await page.clone().text());
      assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    });

    test("a wrong JSON body is errand's 400, naming the field", async () => {
      const wrong = await dashboardPost("/dlq/retry", { ids: "not-a-list" });
      assert.equal(wrong.status, 400);
      assert.match(await wrong.text(), /ids/);
    });

    test("the login form (a form body) signs in", async () => {
      const response = await fetch(`${base}${example.dashboard}/login`, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: base,
          "sec-fetch-site": "same-origin",
        },
        body: new URLSearchParams({ token: TOKEN }).toString(),
      });
      assert.equal(response.status, 303, await response.clone().text());
      assert.match(response.headers.get("set-cookie") ?? "", /=/);
    });

    test("the tick (POST with a JSON body) runs the due jobs", async () => {
      const refused = await fetch(`${base}${example.tick}`, { method: "POST" });
      assert.equal(refused.status, 401, await refused.clone().text());
      const response = await fetch(`${base}${example.tick}?limit=10`, {
        method: "POST",
        headers: { authorization: `Bearer ${CRON_SECRET}`, "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(response.status, 200, await response.clone().text());
      const answer = (await response.json()) as { completed: number; failed: number };
      assert.equal((await errand.getJob(ids.due))?.state, "completed");
      // The retried job bounces again: it is back in the dead-letter queue.
      assert.equal((await errand.getJob(ids.bounced))?.state, "failed");
      assert.deepEqual([answer.completed, answer.failed], [1, 1]);
    });
  });
}
