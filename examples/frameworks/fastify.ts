/**
 * errand in Fastify: the dashboard and its JSON API under /admin/jobs, the tick at
 * /api/cron/tick. Each is a plugin with its own scope, where Fastify's body parsing is left out
 * (errand reads the body itself); the application's routes keep Fastify's JSON parser.
 *
 *   ERRAND_DASHBOARD_TOKEN=$(openssl rand -hex 32) CRON_SECRET=$(openssl rand -hex 32) \
 *     node --import tsx examples/frameworks/fastify.ts
 *   open http://127.0.0.1:3000/admin/jobs
 */
import { createFetchHandler, createTickHandler, openErrand, toFastifyPlugin } from "errand";
import Fastify from "fastify";
import { jobs, port, sendWelcome } from "./jobs.js";

const errand = await openErrand({ url: process.env.ERRAND_URL, jobs });

const app = Fastify();

// The application's own route, enqueueing from the body Fastify parsed.
app.post<{ Body: { email: string } }>("/signup", async (request, reply) => {
  const job = await errand.enqueue(sendWelcome, { to: String(request.body.email) });
  return reply.code(201).send({ welcomeJob: job.id });
});

// The dashboard and API (ERRAND_DASHBOARD_TOKEN) and the tick (CRON_SECRET).
await app.register(toFastifyPlugin(createFetchHandler(errand, { prefix: "/admin/jobs" })), {
  prefix: "/admin/jobs",
});
await app.register(toFastifyPlugin(createTickHandler(errand)), { prefix: "/api/cron/tick" });

const url = await app.listen({ port, host: "127.0.0.1" });
console.log(`listening on ${url}`);
process.once("SIGTERM", () => void app.close().then(() => errand.close()));
process.once("SIGINT", () => void app.close().then(() => errand.close()));
