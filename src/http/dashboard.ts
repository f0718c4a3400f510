/**
 * The dashboard: a login page, a small single-page app (static/app.js, vanilla JS, no build,
 * no CDN) that reads and acts through the JSON API, and its static assets.
 *
 *   GET  /            the app shell (signed in) or a redirect to /login
 *   GET  /login       the login form;  POST /login  sets the session cookie
 *   POST /logout      clears it
 *   GET  /assets/<f>  app.js and its modules, style.css, favicon.svg — a fixed allowlist, nothing else
 *
 * Every URL is built from the mount prefix, so the dashboard works under /admin/jobs as well
 * as at /. Pages carry a strict Content-Security-Policy (no inline script at all) and the app
 * renders every value with textContent, so a payload holding `<script>` is shown, never run.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { BodyError, readForm } from "./body.js";
import {
  authenticate,
  createSession,
  dashboardToken,
  isSameOrigin,
  SECURITY_HEADERS,
  SESSION_TTL_MS,
  safeEqual,
  sessionCookie,
} from "./security.js";
import type { RouteContext } from "./types.js";

const JS = "text/javascript; charset=utf-8";
/** The app's ES modules (app.js imports the others); one idea each. */
export const APP_MODULES = [
  "app.js",
  "api.js",
  "bulk.js",
  "charts.js",
  "dlq.js",
  "dlq-groups.js",
  "dom.js",
  "format.js",
  "job.js",
  "jobs.js",
  "live.js",
  "overview.js",
  "schedules.js",
  "shell.js",
  "ui.js",
  "workers.js",
] as const;

/** The only files /assets/ serves, with their content types. */
const ASSETS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(APP_MODULES.map((name) => [name, JS])),
  "style.css": "text/css; charset=utf-8",
  "favicon.svg": "image/svg+xml",
};
const STATIC_DIR = new URL("./static/", import.meta.url);

interface Asset {
  body: Uint8Array;
  etag: string;
}
const assetCache = new Map<string, Promise<Asset>>();

function loadAsset(name: string): Promise<Asset> {
  let asset = assetCache.get(name);
  if (!asset) {
    // `name` is a key of ASSETS (checked by the caller), never a path from the request.
    asset = readFile(new URL(name, STATIC_DIR)).then((body) => ({
      body: new Uint8Array(body),
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
    }));
    asset.catch(() => assetCache.delete(name));
    assetCache.set(name, asset);
  }
  return asset;
}

export async function handleDashboard(request: Request, ctx: RouteContext): Promise<Response | null> {
  const { path } = ctx;
  if (path.startsWith("/assets/")) return serveAsset(request, path.slice("/assets/".length));
  if (path !== "/" && path !== "/login" && path !== "/logout") return null;
  const method = request.method === "HEAD" ? "GET" : request.method;
  const token = dashboardToken(ctx.options);
  if (token === null) return noToken();

  if (path === "/login") {
    if (method === "GET") {
      if (authenticate(request, token)) return redirect(`${ctx.prefix}/`);
      return html(200, loginPage(ctx.prefix, null));
    }
    if (method === "POST") return login(request, ctx, token);
    return methodNotAllowed("GET, POST");
  }
  if (path === "/logout") {
    if (method !== "POST") return methodNotAllowed("POST");
    if (!isSameOrigin(request, true))
      return html(403, messagePage(ctx.prefix, "Cross-site request refused."));
    return redirect(`${ctx.prefix}/login`, { "set-cookie": sessionCookie("", request, ctx.prefix, 0) });
  }
  if (method !== "GET") return methodNotAllowed("GET");
  if (!authenticate(request, token)) return redirect(`${ctx.prefix}/login`);
  return html(200, appShell(ctx.prefix));
}

