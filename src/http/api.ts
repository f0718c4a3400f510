/**
 * The JSON API under /api/ — what the dashboard reads and acts through, and what scripts call
 * with `Authorization: Bearer $ERRAND_DASHBOARD_TOKEN`.
 *
 *   GET  /api/stats                       per-queue counts, oldest pending age, DLQ depth
 *   GET  /api/throughput?since=1h&bucket=1m
 *   GET  /api/jobs?queue&state&name&search&limit&cursor
 *   GET  /api/jobs/count | POST /api/jobs/bulk | GET /api/dlq/groups | GET /api/timings  (api-operate.ts)
 *   GET  /api/jobs/:id
 *   POST /api/jobs/:id/retry | cancel | discard
 *   POST /api/dlq/retry | /api/dlq/discard   body {ids:[…]} or {queue?, all:true}
 *   GET  /api/jobs/:id                    the job, with `waiting`: why a pending one waits
 *   GET  /api/queues                      every queue: counts, paused (since), live workers
 *   POST /api/queues/:queue/pause | resume
 *   GET  /api/schedules
 *   POST /api/schedules/:name/pause | resume | run
 *   GET  /api/workers
 *
 * Every answer is JSON; bad input is a 4xx naming the problem, never a 500. Only the store
 * contract is used, so it behaves the same on memory, SQLite and Postgres.
 */

import { viewLinks } from "../dependencies.js";
import { ValidationError } from "../errors.js";
import { JOB_STATES, type JobRecord, type JobState, NAME_PATTERN } from "../job.js";
import { emptyStats } from "../store/common.js";
import type { QueueStats } from "../store/types.js";
import { bulkJobs, countJobs, deadLetterGroups, resumeLimits, timings } from "./api-operate.js";
import { bad, checkNameParam, durationParam, HttpError, query } from "./api-params.js";
import { BodyError, readJsonObject } from "./body.js";
import { listJobsWithin } from "./page-budget.js";
import { guard, jsonResponse } from "./security.js";
import type { RouteContext } from "./types.js";

/** Workers whose last heartbeat is older than this are not listed as live. */
export const WORKER_STALE_MS = 60_000;
const MAX_IDS = 1000;
const MAX_SEARCH = 256;
const THROUGHPUT_MAX_SINCE = 7 * 86_400_000;
const THROUGHPUT_MAX_BUCKETS = 2000;

type Handler = (request: Request, ctx: RouteContext, params: string[]) => Promise<Response>;

interface Endpoint {
  method: "GET" | "POST";
  pattern: RegExp;
  handler: Handler;
}

const ID = "([^/]+)";
const ENDPOINTS: Endpoint[] = [
  { method: "GET", pattern: /^\/api\/stats$/, handler: getStats },
  { method: "GET", pattern: /^\/api\/throughput$/, handler: getThroughput },
  { method: "GET", pattern: /^\/api\/jobs$/, handler: listJobs },
  { method: "GET", pattern: /^\/api\/jobs\/count$/, handler: countJobs },
  { method: "POST", pattern: /^\/api\/jobs\/bulk$/, handler: bulkJobs },
  { method: "GET", pattern: /^\/api\/dlq\/groups$/, handler: deadLetterGroups },
  { method: "GET", pattern: /^\/api\/timings$/, handler: timings },
  { method: "GET", pattern: new RegExp(`^/api/jobs/${ID}$`), handler: getJob },
  { method: "POST", pattern: new RegExp(`^/api/jobs/${ID}/retry$`), handler: retryJob },
  { method: "POST", pattern: new RegExp(`^/api/jobs/${ID}/cancel$`), handler: cancelJob },
  { method: "POST", pattern: new RegExp(`^/api/jobs/${ID}/discard$`), handler: discardJob },
  { method: "POST", pattern: /^\/api\/dlq\/retry$/, handler: (r, c) => bulk(r, c, "retry") },
  { method: "POST", pattern: /^\/api\/dlq\/discard$/, handler: (r, c) => bulk(r, c, "discard") },
  { method: "GET", pattern: /^\/api\/queues$/, handler: listQueues },
  { method: "POST", pattern: new RegExp(`^/api/queues/${ID}/(pause|resume)$`), handler: pauseQueue },
  { method: "POST", pattern: new RegExp(`^/api/queues/${ID}/resume-limits$`), handler: resumeLimits },
  { method: "GET", pattern: /^\/api\/schedules$/, handler: listSchedules },
  {
    method: "POST",
    pattern: new RegExp(`^/api/schedules/${ID}/(pause|resume|run)$`),
    handler: actOnSchedule,
  },
  { method: "GET", pattern: /^\/api\/workers$/, handler: listWorkers },
];

