/**
 * errand's Fetch handlers in Fastify, as an encapsulated plugin:
 *
 *   await app.register(toFastifyPlugin(createFetchHandler(errand, { prefix: "/admin/jobs" })), {
 *     prefix: "/admin/jobs",
 *   });
 *   await app.register(toFastifyPlugin(createTickHandler(errand)), { prefix: "/api/cron/tick" });
 *
 * Fastify parses every body before a route runs: JSON into an object (and an empty body with a
 * JSON content type into a 400), a form into a 415 unless a form parser is registered. Inside
 * the plugin's own scope — and only there — a catch-all content-type parser leaves the body
 * unread, so the handler reads the request as the client sent it, with its own size limits, and
 * the application's parsers and routes are untouched.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { toNodeHandler } from "./node.js";
import type { FetchHandler } from "./types.js";

/** The parts of Fastify's request and reply the plugin uses. */
interface FastifyRequestLike {
  raw: IncomingMessage;
}
interface FastifyReplyLike {
  raw: ServerResponse;
  hijack(): unknown;
}

/** The parts of a Fastify instance the plugin uses (no import of Fastify). */
export interface FastifyScope {
  removeAllContentTypeParsers(): unknown;
  addContentTypeParser(
    type: string,
    parser: (request: unknown, payload: unknown, done: (err: Error | null, body?: unknown) => void) => void,
  ): unknown;
  all(
    path: string,
    handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<void>,
  ): unknown;
}

/** A Fastify plugin serving `handler` at every path under the prefix it is registered with. */
export function toFastifyPlugin(handler: FetchHandler): (scope: FastifyScope) => Promise<void> {
  const node = toNodeHandler(handler);
  return async function errand(scope) {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null));
    const route = async (request: FastifyRequestLike, reply: FastifyReplyLike) => {
      reply.hijack(); // the response is written to reply.raw, not sent by Fastify
      await node(request.raw, reply.raw);
    };
    scope.all("/", route);
    scope.all("/*", route);
  };
}
