/**
 * `errand serve`: an HTTP server (node:http, with a Host allow-list and explicit timeouts:
 * http/serve-server.ts) mounting errand's Fetch handler — the tick endpoint (GET or POST
 * /api/cron/tick), and the JSON API, metrics and dashboard that share the handler.
 * At start it says what is served and what is off, and why. Stops on SIGTERM/SIGINT: no new
 * connections; a tick in flight claims nothing more, its running jobs get --shutdown-timeout to
 * finish and are then released uncharged, and it answers; then the store closes.
 */
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import { TICK_PATH } from "../http/tick.js";
import {
  CliError,
  cliLogger,
  collect,
  globals,
  logStore,
  openFromOptions,
  parseDurationOption,
  parseIntOption,
  UsageError,
} from "./common.js";
import { loadJobs } from "./load-jobs.js";

interface ServeOptions {
  jobs?: string;
  host: string;
  port: string;
  prefix?: string;
  allowedHost?: string[];
  shutdownTimeout: string;
}

/**
 * How long past --shutdown-timeout requests in flight may take before connections are cut: a
 * tick's released jobs are written and its answer sent within it.
 */
const CUT_MARGIN_MS = 5_000;

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("serve the tick endpoint (and the dashboard and API) over HTTP")
    .option(
      "-j, --jobs <module>",
      "module exporting the job definitions the tick runs (default $ERRAND_JOBS)",
    )
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0: any free port)", "8080")
    .option("--prefix <path>", 'mount everything under this path, e.g. "/errand"')
    .option(
      "--allowed-host <name>",
      "a host name clients use to reach this server, e.g. jobs.example.com (repeatable; default $ERRAND_ALLOWED_HOSTS, comma-separated). Requests naming another Host get 403",
      collect,
    )
    .option(
      "--shutdown-timeout <duration>",
      "on SIGTERM, how long the jobs of a tick in flight may still run before they are released uncharged",
      "30s",
    )
    .addHelpText(
      "after",
      `
The tick endpoint needs CRON_SECRET in the environment: GET or POST ${TICK_PATH} with
"Authorization: Bearer $CRON_SECRET" fires due schedules and runs a batch of jobs (?limit=1..1000).
Without CRON_SECRET it answers 503. The dashboard, API and /metrics need ERRAND_DASHBOARD_TOKEN
(without it they answer 503). Listening beyond 127.0.0.1 requires that token, at least 32
characters long. On 127.0.0.1 only requests for localhost, 127.0.0.1 or [::1] (and the names of
--allowed-host) are served: a web page cannot reach the dashboard through DNS rebinding.

Examples:
  CRON_SECRET=$(openssl rand -hex 32) errand serve --jobs ./dist/jobs.js
  errand serve --jobs ./dist/jobs.js --host 0.0.0.0 --port 3000`,
    )
    .action(async (opts: ServeOptions, cmd: Command) => {
      process.exitCode = await serve(opts, cmd);
    });
}

async function serve(opts: ServeOptions, cmd: Command): Promise<number> {
  const port = parseIntOption(opts.port, "--port", { min: 0, max: 65_535 });
  const shutdownMs = parseDurationOption(opts.shutdownTimeout, "--shutdown-timeout", { timer: true });
  const host = opts.host.trim();
  if (host === "") throw new UsageError("--host must not be empty");
  if (opts.prefix !== undefined && !/^\/[A-Za-z0-9._~\-/]*$/.test(opts.prefix)) {
    throw new UsageError(`--prefix must be a path starting with "/"; got ${JSON.stringify(opts.prefix)}`);
  }
  // Loaded here, not at start-up: the HTTP layer (dashboard, metrics) is only needed by `serve`.
  const [
    { createFetchHandler },
    { createServeServer },
    { assertServeSafety, dashboardToken, isLoopbackHost },
    { cronSecret },
  ] = await Promise.all([
    import("../http/app.js"),
    import("../http/serve-server.js"),
    import("../http/security.js"),
    import("../http/tick.js"),
  ]);
  const allowedHosts = (opts.allowedHost ?? (process.env.ERRAND_ALLOWED_HOSTS ?? "").split(","))
    .flatMap((h) => h.split(","))
    .map((h) => h.trim())
    .filter(Boolean);
  for (const name of allowedHosts) {
    if (!/^[A-Za-z0-9.-]+$/.test(name))
      throw new UsageError(
        `--allowed-host takes a host name without port or scheme; got ${JSON.stringify(name)}`,
      );
  }
  try {
    assertServeSafety({ host });
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  const modulePath = opts.jobs ?? process.env.ERRAND_JOBS;
  const jobs = modulePath ? await loadJobs(modulePath) : [];
  const log = await cliLogger();
  const errand = await openFromOptions(globals(cmd), { jobs, logger: log });
  logStore(globals(cmd), errand, log);
  const server = createServeServer(createFetchHandler(errand, { prefix: opts.prefix }), {
    host,
    allowedHosts,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    await errand.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `cannot listen on ${host}:${port}: ${code === "EADDRINUSE" ? "the port is in use" : code === "EACCES" ? "permission denied" : (err as Error).message}`,
    );
  }
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const base = `http://${shown}:${address.port}${opts.prefix ?? ""}`;
  const dashboard =
    dashboardToken({}) === null
      ? "off — ERRAND_DASHBOARD_TOKEN is not set (they answer 503; set it to a long random string, e.g. `openssl rand -hex 32`)"
      : `on at ${base}/ (log in with ERRAND_DASHBOARD_TOKEN)`;
  const tick =
    cronSecret({}) === null
      ? "off — CRON_SECRET is not set (it answers 503)"
      : jobs.length === 0
        ? "on — but no jobs module (--jobs): ticks fire schedules and run no jobs"
        : `on, running ${errand.jobNames.length} job type(s)`;
  const hosts =
    isLoopbackHost(host) || allowedHosts.length > 0
      ? `only for ${["localhost", "127.0.0.1", "[::1]", ...allowedHosts].join(", ")}`
      : "for any name (add --allowed-host to limit them)";
  process.stdout.write(
    `errand serving on ${base}\n` +
      `  dashboard, API and /metrics: ${dashboard}\n` +
      `  tick endpoint (GET/POST ${TICK_PATH}): ${tick}\n` +
      `  requests are answered ${hosts}\n`,
  );
  log.info({ url: base, tick: `${base}${TICK_PATH}`, jobs: errand.jobNames }, "errand serve listening");

  const closed = await new Promise<Promise<void>>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      log.info({ signal }, "stopping: no new connections; ticks in flight claim nothing more and finish");
      // At once, not after the server closed: a tick in flight stops claiming, its running jobs
      // get the timeout, then are released uncharged, and it answers. Closing after the server
      // closed the store under a tick that outlived the grace: its job stayed `running`, later
      // charged as lost (test/cli/serve-stop.test.ts).
      const closing = errand.close({ timeout: shutdownMs });
      const cut = setTimeout(() => server.closeAllConnections(), shutdownMs + CUT_MARGIN_MS);
      cut.unref();
      server.close(() => {
        clearTimeout(cut);
        resolve(closing);
      });
      server.closeIdleConnections();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await closed;
  log.info("errand serve stopped");
  return 0;
}
