/**
 * POST or GET /api/cron/tick — the scale-to-zero entry point (docs/semantics.md, Scale to zero). An external
 * scheduler (GitHub Actions, Vercel Cron, cron + curl) calls it with
 * `Authorization: Bearer <CRON_SECRET>`; it fires the due schedules, processes a bounded batch of
 * jobs and answers a JSON summary:
 *   { schedulesFired, claimed, completed, retried, failed, snoozed, cancelled, released, stillDue, durationMs }
 *
 * The checks, in order, each answering before anything is done:
 * - a method other than POST or GET → 405 with `Allow: GET, POST`. GET is what Vercel Cron sends.
 *   A GET that changes state is safe here only because it needs the bearer token: a cross-site
 *   page (a link, an <img>) cannot attach an Authorization header, so it cannot forge a tick;
 * - no secret configured (`cronSecret` option, else CRON_SECRET; blank = none) → 503: the
 *   endpoint is off;
 * - a missing, malformed or wrong token → 401. The comparison is constant-time (HMAC-SHA256 of
 *   both sides, then timingSafeEqual, so neither content nor length leaks). The token is never
 *   logged.
 * - a body over 16 KiB (by Content-Length, or by counting the bytes as they come) → 413;
 * - `?limit=` not an integer from 1 to the maximum (default 100, max 1000) → 400.
 *
 * Whitespace: HTTP strips leading and trailing whitespace from header values (RFC 9110 §5.5;
 * node's parser and the Fetch `Headers` class both do), so `Bearer s3cret ` reaches any server as
 * `Bearer s3cret` — no endpoint can tell them apart. Whitespace inside the value
 * (`Bearer s3cret x`, a token split in two) is refused. The configured secret is trimmed the
 * same way (a secret file's trailing newline would otherwise make it unmatchable).
 */
import type { Errand } from "../errand.js";
import { ValidationError } from "../errors.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import { runTick, type TickOptions } from "../schedule/tick.js";
import { BodyError, readText } from "./body.js";
import { json } from "./respond.js";
import { safeEqual } from "./security.js";
import type { FetchHandler, HttpOptions, RouteContext } from "./types.js";

export const TICK_PATH = "/api/cron/tick";
/** A tick needs no body; anything bigger than this is refused unread. */
export const TICK_BODY_LIMIT = 16 * 1024;
export const DEFAULT_TICK_LIMIT = 100;
export const MAX_TICK_LIMIT = 1000;

export type TickHandlerOptions = Pick<HttpOptions, "cronSecret" | "queues" | "tickLimit" | "tickTimeBudget"> &
  Pick<TickOptions, "beforeProcess" | "finishTimeout">;

export async function handleTick(request: Request, ctx: RouteContext): Promise<Response | null> {
  if (ctx.path !== TICK_PATH) return null;
  return serveTick(request, ctx.errand, ctx.options, ctx.url);
}

/**
 * The tick as a stand-alone Fetch handler, for mounting at a path of your choice: a Next.js
 * route handler (`export const POST = createTickHandler(errand)`), Hono, Bun, or Node through
 * toNodeHandler. It answers every request it gets as the tick endpoint.
 */
export function createTickHandler(errand: Errand, options: TickHandlerOptions = {}): FetchHandler {
  onlyKnownFields(options, TICK_HANDLER_FIELDS, "createTickHandler options");
  checkLimits(options);
  return async (request) => {
    try {
      return await serveTick(request, errand, options, new URL(request.url));
    } catch (err) {
      errand.log.error({ err }, "tick failed");
      return json(500, { error: "internal error" });
    }
  };
}

/** The configured secret, or null when the endpoint is off. */
export function cronSecret(options: Pick<HttpOptions, "cronSecret">): string | null {
  const secret = (options.cronSecret ?? process.env.CRON_SECRET ?? "").trim();
  return secret === "" ? null : secret;
}

const TICK_HANDLER_FIELDS = knownFields(
  "cronSecret",
  "queues",
  "tickLimit",
  "tickTimeBudget",
  "beforeProcess",
  "finishTimeout",
);
const TICK_LIMIT_FIELDS = knownFields("default", "max");

/** tickLimit checked; also where both handlers check it when they are made. */
export function checkLimits(options: Pick<HttpOptions, "tickLimit">): { def: number; max: number } {
  if (options.tickLimit !== undefined && options.tickLimit !== null)
    onlyKnownFields(options.tickLimit, TICK_LIMIT_FIELDS, "tickLimit");
  const max = options.tickLimit?.max ?? MAX_TICK_LIMIT;
  const def = Math.min(options.tickLimit?.default ?? DEFAULT_TICK_LIMIT, max);
  if (!Number.isInteger(max) || max < 1 || max > 10_000)
    throw new ValidationError(`tickLimit.max must be an integer from 1 to 10000, got ${max}`);
  if (!Number.isInteger(def) || def < 1)
    throw new ValidationError(`tickLimit.default must be an integer from 1 to tickLimit.max, got ${def}`);
  return { def, max };
}

function authorized(request: Request, secret: string): boolean {
  const header = request.headers.get("authorization");
  if (header === null) return false;
  const match = /^Bearer +(\S+)$/i.exec(header);
  return match !== null && safeEqual(match[1], secret);
}

async function serveTick(
  request: Request,
  errand: Errand,
  options: TickHandlerOptions & Pick<HttpOptions, "tickFinishTimeout">,
  url: URL,
): Promise<Response> {
  if (request.method !== "POST" && request.method !== "GET") {
    return json(
      405,
      {
        error: `method ${request.method} not allowed: the tick endpoint takes POST (or GET, as Vercel Cron sends)`,
      },
      { allow: "GET, POST" },
    );
  }
  const secret = cronSecret(options);
  if (secret === null) return json(503, { error: "tick endpoint disabled: set CRON_SECRET" });
  if (!authorized(request, secret)) {
    errand.log.warn(
      {
        path: url.pathname,
        authorization: request.headers.has("authorization") ? "wrong or malformed" : "missing",
      },
      "tick refused: missing or wrong bearer token",
    );
    return json(
      401,
      { error: "unauthorized: send Authorization: Bearer <CRON_SECRET>" },
      { "www-authenticate": 'Bearer realm="errand tick"' },
    );
  }
  try {
    await readText(request, TICK_BODY_LIMIT);
  } catch (err) {
    if (err instanceof BodyError && err.status === 413) {
      return json(413, {
        error: `request body too large: the tick endpoint takes at most ${TICK_BODY_LIMIT} bytes (and needs none)`,
      });
    }
    if (!(err instanceof BodyError)) throw err;
    // Not UTF-8 or unreadable: the tick ignores its body, but only after reading it within the cap.
    if (err.status !== 400) return json(err.status, { error: err.message });
  }
  const { def, max } = checkLimits(options);
  const given = url.searchParams.getAll("limit");
  let limit = def;
  if (given.length > 1) return json(400, { error: "limit given more than once" });
  if (given.length === 1) {
    const text = given[0];
    limit = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > max) {
      return json(400, { error: `limit must be an integer from 1 to ${max}; got ${JSON.stringify(text)}` });
    }
  }
  const summary = await runTick(errand, {
    limit,
    timeBudget: options.tickTimeBudget ?? 10_000,
    queues: options.queues,
    finishTimeout: options.finishTimeout ?? options.tickFinishTimeout,
    beforeProcess: options.beforeProcess,
  });
  return json(200, summary);
}
