/**
 * The node:http server `errand serve` runs, with what an application's own server would add in
 * front of errand's handler:
 *
 * - A Host allow-list. A dashboard on 127.0.0.1 is reachable from any web page through DNS
 *   rebinding (evil.example resolves to 127.0.0.1 after the page loaded, and the browser then
 *   treats the dashboard as evil.example's own origin). Such a request still carries
 *   `Host: evil.example`, so on a loopback address only loopback names are served (localhost,
 *   127.x, [::1]) plus the names given with --allowed-host. Beyond loopback the public name is
 *   not known, so any Host is served unless --allowed-host names them (the token, at least 32
 *   characters there, guards it). A refused Host gets 403 before the handler runs.
 * - Explicit timeouts instead of node's defaults (which differ by version and leave
 *   `requestTimeout` at 5 minutes): a client that sends its headers slowly (slowloris), or its
 *   body slowly, or holds an idle keep-alive connection, is cut.
 */
import { createServer, type Server } from "node:http";
import { toNodeHandler } from "./node.js";
import { isLoopbackHost } from "./security.js";
import type { FetchHandler } from "./types.js";

export interface ServeTimeouts {
  /** Time to receive a request's headers. */
  headersTimeout: number;
  /** Time to receive a whole request (headers and body; not the time to answer it: a tick may run longer). */
  requestTimeout: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeout: number;
  /** How often node checks the two above (its default is 30 s, too coarse for a 10 s limit). */
  connectionsCheckingInterval: number;
}

export const SERVE_TIMEOUTS: Readonly<ServeTimeouts> = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000,
};

export interface ServeServerOptions {
  /** The address listened on: decides whether Host names are limited to loopback ones. */
  host: string;
  /** Host names (without port) served in addition to the loopback ones. */
  allowedHosts?: readonly string[];
  timeouts?: Partial<ServeTimeouts>;
}

export function createServeServer(handler: FetchHandler, options: ServeServerOptions): Server {
  const timeouts = { ...SERVE_TIMEOUTS, ...options.timeouts };
  const allowed = hostCheck(options.host, options.allowedHosts ?? []);
  const node = toNodeHandler(handler);
  const server = createServer(
    { connectionsCheckingInterval: timeouts.connectionsCheckingInterval },
    (req, res) => {
      if (!allowed(req.headers.host)) {
        res.writeHead(403, { "content-type": "application/json; charset=utf-8", connection: "close" });
        res.end(
          JSON.stringify({
            error:
              "host not allowed: this server answers to its own address only (start it with --allowed-host <name> to add one)",
          }),
        );
        return;
      }
      void node(req, res);
    },
  );
  server.headersTimeout = timeouts.headersTimeout;
  server.requestTimeout = timeouts.requestTimeout;
  server.keepAliveTimeout = timeouts.keepAliveTimeout;
  return server;
}

/** Whether a Host header may be served; null when every Host is. */
function hostCheck(listenHost: string, extra: readonly string[]): (host: string | undefined) => boolean {
  const names = new Set(extra.map((h) => h.trim().toLowerCase()).filter(Boolean));
  if (!isLoopbackHost(listenHost) && names.size === 0) return () => true;
  return (header) => {
    if (header === undefined) return false;
    const name = hostName(header.trim().toLowerCase());
    return name !== null && (names.has(name) || isLoopbackHost(name));
  };
}

/** The name of a Host header without its port: "a.b:80" → "a.b", "[::1]:80" → "[::1]". */
function hostName(header: string): string | null {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/.exec(header);
  return match ? match[1] : null;
}
