import type { RouteContext } from "./app.js";

// Placeholder until this route module is written: answers nothing, so the router returns 404.
export async function handleMetrics(_request: Request, _ctx: RouteContext): Promise<Response | null> {
  return null;
}