export async function handleApi(request: Request, ctx: RouteContext): Promise<Response | null> {
  const { path } = ctx;
  if (path !== "/api" && !path.startsWith("/api/")) return null;
  if (path.startsWith("/api/cron/")) return null; // the tick endpoint's, with its own secret
  const method = request.method === "HEAD" ? "GET" : request.method;
  const changesState = method !== "GET" && method !== "OPTIONS";
  const gate = guard(request, ctx.options, changesState);
  if (!gate.ok) return gate.response;

  const matches = ENDPOINTS.map((e) => ({ e, m: e.pattern.exec(path) })).filter((x) => x.m !== null);
  if (matches.length === 0) return jsonResponse(404, { error: `no API endpoint ${path}` });
  const match = matches.find((x) => x.e.method === method);
  if (!match) {
    const allow = [...new Set(matches.map((x) => x.e.method))].join(", ");
    return jsonResponse(
      405,
      { error: `method ${request.method} not allowed on ${path}; use ${allow}` },
      { allow },
    );
  }
  try {
    const params = match.m!.slice(1).map(decodeParam);
    const response = await match.e.handler(request, ctx, params);
    return request.method === "HEAD"
      ? new Response(null, { status: response.status, headers: response.headers })
      : response;
  } catch (err) {
    if (err instanceof HttpError || err instanceof BodyError)
      return jsonResponse(err.status, { error: err.message });
    if (err instanceof ValidationError) return jsonResponse(400, { error: err.message });
    throw err;
  }
}

function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw bad(`malformed path segment ${JSON.stringify(raw)}`);
  }
}

/** Job ids are positive integers in every store; anything else names no job. */
function jobId(raw: string): string {
  if (!/^[1-9]\d{0,17}$/.test(raw)) throw new HttpError(404, `no job with id ${JSON.stringify(raw)}`);
  return raw;
}

async function findJob(ctx: RouteContext, raw: string): Promise<JobRecord> {
  const id = jobId(raw);
  const job = await ctx.errand.getJob(id);
  if (!job) throw new HttpError(404, `no job with id ${id}`);
  return job;
}

async function getStats(_request: Request, ctx: RouteContext): Promise<Response> {
  query(ctx, []);
  // Queues of registered jobs show up even before their first job; each says whether it is
  // paused and how many live workers serve it.
  const [queues, now] = await Promise.all([ctx.errand.queues(), ctx.errand.now()]);
  const totals = emptyStats("*");
  for (const q of queues) {
    for (const key of Object.keys(totals) as (keyof QueueStats)[]) {
      if (key === "queue") continue;
      if (key === "oldestPendingMs") {
        if (q.oldestPendingMs !== null)
          totals.oldestPendingMs = Math.max(totals.oldestPendingMs ?? 0, q.oldestPendingMs);
      } else totals[key] += q[key];
    }
  }
  const { queue: _q, ...total } = totals;
  return jsonResponse(200, { now, queues, total, dlq: total.failed });
}

