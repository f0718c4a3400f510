/**
 * `errand serve`: an HTTP server (node:http) mounting errand's Fetch handler — the tick endpoint
 * (POST /api/cron/tick), and the JSON API, metrics and dashboard that share the handler.
 * Stops on SIGTERM/SIGINT: no new connections, requests in flight (a running tick) finish.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import { TICK_PATH } from "../http/tick.js";
import { CliError, cliLogger, globals, openFromOptions, parseIntOption, UsageError } from "./common.js";
import { loadJobs } from "./load-jobs.js";

interface ServeOptions {
  jobs?: string;
  host: string;
  port: string;
  prefix?: string;
}

/** How long requests in flight may take to finish after SIGTERM before connections are cut. */
const CLOSE_GRACE_MS = 30_000;

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
    .addHelpText(
      "after",
      `
The tick endpoint needs CRON_SECRET in the environment: POST ${TICK_PATH} with
"Authorization: Bearer $CRON_SECRET" fires due schedules and runs a batch of jobs (?limit=1..1000).
Without CRON_SECRET it answers 503. Listening beyond 127.0.0.1 requires ERRAND_DASHBOARD_TOKEN.

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
  const host = opts.host.trim();
  if (host === "") throw new UsageError("--host must not be empty");
  if (opts.prefix !== undefined && !/^\/[A-Za-z0-9._~\-/]*$/.test(opts.prefix)) {
    throw new UsageError(`--prefix must be a path starting with "/"; got ${JSON.stringify(opts.prefix)}`);
  }
  // Loaded here, not at start-up: the HTTP layer (dashboard, metrics) is only needed by `serve`.
  const [{ createFetchHandler }, { toNodeHandler }, { assertServeSafety }, { cronSecret }] =
    await Promise.all([
      import("../http/app.js"),
      import("../http/node.js"),
      import("../http/security.js"),
      import("../http/tick.js"),
    ]);
  try {
    assertServeSafety({ host });
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  const modulePath = opts.jobs ?? process.env.ERRAND_JOBS;
  const jobs = modulePath ? await loadJobs(modulePath) : [];
  const log = await cliLogger();
  const errand = await openFromOptions(globals(cmd), { jobs, logger: log });
  const server = createServer(toNodeHandler(createFetchHandler(errand, { prefix: opts.prefix })));
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
  process.stdout.write(`errand serving on ${base}\n`);
  if (cronSecret({}) === null)
    log.warn(`the tick endpoint is off: set CRON_SECRET to turn on POST ${TICK_PATH}`);
  if (jobs.length === 0) log.warn("no jobs module (--jobs): ticks fire schedules but run no jobs");
  log.info({ url: base, tick: `${base}${TICK_PATH}`, jobs: errand.jobNames }, "errand serve listening");

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      log.info({ signal }, "stopping: no new connections; requests in flight finish");
      const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
      cut.unref();
      server.close(() => {
        clearTimeout(cut);
        resolve();
      });
      server.closeIdleConnections();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await errand.close();
  log.info("errand serve stopped");
  return 0;
}