async function login(request: Request, ctx: RouteContext, token: string): Promise<Response> {
  if (!isSameOrigin(request, false)) return html(403, messagePage(ctx.prefix, "Cross-site request refused."));
  const waitMs = ctx.loginLimiter.retryAfterMs();
  if (waitMs > 0) {
    const seconds = Math.ceil(waitMs / 1000);
    return html(429, loginPage(ctx.prefix, `Too many failed logins. Try again in ${seconds} s.`), {
      "retry-after": String(seconds),
    });
  }
  let form: URLSearchParams;
  try {
    form = await readForm(request);
  } catch (err) {
    const status = err instanceof BodyError ? err.status : 400;
    return html(status, loginPage(ctx.prefix, (err as Error).message));
  }
  const given = form.get("token") ?? "";
  if (given === "" || !safeEqual(given, token)) {
    ctx.loginLimiter.recordFailure();
    return html(401, loginPage(ctx.prefix, "That token is not right."));
  }
  const cookie = sessionCookie(createSession(token), request, ctx.prefix, Math.floor(SESSION_TTL_MS / 1000));
  return redirect(`${ctx.prefix}/`, { "set-cookie": cookie });
}

async function serveAsset(request: Request, name: string): Promise<Response> {
  // Only bare file names from the allowlist: no separators, no dots-only segments, no
  // percent-encoding (the URL parser already resolved "..", "%2e%2e"; anything left is refused).
  if (!/^[a-z0-9][a-z0-9.-]*$/i.test(name) || name.includes("..")) {
    return text(400, "invalid asset path");
  }
  const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!type) return text(404, "not found");
  if (request.method !== "GET" && request.method !== "HEAD") return methodNotAllowed("GET");
  const asset = await loadAsset(name);
  const headers = {
    ...SECURITY_HEADERS,
    "content-type": type,
    etag: asset.etag,
    "cache-control": "no-cache",
  };
  if (request.headers.get("if-none-match") === asset.etag)
    return new Response(null, { status: 304, headers });
  return new Response(request.method === "HEAD" ? null : (asset.body as BodyInit), { status: 200, headers });
}

function html(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: {
      ...SECURITY_HEADERS,
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      ...headers,
    },
  });
}

function text(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8" },
  });
}

function redirect(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, {
    status: 303,
    headers: { ...SECURITY_HEADERS, location, "cache-control": "no-store", ...headers },
  });
}

function methodNotAllowed(allow: string): Response {
  return new Response(`method not allowed; use ${allow}`, {
    status: 405,
    headers: { ...SECURITY_HEADERS, allow, "content-type": "text/plain; charset=utf-8" },
  });
}

function noToken(): Response {
  return new Response(
    "The errand dashboard is off: set ERRAND_DASHBOARD_TOKEN (or the dashboardToken option) to a long random string and restart.\n",
    { status: 503, headers: { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8" } },
  );
}

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function head(prefix: string, title: string): string {
  const p = escapeHtml(prefix);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${p}/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${p}/assets/style.css">`;
}

function appShell(prefix: string): string {
  return `${head(prefix, "errand")}
<script type="module" src="${escapeHtml(prefix)}/assets/app.js"></script>
</head>
<body data-base="${escapeHtml(prefix)}">
<noscript><p class="notice">The errand dashboard needs JavaScript. The JSON API under /api/ works without it.</p></noscript>
</body>
</html>
`;
}

function loginPage(prefix: string, error: string | null): string {
  return `${head(prefix, "Sign in · errand")}
</head>
<body class="login-body">
<main class="login-card">
  <h1 class="brand"><span class="brand-mark" aria-hidden="true"></span>errand</h1>
  <p class="muted">Enter the dashboard token (<code>ERRAND_DASHBOARD_TOKEN</code>).</p>
  ${error ? `<p class="form-error" role="alert">${escapeHtml(error)}</p>` : ""}
  <form method="post" action="${escapeHtml(prefix)}/login">
    <label for="token">Token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button type="submit" class="btn btn-primary">Sign in</button>
  </form>
</main>
</body>
</html>
`;
}

function messagePage(prefix: string, message: string): string {
  return `${head(prefix, "errand")}
</head>
<body class="login-body"><main class="login-card"><p>${escapeHtml(message)}</p>
<p><a href="${escapeHtml(prefix)}/">Back to the dashboard</a></p></main></body></html>
`;
}
