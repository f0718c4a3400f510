/**
 * Authentication and request hygiene shared by the API, the dashboard and /metrics.
 *
 * - One secret, the dashboard token (`dashboardToken` option or ERRAND_DASHBOARD_TOKEN).
 *   No token configured: the API, the dashboard and (unless public) /metrics answer 503.
 * - A client proves it holds the token either as `Authorization: Bearer <token>` (scripts,
 *   Prometheus) or with the session cookie set by the login form. The cookie never holds
 *   the token: it holds an expiry and an HMAC of it keyed by the token, so it is worthless
 *   once expired or once the token is rotated.
 * - Every comparison of a secret is constant-time (HMAC both sides, then timingSafeEqual,
 *   so unequal lengths leak nothing either).
 * - Cross-site requests: the cookie is SameSite=Strict, and a cookie-authenticated request
 *   that changes state must also come from our own origin (Sec-Fetch-Site, or Origin when a
 *   browser sends no fetch metadata). Bearer calls carry their credential explicitly and need
 *   no such check: a browser never attaches an Authorization header cross-site on its own.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { HttpOptions } from "./types.js";

export const SESSION_COOKIE = "errand_session";
/** A login lasts this long; then the form asks again. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** The configured dashboard token, or null when there is none (blank counts as none). */
export function dashboardToken(options: Pick<HttpOptions, "dashboardToken">): string | null {
  const token = options.dashboardToken ?? process.env.ERRAND_DASHBOARD_TOKEN;
  return token && token.trim() !== "" ? token : null;
}

const COMPARE_KEY = randomBytes(32);

/** Constant-time string equality. */
export function safeEqual(a: string, b: string): boolean {
  const da = createHmac("sha256", COMPARE_KEY).update(a).digest();
  const db = createHmac("sha256", COMPARE_KEY).update(b).digest();
  return timingSafeEqual(da, db);
}

function sessionMac(token: string, expiresMs: number): string {
  return createHmac("sha256", token).update(`errand-dashboard-session:v1:${expiresMs}`).digest("base64url");
}

/** The cookie value for a fresh login: `<expiry ms>.<HMAC(token, expiry)>`. */
export function createSession(token: string, nowMs = Date.now()): string {
  const expires = nowMs + SESSION_TTL_MS;
  return `${expires}.${sessionMac(token, expires)}`;
}

export function verifySession(token: string, value: string, nowMs = Date.now()): boolean {
  const match = /^(\d{13,16})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return false;
  const expires = Number(match[1]);
  if (!(expires > nowMs) || expires > nowMs + SESSION_TTL_MS + 60_000) return false;
  return safeEqual(match[2], sessionMac(token, expires));
}

export function parseCookies(header: string | null): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

export type AuthMethod = "bearer" | "cookie";

/** How the request proves it holds the token, or null when it does not. */
export function authenticate(request: Request, token: string): AuthMethod | null {
  const header = request.headers.get("authorization");
  if (header !== null) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    // A wrong Authorization header fails even with a valid cookie: the caller meant the header.
    return match && safeEqual(match[1], token) ? "bearer" : null;
  }
  const session = parseCookies(request.headers.get("cookie")).get(SESSION_COOKIE);
  return session !== undefined && verifySession(token, session) ? "cookie" : null;
}

/**
 * Whether a browser request comes from a page of our own origin. Modern browsers send
 * Sec-Fetch-Site on every request; older ones send Origin on every POST. A request with
 * neither is treated as cross-site when `strict` (state changes by cookie), as same-site
 * otherwise (the login form: it grants nothing the token does not already grant).
 */
export function isSameOrigin(request: Request, strict: boolean): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin";
  const origin = request.headers.get("origin");
  if (origin === null || origin === "null") return origin === null ? !strict : false;
  try {
    // Compare hosts, not schemes: a TLS-terminating proxy turns https into http before us.
    return new URL(origin).host === new URL(request.url).host;
  } catch {
    return false;
  }
}

/** Whether the client reached us over https (directly or through a proxy that says so). */
export function isHttps(request: Request): boolean {
  if (new URL(request.url).protocol === "https:") return true;
  return (request.headers.get("x-forwarded-proto") ?? "").split(",")[0].trim().toLowerCase() === "https";
}

