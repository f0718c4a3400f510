/**
 * One errand per server process, shared by the route handlers. It is opened on the first
 * request, not when Next.js loads the module (`next build` loads route modules too).
 */
import { createFetchHandler, createTickHandler, type Errand, openErrand } from "errand";
import { jobs } from "../../jobs";

let opening: Promise<Errand> | undefined;

export function getErrand(): Promise<Errand> {
  opening ??= openErrand({ url: process.env.ERRAND_URL, jobs });
  return opening;
}

/** A route handler that answers with errand's Fetch handler `make(errand)`, made once. */
function lazy(make: (errand: Errand) => (request: Request) => Promise<Response>) {
  let handler: Promise<(request: Request) => Promise<Response>> | undefined;
  return async (request: Request): Promise<Response> => {
    handler ??= getErrand().then(make);
    return (await handler)(request);
  };
}

/** The dashboard and its JSON API (ERRAND_DASHBOARD_TOKEN), under /admin/jobs. */
export const dashboard = lazy((errand) => createFetchHandler(errand, { prefix: "/admin/jobs" }));

/** The tick (CRON_SECRET): Vercel Cron sends GET, other schedulers POST. */
export const tick = lazy((errand) => createTickHandler(errand));
