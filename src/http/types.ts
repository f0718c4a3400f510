/**
 * The types every HTTP module shares: the options, the Fetch handler, and the per-request
 * context a route receives. They live here, not in app.ts, so a route module imports only
 * types, never the app that imports every route (no import cycle).
 */
import type { Errand } from "../errand.js";
import type { FailedLoginLimiter } from "./login-limit.js";

export interface HttpOptions {
  /** Bearer secret for POST (or GET) /api/cron/tick. Default process.env.CRON_SECRET; unset = tick endpoint off. */
  cronSecret?: string;
  /** Token for the dashboard and the JSON API. Default process.env.ERRAND_DASHBOARD_TOKEN. */
  dashboardToken?: string;
  /** Mount path, e.g. "/admin/jobs" (no trailing slash). Default "". */
  prefix?: string;
  /** Queues a tick processes (default: every queue of the registered jobs). */
  queues?: string[];
  /** Default and largest `?limit=` of a tick. */
  tickLimit?: { default?: number; max?: number };
  /** Time budget of one tick's processing. Default 10s. */
  tickTimeBudget?: number;
  /**
   * How long jobs still running when a tick's budget is spent may go on before they are
   * released (uncharged). Default 30s: keep budget plus this under the platform's request limit.
   */
  tickFinishTimeout?: number;
  /** Serve GET /metrics without the dashboard token (e.g. only reachable from the Prometheus network). Default false. */
  metricsPublic?: boolean;
}

export type FetchHandler = (request: Request) => Promise<Response>;

/** Per-request context handed to every route module. */
export interface RouteContext {
  errand: Errand;
  options: HttpOptions;
  /** The request path with the mount prefix removed ("/", "/api/jobs", …). */
  path: string;
  url: URL;
  prefix: string;
  /** Failed logins through the dashboard's form, per handler (login-limit.ts). */
  loginLimiter: FailedLoginLimiter;
}

export type Route = (request: Request, ctx: RouteContext) => Promise<Response | null>;