export function sessionCookie(
  value: string,
  request: Request,
  prefix: string,
  maxAgeSeconds: number,
): string {
  const parts = [
    `${SESSION_COOKIE}=${value}`,
    `Path=${prefix || "/"}`,
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${maxAgeSeconds}`,
  ];
  if (isHttps(request)) parts.push("Secure");
  return parts.join("; ");
}

/**
 * Headers on every dashboard, API and asset response. The CSP allows scripts and styles
 * from our own origin only — no inline script can run, whatever a payload holds.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const LOOPBACK =
  /^(localhost|127(?:\.\d{1,3}){3}|::1|\[::1\]|::ffff:127(?:\.\d{1,3}){3}|\[::ffff:127(?:\.\d{1,3}){3}\])$/i;

/** Whether `host` only accepts connections from this machine. "0.0.0.0", "::" and "" do not. */
export function isLoopbackHost(host: string | undefined | null): boolean {
  return typeof host === "string" && LOOPBACK.test(host.trim());
}

/**
 * Shortest dashboard token `errand serve` accepts beyond loopback: 32 random hex characters are
 * 128 bits, out of reach of guessing even without the login limit.
 */
export const MIN_PUBLIC_TOKEN_LENGTH = 32;

/**
 * For `errand serve`: refuses to expose the dashboard and API beyond this machine without a
 * token. Throws when `host` is not a loopback address and no token is given (the argument, or
 * else ERRAND_DASHBOARD_TOKEN), or one shorter than MIN_PUBLIC_TOKEN_LENGTH. Listening on loopback without a token is allowed: the
 * dashboard then answers 503 until a token is set.
 */
export function assertServeSafety(opts: { host?: string | null; dashboardToken?: string | null }): void {
  const host = opts.host ?? "";
  const token = (opts.dashboardToken ?? process.env.ERRAND_DASHBOARD_TOKEN ?? "").trim();
  if (isLoopbackHost(host)) return;
  const where = host === "" ? "all interfaces" : JSON.stringify(host);
  if (token === "") {
    throw new Error(
      `refusing to serve on ${where} without a dashboard token: ` +
        "set ERRAND_DASHBOARD_TOKEN (a long random string, e.g. `openssl rand -hex 32`) " +
        "or listen on 127.0.0.1 only (--host 127.0.0.1)",
    );
  }
  if (token.length < MIN_PUBLIC_TOKEN_LENGTH) {
    throw new Error(
      `refusing to serve on ${where}: ERRAND_DASHBOARD_TOKEN is ${token.length} characters; beyond 127.0.0.1 it must be at least ${MIN_PUBLIC_TOKEN_LENGTH} ` +
        "(a random one: `openssl rand -hex 32`)",
    );
  }
}

/** A JSON response with the security headers. */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      ...SECURITY_HEADERS,
      ...headers,
    },
  });
}

export const NO_TOKEN_MESSAGE =
  "the dashboard and API are off: set ERRAND_DASHBOARD_TOKEN (or the dashboardToken option) to turn them on";

/**
 * The gate in front of the API and /metrics: 503 without a configured token, 401 without a
 * valid credential, 403 for a cookie-authenticated state change from another origin.
 * Returns the auth method when the request may proceed.
 */
export function guard(
  request: Request,
  options: Pick<HttpOptions, "dashboardToken">,
  changesState: boolean,
): { ok: true; method: AuthMethod } | { ok: false; response: Response } {
  const token = dashboardToken(options);
  if (token === null) return { ok: false, response: jsonResponse(503, { error: NO_TOKEN_MESSAGE }) };
  const method = authenticate(request, token);
  if (method === null) {
    return {
      ok: false,
      response: jsonResponse(
        401,
        {
          error:
            "unauthorized: send Authorization: Bearer <ERRAND_DASHBOARD_TOKEN> or log in to the dashboard",
        },
        { "www-authenticate": 'Bearer realm="errand"' },
      ),
    };
  }
  if (changesState && method === "cookie" && !isSameOrigin(request, true)) {
    return { ok: false, response: jsonResponse(403, { error: "cross-site request refused" }) };
  }
  return { ok: true, method };
}