async function getThroughput(_request: Request, ctx: RouteContext): Promise<Response> {
  const params = query(ctx, ["since", "bucket", "queue"]);
  const sinceMs = durationParam(params.get("since"), "1h", "since");
  const bucketMs = durationParam(params.get("bucket"), "1m", "bucket");
  const queue = checkNameParam(params.get("queue"), "queue");
  if (sinceMs < 1000 || sinceMs > THROUGHPUT_MAX_SINCE) throw bad("since must be from 1s to 7d");
  if (bucketMs < 1000) throw bad("bucket must be at least 1s");
  if (bucketMs > sinceMs) throw bad("bucket must not be longer than since");
  if (sinceMs / bucketMs > THROUGHPUT_MAX_BUCKETS) {
    throw bad(`since/bucket gives more than ${THROUGHPUT_MAX_BUCKETS} buckets; choose a larger bucket`);
  }
  const [buckets, now] = await Promise.all([ctx.errand.throughput(sinceMs, bucketMs), ctx.errand.now()]);
  const from = Math.floor((now.getTime() - sinceMs) / bucketMs) * bucketMs;
  return jsonResponse(200, {
    now,
    sinceMs,
    bucketMs,
    from: new Date(from),
    buckets: queue ? buckets.filter((b) => b.queue === queue) : buckets,
  });
}

async function listJobs(_request: Request, ctx: RouteContext): Promise<Response> {
  const params = query(ctx, ["queue", "state", "name", "search", "limit", "cursor"]);
  const state = params.get("state");
  if (state !== undefined && !JOB_STATES.includes(state as JobState)) {
    throw bad(`state must be one of ${JOB_STATES.join(", ")}; got ${JSON.stringify(state)}`);
  }
  const limitText = params.get("limit") ?? "50";
  if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > 1000) {
    throw bad(`limit must be an integer from 1 to 1000; got ${JSON.stringify(limitText)}`);
  }
  const search = params.get("search");
  if (search !== undefined && search.length > MAX_SEARCH)
    throw bad(`search must be at most ${MAX_SEARCH} characters`);
  const cursor = params.get("cursor");
  if (cursor !== undefined && !/^\d{1,18}$/.test(cursor)) {
    throw bad(`invalid cursor ${JSON.stringify(cursor)}: pass nextCursor from the previous page`);
  }
  const page = await listJobsWithin(ctx.errand, {
    queue: checkNameParam(params.get("queue"), "queue"),
    name: checkNameParam(params.get("name"), "job"),
    state: state as JobState | undefined,
    search,
    cursor,
    limit: Number(limitText),
  });
  return jsonResponse(200, page);
}

async function getJob(_request: Request, ctx: RouteContext, [id]: string[]): Promise<Response> {
  query(ctx, []);
  const job = await findJob(ctx, id);
  const [waiting, links] = await Promise.all([ctx.errand.whyWaiting(job.id), ctx.errand.getJobLinks(job.id)]);
  return jsonResponse(200, { ...job, waiting: waiting ?? [], ...viewLinks(links) });
}

async function retryJob(_request: Request, ctx: RouteContext, [id]: string[]): Promise<Response> {
  const job = await findJob(ctx, id);
  if (job.state !== "failed" && job.state !== "cancelled") {
    throw new HttpError(409, `job ${job.id} is ${job.state}: only failed or cancelled jobs can be retried`);
  }
  const retried = await ctx.errand.retry(job.id);
  if (!retried) throw new HttpError(409, `job ${job.id} changed state meanwhile; reload and try again`);
  return jsonResponse(200, retried);
}

async function cancelJob(_request: Request, ctx: RouteContext, [id]: string[]): Promise<Response> {
  const job = await findJob(ctx, id);
  if (job.state !== "waiting" && job.state !== "pending" && job.state !== "running") {
    throw new HttpError(
      409,
      `job ${job.id} is ${job.state}: only waiting, pending or running jobs can be cancelled`,
    );
  }
  const cancelled = await ctx.errand.cancel(job.id);
  if (!cancelled) throw new HttpError(404, `no job with id ${job.id}`);
  return jsonResponse(200, cancelled);
}

async function discardJob(_request: Request, ctx: RouteContext, [id]: string[]): Promise<Response> {
  const job = await findJob(ctx, id);
  if (job.state !== "failed") {
    throw new HttpError(
      409,
      `job ${job.id} is ${job.state}: only failed jobs (the dead-letter queue) can be discarded`,
    );
  }
  if (!(await ctx.errand.discard(job.id))) throw new HttpError(409, `job ${job.id} changed state meanwhile`);
  return jsonResponse(200, { discarded: 1, id: job.id });
}

