/**
 * The tick as a Fetch handler (Request → Response) — what Next.js route handlers, Hono, Bun,
 * Deno and Cloudflare-style runtimes take as is. On a host that scales to zero the application
 * itself is what wakes up, so the tick lives inside it:
 *
 *   // Next.js: app/api/cron/tick/route.ts
 *   export const POST = createTickHandler(errand);
 *
 *   // Hono (toHonoHandler also works after middleware has read the body)
 *   app.post("/api/cron/tick", toHonoHandler(tick));
 *
 *   // Bun
 *   Bun.serve({ fetch: createFetchHandler(errand) });     // the tick plus the API and dashboard
 *
 * Here the same handler runs on node:http through the adapter, so the example runs anywhere:
 *
 *   CRON_SECRET=$(openssl rand -hex 32) node --import tsx examples/tick-fetch.ts
 *   curl -X POST -H "Authorization: Bearer $CRON_SECRET" http://127.0.0.1:8080/api/cron/tick
 *
 * `--once` starts on a free port, sends itself one tick, prints the answer and exits.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createTickHandler, defineJob, openErrand, toNodeHandler } from "errand";
import { z } from "zod";

const once = process.argv.includes("--once");
const cronSecret = process.env.CRON_SECRET ?? (once ? "example-secret" : undefined);

const cleanUp = defineJob({
  name: "clean-up-sessions",
  queue: "maintenance",
  schema: z.object({ olderThanDays: z.number().int().positive() }),
  async run({ olderThanDays }, ctx) {
    ctx.log.info({ olderThanDays }, "cleaning up sessions");
    return { removed: 0 };
  },
});

// Jobs are registered by schedule() and enqueue(); pass `jobs: [...]` to register more up front.
const errand = await openErrand({ url: process.env.ERRAND_URL ?? "memory:" });
// Every night at 03:00 Berlin time; a tick after that fires it (once, however many ticks run).
errand.schedule(
  "nightly-clean-up",
  "0 3 * * *",
  cleanUp,
  { olderThanDays: 30 },
  { timezone: "Europe/Berlin" },
);
await errand.enqueue(cleanUp, { olderThanDays: 7 }); // something to do on the first tick

// The Fetch handler. It answers 503 until CRON_SECRET is set, 401 without the right token.
const tick = createTickHandler(errand, { cronSecret, tickLimit: { default: 100, max: 1000 } });

// Mounted at a path of our choosing: anything else is a 404 (a framework's router does this part).
async function app(request: Request): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (pathname === "/api/cron/tick") return tick(request);
  return new Response("not found\n", { status: 404 });
}

const server = createServer(toNodeHandler(app));
await new Promise<void>((resolve) =>
  server.listen(once ? 0 : Number(process.env.PORT ?? 8080), "127.0.0.1", resolve),
);
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/cron/tick`;

if (once) {
  const response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${cronSecret}` } });
  console.log(response.status, JSON.stringify(await response.json()));
  server.close();
  await errand.close();
} else {
  console.log(`tick endpoint: POST ${url}${cronSecret ? "" : "  (off: set CRON_SECRET)"}`);
  const stop = () => server.close(() => void errand.close());
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
