/**
 * errand's HTTP surface as one Fetch-API handler (Request → Response): the cron tick endpoint,
 * the JSON API, Prometheus metrics and the dashboard. `errand serve` mounts it on node:http;
 * an application mounts it in its own framework (Next.js route handlers and Bun take a Fetch
 * handler as is; Express, NestJS and node:http take the Node adapter in node.ts, Fastify the
 * plugin in fastify.ts, Hono the handler in hono.ts).
 */
import type { Errand } from "../errand.js";
import { ValidationError } from "../errors.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import { handleApi } from "./api.js";
import { handleDashboard } from "./dashboard.js";
import { FailedLoginLimiter } from "./login-limit.js";
import { errandMetrics, handleMetrics } from "./metrics.js";
import { json } from "./respond.js";
import { checkLimits, handleTick } from "./tick.js";
import type { FetchHandler, HttpOptions, Route, RouteContext } from "./types.js";

export type { FetchHandler, HttpOptions, Route, RouteContext } from "./types.js";

/** Routes in order; each answers null when the path is not its own. */
const ROUTES: Route[] = [handleTick, handleMetrics, handleApi, handleDashboard];

const HTTP_FIELDS = knownFields(
  "cronSecret",
  "dashboardToken",
  "prefix",
  "queues",
  "tickLimit",
  "tickTimeBudget",
  "tickFinishTimeout",
  "metricsPublic",
);

export function createFetchHandler(errand: Errand, options: HttpOptions = {}): FetchHandler {
  // A misspelt dashboardToken or cronSecret would leave the endpoint without the token meant for it.
  onlyKnownFields(options, HTTP_FIELDS, "createFetchHandler options");
  checkLimits(options);
  const prefix = (options.prefix ?? "").replace(/\/+$/, "");
  if (prefix && !prefix.startsWith("/"))
    throw new ValidationError(`prefix must start with "/", got ${JSON.stringify(prefix)}`);
  errandMetrics(errand); // counters count from now on, not from the first scrape
  const loginLimiter = new FailedLoginLimiter();
  return async (request) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return json(400, { error: "malformed request URL" });
    }
    if (prefix && url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`)) {
      return json(404, { error: "not found" });
    }
    const path = url.pathname.slice(prefix.length) || "/";
    const ctx: RouteContext = { errand, options, path, url, prefix, loginLimiter };
    try {
      for (const route of ROUTES) {
        const response = await route(request, ctx);
        if (response) return response;
      }
      return json(404, { error: "not found" });
    } catch (err) {
      errand.log.error({ err, path }, "HTTP handler failed");
      return json(500, { error: "internal error" });
    }
  };
}