/** Bulk DLQ actions: `{ids: [...]}` (those jobs) or `{all: true, queue?}` (every failed job of a queue, or of all). */
async function bulk(request: Request, ctx: RouteContext, action: "retry" | "discard"): Promise<Response> {
  const body = await readJsonObject(request);
  for (const key of Object.keys(body)) {
    if (!["ids", "all", "queue"].includes(key))
      throw bad(`unknown field "${key}"; expected ids, or all and queue`);
  }
  const queue = body.queue;
  if (queue !== undefined && (typeof queue !== "string" || !NAME_PATTERN.test(queue))) {
    throw bad("queue must be a queue name");
  }
  let filter: { ids?: string[]; queue?: string };
  if (body.ids !== undefined) {
    if (body.all !== undefined) throw bad("give either ids or all, not both");
    const ids = body.ids;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_IDS) {
      throw bad(`ids must be a non-empty array of at most ${MAX_IDS} job ids`);
    }
    const clean = ids.map((id) => (typeof id === "number" && Number.isSafeInteger(id) ? String(id) : id));
    if (!clean.every((id) => typeof id === "string" && /^[1-9]\d{0,17}$/.test(id))) {
      throw bad("ids must hold job ids (positive integers, as strings or numbers)");
    }
    filter = { ids: [...new Set(clean as string[])], queue: queue as string | undefined };
  } else if (body.all === true) {
    filter = { queue: queue as string | undefined };
  } else {
    throw bad('expected {"ids": [...]} or {"all": true} (with an optional "queue")');
  }
  if (action === "retry") {
    // Without ids, retryJobs takes the dead-letter queue's failed jobs; cancelled ones stay.
    return jsonResponse(200, { retried: await ctx.errand.retryJobs(filter) });
  }
  const discarded = await ctx.errand.discardJobs(filter);
  return jsonResponse(200, { discarded });
}

async function listSchedules(_request: Request, ctx: RouteContext): Promise<Response> {
  query(ctx, []);
  const [schedules, now] = await Promise.all([ctx.errand.listSchedules(), ctx.errand.now()]);
  return jsonResponse(200, { now, schedules });
}

async function listQueues(_request: Request, ctx: RouteContext): Promise<Response> {
  query(ctx, []);
  const [queues, now] = await Promise.all([ctx.errand.queues(), ctx.errand.now()]);
  return jsonResponse(200, { now, queues });
}

/** Any valid queue name may be paused, even one with no jobs yet (queues are implicit). */
async function pauseQueue(_request: Request, ctx: RouteContext, [raw, action]: string[]): Promise<Response> {
  query(ctx, []);
  const queue = checkNameParam(raw, "queue") as string;
  if (action === "pause") return jsonResponse(200, await ctx.errand.pauseQueue(queue));
  return jsonResponse(200, { queue, resumed: await ctx.errand.resumeQueue(queue) });
}

async function actOnSchedule(
  _request: Request,
  ctx: RouteContext,
  [name, action]: string[],
): Promise<Response> {
  query(ctx, []);
  if (!(await ctx.errand.listSchedules()).some((s) => s.name === name))
    throw new HttpError(404, `no schedule named ${JSON.stringify(name)}`);
  if (action === "run") {
    const fired = await ctx.errand.runScheduleNow(name);
    return jsonResponse(200, { schedule: name, jobId: fired.jobId, created: fired.created });
  }
  return jsonResponse(200, { schedule: await ctx.errand.setSchedulePaused(name, action === "pause") });
}

async function listWorkers(_request: Request, ctx: RouteContext): Promise<Response> {
  query(ctx, []);
  const [workers, now] = await Promise.all([ctx.errand.listWorkers(WORKER_STALE_MS), ctx.errand.now()]);
  return jsonResponse(200, { now, staleMs: WORKER_STALE_MS, workers });
}
