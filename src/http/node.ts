import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { FetchHandler } from "./types.js";

/**
 * Adapts a Fetch handler to Node's `(req, res)` for node:http, Express and NestJS (Fastify: fastify.ts).
 * The body is streamed through untouched; routes enforce their own size limits. When a body parser
 * mounted before errand (`express.json()`, `express.urlencoded()`, `express.raw()`) has read the
 * stream already, the body it left on `req.body` is used instead: reading the stream again is
 * what failed with "Response body object should not be disturbed or locked".
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
      let body: BodyInit | undefined;
      if (hasBody) {
        const parsed = bodyAlreadyRead(req);
        if (parsed === undefined) body = Readable.toWeb(req) as ReadableStream;
        else {
          body = parsed;
          headers.delete("content-length");
          headers.delete("transfer-encoding");
        }
      }
      const request = new Request(url, { method, headers, body, duplex: "half" } as RequestInit);
      const response = await handler(request);
      res.statusCode = response.status;
      // Answered before the body was read through (a 413 over the limit, a 401): the rest of it
      // is still on the connection, half-read by the web stream, and the client's next request
      // there was reset (ECONNRESET). Close it instead; the client opens a new one.
      if (hasBody && !req.complete) res.setHeader("connection", "close");
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

/**
 * The body a parser has already read from `req`, encoded back to what the client sent (JSON for
 * a parsed JSON body, form encoding for a parsed form), or undefined when the stream is unread.
 * body-parser marks what it read with `req._body`; a stream that has ended was read by someone.
 */
function bodyAlreadyRead(req: IncomingMessage): string | Uint8Array<ArrayBuffer> | undefined {
  const { body, _body: parsedByBodyParser } = req as IncomingMessage & { body?: unknown; _body?: unknown };
  if (parsedByBodyParser !== true && !req.readableEnded) return undefined;
  if (body === undefined || body === null) return "";
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return new Uint8Array(body); // express.raw(): a Buffer
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  if (type === "application/x-www-form-urlencoded" && typeof body === "object") {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
      for (const v of Array.isArray(value) ? value : [value]) form.append(name, String(v));
    }
    return form.toString();
  }
  return JSON.stringify(body);
}
