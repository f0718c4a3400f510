/**
 * What the tick endpoint's tests (tick-auth, tick-run) share: a real node:http server on
 * 127.0.0.1, and per store an errand with a due daily schedule and due jobs whose handlers record
 * what ran. CRON_SECRET is cleared while they run, so only the options configure the secret.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { after, before, describe } from "node:test";
import { z } from "zod";
import {
  createFetchHandler,
  createLogger,
  defineJob,
  type Errand,
  type HttpOptions,
  toNodeHandler,
} from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import { type StoreTarget, targets } from "../helpers/targets.js";

export const SECRET = "tick-secret-0123456789abcdef";
export async function listen(
  handler: ReturnType<typeof toNodeHandler>,
): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** The file's tests, once per store ("tick endpoint on sqlite", ...), each given the store's fixture. */
export function describeTick(body: (fixture: ReturnType<typeof tickFixture>) => void): void {
  let savedEnv: string | undefined;
  before(() => {
    savedEnv = process.env.CRON_SECRET;
    delete process.env.CRON_SECRET;
  });
  after(() => {
    if (savedEnv !== undefined) process.env.CRON_SECRET = savedEnv;
  });
  for (const target of targets) {
    describe(`tick endpoint on ${target.name}`, { skip: target.skip }, () => body(tickFixture(target)));
  }
}

/** `ran`: what the handlers ran since the last setUp (a report's key, or "work:<n>"). */
function tickFixture(target: StoreTarget) {
  const ran: string[] = [];
  const work = defineJob({
    name: "work",
    queue: "q",
    schema: z.object({ n: z.number() }),
    run: (p) => {
      ran.push(`work:${p.n}`);
    },
  });
  const report = defineJob({
    name: "report",
    queue: "reports",
    schema: z.object({}),
    run: (_p, ctx) => {
      ran.push(ctx.job.key ?? "");
    },
  });

  /** A fresh errand with a due daily schedule (its slot: today 00:00 UTC) and `pending` due jobs. */
  async function setUp(pending = 3, options: HttpOptions = { cronSecret: SECRET }) {
    ran.length = 0;
    const logLines: string[] = [];
    const logger = createLogger({
      pretty: false,
      level: "debug",
      destination: new Writable({
        write(chunk, _enc, cb) {
          logLines.push(String(chunk));
          cb();
        },
      }),
    });
    const opened = await target.openErrand({
      jobs: [work, report] as unknown as AnyJobDefinition[],
      logger,
    });
    const { errand } = opened;
    errand.schedule("daily-report", "0 0 * * *", report, {});
    await errand.syncSchedules();
    const [row] = await errand.store.listSchedules();
    await errand.store.advanceSchedule({
      name: "daily-report",
      expectedNextRunAt: row.nextRunAt,
      nextRunAt: new Date(row.nextRunAt.getTime() - 2 * 86_400_000),
      lastSlot: null,
    });
    const slot = new Date(row.nextRunAt.getTime() - 86_400_000).toISOString();
    for (let n = 0; n < pending; n++) await errand.enqueue(work, { n });
    const { server, base } = await listen(toNodeHandler(createFetchHandler(errand, options)));
    return {
      errand,
      base,
      slot,
      logLines,
      tick: (init: RequestInit & { token?: string | null; query?: string } = {}) => {
        const headers = new Headers(init.headers);
        if (init.token !== null) headers.set("authorization", `Bearer ${init.token ?? SECRET}`);
        return fetch(`${base}/api/cron/tick${init.query ?? ""}`, { method: "POST", ...init, headers });
      },
      async cleanup() {
        await close(server);
        await opened.cleanup();
      },
    };
  }

  /** Nothing was enqueued or run: the schedule did not move, the jobs are untouched. */
  async function assertNothingDone(errand: Errand, pending: number) {
    assert.deepEqual(ran, [], "no handler ran");
    const jobs = (await errand.listJobs({ limit: 100 })).jobs;
    assert.equal(jobs.length, pending, "no job was enqueued");
    assert.ok(
      jobs.every((j) => j.state === "pending" && j.attempts.length === 0),
      "every job still pending, never attempted",
    );
    const [row] = await errand.store.listSchedules();
    assert.ok(row.nextRunAt.getTime() < Date.now(), "the schedule is still due");
    assert.equal(row.lastSlot, null);
  }

  return { ran, setUp, assertNothingDone };
}
