import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { FetchHandler } from "./types.js";

/**
 * Adapts a Fetch handler to Node's `(req, res)` for node:http, Express and Fastify (`reply.raw`).
 * The body is streamed through untouched; routes enforce their own size limits.
 */
export function toNodeHandler(handler: FetchHandler) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const host =
        req.headers.host && /^[A-Za-z0-9.:[\]-]+$/.test(req.headers.host) ? req.headers.host : "localhost";
      // Express strips a mount path into req.baseUrl; keep the full path so the prefix logic sees it.
      const original = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? "/";
      const url = `http://${host}${original.startsWith("/") ? original : `/${original}`}`;
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined) continue;
        for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
      }
      const method = req.method ?? "GET";
      const hasBody = method !== "GET" && method !== "HEAD";
      const request = new Request(url, {
        method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
        duplex: "half",
      } as RequestInit);
      const response = await handler(request);
      res.statusCode = response.status;
      for (const [name, value] of response.headers) if (name !== "set-cookie") res.setHeader(name, value);
      const cookies = response.headers.getSetCookie(); // each cookie its own header line
      if (cookies.length > 0) res.setHeader("set-cookie", cookies);
      if (response.body) {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
      }
      res.end();
    } catch (err) {
      if (!res.headersSent) {
        res.statusCode = 400;
        res.setHeader("content-type", "application/json; charset=utf-8");
        res.end(JSON.stringify({ error: `bad request: ${(err as Error).message}` }));
      } else res.destroy();
    }
  };
}
