/**
 * errand's Fetch handlers in Hono:
 *
 *   const dashboard = toHonoHandler(createFetchHandler(errand, { prefix: "/admin/jobs" }));
 *   app.all("/admin/jobs", dashboard);
 *   app.all("/admin/jobs/*", dashboard);
 *   app.post("/api/cron/tick", toHonoHandler(createTickHandler(errand)));
 *
 * Hono hands a handler the Request as it came, unless middleware has read its body
 * (`await c.req.json()` in a logger or a validator): then the body of `c.req.raw` is used up and
 * a handler given it could not read it. Hono keeps what it read, so the body is rebuilt from that.
 */
import type { FetchHandler } from "./types.js";

/** The parts of Hono's context the handler uses (no import of Hono). */
export interface HonoContextLike {
  req: { raw: Request; arrayBuffer(): Promise<ArrayBuffer> };
}

/** A Hono handler that answers with `handler`, whether or not middleware read the body first. */
export function toHonoHandler(handler: FetchHandler): (c: HonoContextLike) => Promise<Response> {
  return async (c) => {
    const request = c.req.raw;
    if (!request.bodyUsed) return handler(request);
    return handler(new Request(request, { body: await c.req.arrayBuffer() }));
  };
}
