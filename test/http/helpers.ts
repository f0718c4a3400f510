/**
 * Shared set-up for the HTTP tests: an errand with a few job types, its Fetch handler, and
 * helpers to call it. The store is `memory:` unless ERRAND_HTTP_TEST_URL names another (e.g. a
 * SQLite file, `sqlite:x`, or a Postgres URL: a fresh schema per harness), so the same tests
 * show the HTTP layer holds nothing store-specific.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createFetchHandler, type FetchHandler, type HttpOptions } from "../../src/http/app.js";
import { defineJob, type Errand, openErrand, PermanentError, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import type { Store } from "../../src/store/types.js";

export const TOKEN = "test-dashboard-token-4f1c2b9e";
export const ORIGIN = "http://errand.test";

// Tests decide the token themselves; a developer's environment must not leak in.
delete process.env.ERRAND_DASHBOARD_TOKEN;

const step = z
  .object({ fail: z.boolean().optional(), html: z.string().optional(), n: z.number().optional() })
  .passthrough();

/** Fails for good when the payload says `fail: true`, completes otherwise. */
export const sendEmail = defineJob({
  name: "send-email",
  queue: "emails",
  schema: step,
  maxAttempts: 1,
  async run(payload) {
    if (payload.fail) throw new PermanentError("mailbox unavailable");
    return { sent: true };
  },
});

export const buildReport = defineJob({
  name: "build-report",
  queue: "reports",
  schema: step,
  maxAttempts: 1,
  async run(payload) {
    if (payload.fail) throw new PermanentError("report failed");
    return { pages: 3 };
  },
});

/** The job definitions as a list for `jobs:` / `register`. */
export const defs = (...jobs: AnyJobDefinition[]) => jobs;

export interface Harness {
  errand: Errand;
  handler: FetchHandler;
  cleanup(): Promise<void>;
}

let schemaSeq = 0;

export async function harness(
  options: HttpOptions = { dashboardToken: TOKEN },
  store?: Store,
): Promise<Harness> {
  const url = process.env.ERRAND_HTTP_TEST_URL ?? "memory:";
  let dir: string | null = null;
  let schema: string | undefined;
  let target = url;
  if (!store && url.startsWith("sqlite:")) {
    dir = mkdtempSync(join(tmpdir(), "errand-http-"));
    target = `sqlite:${join(dir, "errand.db")}`;
  }
  if (!store && /^postgres(ql)?:/.test(url)) schema = `errand_http_${process.pid}_${schemaSeq++}`;
  const errand = await openErrand({
    ...(store ? { store } : { url: target, schema }),
    jobs: defs(sendEmail, buildReport),
    logger: silentLogger(),
  });
  return {
    errand,
    handler: createFetchHandler(errand, options),
    async cleanup() {
      await errand.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (schema) {
        const pg = await import("pg");
        const client = new pg.default.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await client.end();
      }
    },
  };
}

export function call(
  handler: FetchHandler,
  path: string,
  init: RequestInit & { bearer?: string | null } = {},
) {
  const { bearer = TOKEN, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (bearer !== null && !headers.has("authorization")) headers.set("authorization", `Bearer ${bearer}`);
  return handler(new Request(`${ORIGIN}${path}`, { ...rest, headers }));
}

export async function callJson(
  handler: FetchHandler,
  path: string,
  init: RequestInit & { bearer?: string | null } = {},
) {
  const response = await call(handler, path, init);
  const text = await response.text();
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body, headers: response.headers };
}

export function postJson(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  };
}

/** Logs in through the form and returns the Cookie header value. */
export async function login(handler: FetchHandler, prefix = "", token = TOKEN): Promise<string> {
  const response = await handler(
    new Request(`${ORIGIN}${prefix}/login`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: ORIGIN,
        "sec-fetch-site": "same-origin",
      },
      body: new URLSearchParams({ token }).toString(),
    }),
  );
  if (response.status !== 303) throw new Error(`login answered ${response.status}`);
  const setCookie = response.headers.get("set-cookie") ?? "";
  return setCookie.split(";")[0];
}

/** Runs a worker until `count` jobs finished (completed or failed), then stops it. */
export async function runJobs(
  errand: Errand,
  count: number,
  queues: string[] = ["emails", "reports"],
): Promise<void> {
  if (count === 0) return;
  let seen = 0;
  const done = new Promise<void>((resolve) => {
    const on = () => {
      if (++seen === count) {
        errand.off("completed", on);
        errand.off("failed", on);
        resolve();
      }
    };
    errand.on("completed", on);
    errand.on("failed", on);
  });
  const worker = errand.work(queues, { pollInterval: 20 });
  await done;
  await worker.stop();
}

/** Enqueues `ok` good and `bad` failing email jobs and runs them. */
export async function seed(
  errand: Errand,
  ok: number,
  bad: number,
  job: typeof sendEmail | typeof buildReport = sendEmail,
): Promise<void> {
  const items = [
    ...Array.from({ length: ok }, (_, i) => ({ payload: { n: i } })),
    ...Array.from({ length: bad }, (_, i) => ({ payload: { n: ok + i, fail: true } })),
  ];
  if (items.length > 0) await errand.enqueueMany(job as typeof sendEmail, items);
  await runJobs(errand, items.length, [job.queue]);
}
