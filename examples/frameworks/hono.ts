/**
 * errand in Hono (on Node through @hono/node-server): the dashboard and its JSON API under
 * /admin/jobs, the tick at /api/cron/tick. A middleware here reads every JSON body first, as a
 * logger or a validator does: toHonoHandler gives errand the body Hono kept.
 *
 *   ERRAND_DASHBOARD_TOKEN=$(openssl rand -hex 32) CRON_SECRET=$(openssl rand -hex 32) \
 *     node --import tsx examples/frameworks/hono.ts
 *   open http://127.0.0.1:3000/admin/jobs
 */
import { serve } from "@hono/node-server";
import { createFetchHandler, createTickHandler, openErrand, toHonoHandler } from "errand";
import { Hono } from "hono";
import { jobs, port, sendWelcome } from "./jobs.js";

const errand = await openErrand({ url: process.env.ERRAND_URL, jobs });

const app = new Hono();

// Logs the size of every JSON body, which reads it.
app.use(async (c, next) => {
  if (c.req.header("content-type")?.startsWith("application/json")) {
    const body = await c.req.json().catch(() => null);
    if (process.env.LOG_BODIES)
      console.log(`${c.req.method} ${c.req.path}: ${JSON.stringify(body).length} bytes`);
  }
  await next();
});

// The application's own route.
app.post("/signup", async (c) => {
  const { email } = await c.req.json<{ email: string }>();
  const job = await errand.enqueue(sendWelcome, { to: email });
  return c.json({ welcomeJob: job.id }, 201);
});

// The dashboard and API (ERRAND_DASHBOARD_TOKEN) and the tick (CRON_SECRET).
const dashboard = toHonoHandler(createFetchHandler(errand, { prefix: "/admin/jobs" }));
app.all("/admin/jobs", dashboard);
app.all("/admin/jobs/*", dashboard);
app.all("/api/cron/tick", toHonoHandler(createTickHandler(errand)));

const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, (info) => {
  console.log(`listening on http://127.0.0.1:${info.port}`);
});
process.once("SIGTERM", () => server.close(() => void errand.close()));
process.once("SIGINT", () => server.close(() => void errand.close()));
