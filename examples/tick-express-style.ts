/**
 * The tick as a Node `(req, res)` handler — for Express and plain node:http.
 * `toNodeHandler` adapts errand's Fetch handler; nothing else is needed (no Express dependency).
 *
 *   // Express
 *   app.post("/api/cron/tick", toNodeHandler(createTickHandler(errand)));
 *
 *   // Fastify: a plugin whose scope leaves the body to errand (examples/frameworks/fastify.ts)
 *   await fastify.register(toFastifyPlugin(createTickHandler(errand)), { prefix: "/api/cron/tick" });
 *
 * The tick ignores its body, so a JSON body parser in front of it does no harm.
 * Here, plain node:http with a hand-written route table in the Express style:
 *
 *   CRON_SECRET=$(openssl rand -hex 32) node --import tsx examples/tick-express-style.ts
 *   curl -X POST -H "Authorization: Bearer $CRON_SECRET" "http://127.0.0.1:8080/api/cron/tick?limit=50"
 *
 * `--once` starts on a free port, sends itself one tick, prints the answer and exits.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createTickHandler, defineJob, openErrand, toNodeHandler } from "errand";
import { z } from "zod";

const once = process.argv.includes("--once");
const cronSecret = process.env.CRON_SECRET ?? (once ? "example-secret" : undefined);

const digest = defineJob({
  name: "send-digest",
  queue: "emails",
  schema: z.object({ list: z.string() }),
  async run({ list }, ctx) {
    ctx.log.info({ list }, "sending the digest");
  },
});

// Jobs are registered by schedule() and enqueue(); pass `jobs: [...]` to register more up front.
const errand = await openErrand({ url: process.env.ERRAND_URL ?? "memory:" });
errand.schedule(
  "weekly-digest",
  "0 8 * * 1",
  digest,
  { list: "subscribers" },
  { timezone: "America/New_York" },
);
await errand.enqueue(digest, { list: "beta-testers" });

type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

// What `app.post(path, handler)` does in Express, in a dozen lines.
const routes: Array<{ method: string; path: string; handler: NodeHandler }> = [
  {
    method: "POST",
    path: "/api/cron/tick",
    handler: toNodeHandler(createTickHandler(errand, { cronSecret })),
  },
  {
    method: "GET",
    path: "/healthz",
    handler: (_req, res) => {
      res.end("ok\n");
    },
  },
];

const server = createServer((req, res) => {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  // Any method reaches the tick route: it answers 405 with `Allow: POST` itself.
  const route = routes.find(
    (r) => r.path === path && (r.method === req.method || r.path === "/api/cron/tick"),
  );
  if (route) return void route.handler(req, res);
  res.statusCode = 404;
  res.end("not found\n");
});

await new Promise<void>((resolve) =>
  server.listen(once ? 0 : Number(process.env.PORT ?? 8080), "127.0.0.1", resolve),
);
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

if (once) {
  const response = await fetch(`${base}/api/cron/tick?limit=10`, {
    method: "POST",
    headers: { authorization: `Bearer ${cronSecret}` },
  });
  console.log(response.status, JSON.stringify(await response.json()));
  server.close();
  await errand.close();
} else {
  console.log(`tick endpoint: POST ${base}/api/cron/tick${cronSecret ? "" : "  (off: set CRON_SECRET)"}`);
  const stop = () => server.close(() => void errand.close());
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
