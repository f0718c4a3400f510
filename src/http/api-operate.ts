/**
 * The API's endpoints for operating queues in bulk and at a glance:
 *
 *   GET  /api/jobs/count?action&queue&search   how many jobs a bulk action would take now
 *   POST /api/jobs/bulk   {action, queue?, search?, max?}   retry/discard failed or cancel pending
 *   GET  /api/dlq/groups?queue                 dead letters grouped by error message
 *   GET  /api/timings?window                   runtime and wait percentiles per queue
 *   POST /api/queues/:queue/resume-limits {key?}  lift rate-limit (flow budget) pauses
 *
 * A bulk action runs in the store in batches of BULK_BATCH jobs per transaction, up to `max`
 * (the count the operator confirmed) or BULK_MAX.
 */
import { BULK_MAX, type BulkAction, type BulkFilter } from "../bulk-actions.js";
import { NAME_PATTERN } from "../job.js";
import { DEAD_LETTER_SAMPLE } from "../store/common.js";
import { bad, checkNameParam, durationParam, query } from "./api-params.js";
import { readJsonObject } from "./body.js";
import { jsonResponse } from "./security.js";
import type { RouteContext } from "./types.js";

const ACTIONS: readonly BulkAction[] = ["retry", "discard", "cancel"];
const MAX_SEARCH = 256;
/** The charts read at most this many of the jobs finished within the window. */
export const TIMINGS_SAMPLE = 5000;
const TIMINGS_MAX_WINDOW = 7 * 86_400_000;

function action(value: unknown): BulkAction {
  if (typeof value !== "string" || !ACTIONS.includes(value as BulkAction)) {
    throw bad(`action must be one of ${ACTIONS.join(", ")}; got ${JSON.stringify(value) ?? "nothing"}`);
  }
  return value as BulkAction;
}

function search(value: unknown): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw bad("search must be a string");
  if (value.length > MAX_SEARCH) throw bad(`search must be at most ${MAX_SEARCH} characters`);
  return value;
}

function queue(value: unknown): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string" || !NAME_PATTERN.test(value)) {
    throw bad(
      `queue must be a queue name (letters, digits, "_", ".", ":", "-"); got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

export async function countJobs(_request: Request, ctx: RouteContext): Promise<Response> {
  const params = query(ctx, ["action", "queue", "search"]);
  const filter: BulkFilter = {
    action: action(params.get("action")),
    queue: checkNameParam(params.get("queue"), "queue"),
    search: search(params.get("search")),
  };
  const count = await ctx.errand.countMatchingJobs(filter, BULK_MAX);
  return jsonResponse(200, { ...filter, count, capped: count >= BULK_MAX });
}

export async function bulkJobs(request: Request, ctx: RouteContext): Promise<Response> {
  const body = await readJsonObject(request);
  for (const key of Object.keys(body)) {
    if (!["action", "queue", "search", "max"].includes(key))
      throw bad(`unknown field "${key}"; expected action, queue, search, max`);
  }
  const max = body.max ?? BULK_MAX;
  if (typeof max !== "number" || !Number.isInteger(max) || max < 1 || max > BULK_MAX) {
    throw bad(`max must be an integer from 1 to ${BULK_MAX}`);
  }
  const filter: BulkFilter = {
    action: action(body.action),
    queue: queue(body.queue),
    search: search(body.search),
  };
  const done = await ctx.errand.actOnMatchingJobs(filter, max);
  return jsonResponse(200, { ...filter, done });
}

export async function deadLetterGroups(_request: Request, ctx: RouteContext): Promise<Response> {
  const params = query(ctx, ["queue"]);
  const groups = await ctx.errand.deadLetterGroups(checkNameParam(params.get("queue"), "queue"));
  return jsonResponse(200, { sample: DEAD_LETTER_SAMPLE, groups });
}

export async function timings(_request: Request, ctx: RouteContext): Promise<Response> {
  const params = query(ctx, ["window"]);
  const windowMs = durationParam(params.get("window"), "1h", "window");
  if (windowMs < 1000 || windowMs > TIMINGS_MAX_WINDOW) throw bad("window must be from 1s to 7d");
  const queues = await ctx.errand.queueTimings(windowMs, TIMINGS_SAMPLE);
  return jsonResponse(200, { windowMs, sample: TIMINGS_SAMPLE, queues });
}

/**
 * Lifts the flow budget pauses rate-limited answers set (errand.resumeFlow): no body or `{}`
 * lifts every one of the queue, `{ key: "k" }` one key's, `{ key: null }` the queue-wide one.
 */
export async function resumeLimits(request: Request, ctx: RouteContext, [raw]: string[]): Promise<Response> {
  query(ctx, []);
  const queue = checkNameParam(raw, "queue") as string;
  const body = await readJsonObject(request, true);
  for (const field of Object.keys(body)) {
    if (field !== "key") throw bad(`unknown field "${field}"; expected key`);
  }
  const lifted = await ctx.errand.resumeFlow(queue, "key" in body ? { key: body.key as string | null } : {});
  return jsonResponse(200, { queue, key: body.key ?? null, all: !("key" in body), lifted });
}
