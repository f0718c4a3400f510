/**
 * The route handlers of this folder served without Next.js: a stand-in for `next start` with
 * Next's file-system router cut down to these two routes, so the handlers run (and are tested)
 * without a Next.js build. In a Next.js 16 app, copy app/ and lib/ in and `next dev` serves them
 * at the same paths.
 *
 *   ERRAND_DASHBOARD_TOKEN=$(openssl rand -hex 32) CRON_SECRET=$(openssl rand -hex 32) \
 *     node --import tsx examples/frameworks/nextjs/serve.ts
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "errand";
import { port } from "../jobs";
import * as dashboardRoute from "./app/admin/jobs/[[...path]]/route";
import * as tickRoute from "./app/api/cron/tick/route";
import { getErrand } from "./lib/errand";

type Handler = (request: Request) => Promise<Response>;
/** What Next.js reads from a route module: a handler per HTTP method (and settings like `runtime`). */
type RouteModule = { GET?: Handler; POST?: Handler };

const routes: Array<{ path: string; module: RouteModule }> = [
  { path: "/admin/jobs", module: dashboardRoute },
  { path: "/api/cron/tick", module: tickRoute },
];

async function route(request: Request): Promise<Response> {
  const { pathname } = new URL(request.url);
  const match = routes.find((r) => pathname === r.path || pathname.startsWith(`${r.path}/`));
  if (!match) return new Response("not found\n", { status: 404 });
  const handler = match.module[request.method as keyof RouteModule];
  if (!handler) return new Response("method not allowed\n", { status: 405 });
  return handler(request);
}

await getErrand(); // fail at start, not on the first request, when the store cannot be opened
const server = createServer(toNodeHandler(route));
server.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
const stop = () => server.close(() => void getErrand().then((errand) => errand.close()));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
