/** What the bench report says about the machine and the code it measured. */
import { execFileSync } from "node:child_process";
import { connect } from "node:net";
import { availableParallelism, cpus, loadavg, release, totalmem, type } from "node:os";
import { ROOT, withPg } from "./adapters/util.js";
import type { Machine } from "./results.js";

async function redisVersion(redisUrl: string): Promise<string> {
  const url = new URL(redisUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port || 6379), url.hostname);
    let data = "";
    const done = (v: string) => {
      socket.destroy();
      resolve(v);
    };
    socket.setTimeout(2000, () => done("unreachable"));
    socket.on("error", () => done("unreachable"));
    socket.on("connect", () => socket.write("INFO server\r\n"));
    socket.on("data", (chunk) => {
      data += chunk.toString();
      const m = /redis_version:([^\r\n]+)/.exec(data);
      if (m) done(m[1]);
    });
  });
}

/** The commit errand's code is at, with "+ uncommitted changes" when src/ differs from it. */
export function codeVersion(): string {
  try {
    const head = execFileSync("git", ["log", "-1", "--format=%h %s"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], {
      cwd: ROOT,
      encoding: "utf8",
    }).trim();
    return `${head}${dirty ? " + uncommitted changes in src/" : ""}`;
  } catch {
    return "unknown";
  }
}

/** Peak RSS (MB) of an idle Node process, with and without the tsx loader the workers run under. */
function baselineRss(withTsx: boolean): number {
  const code =
    "setTimeout(() => console.log(/VmHWM:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]), 200)";
  try {
    const out = execFileSync(process.execPath, [...(withTsx ? ["--import", "tsx"] : []), "-e", code], {
      cwd: ROOT,
      encoding: "utf8",
    });
    return Math.round(Number(out.trim()) / 1024);
  } catch {
    return Number.NaN;
  }
}

export async function machine(pgUrl: string, redisUrl: string): Promise<Machine> {
  const postgres = await withPg(
    pgUrl,
    async (c) => (await c.query("SHOW server_version")).rows[0].server_version as string,
  )
    .then((v) => `PostgreSQL ${v}`)
    .catch(() => "PostgreSQL unreachable");
  return {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? "unknown",
    memoryGb: totalmem() / 1024 ** 3,
    node: process.version,
    postgres,
    redis: await redisVersion(redisUrl),
    os: `${type()} ${release()}`,
    loadStart: Number(loadavg()[0].toFixed(2)),
    baselineRssMb: { node: baselineRss(false), tsx: baselineRss(true) },
  };
}
