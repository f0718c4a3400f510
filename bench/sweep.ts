/** Cleaning up after bench runs: whatever a run left in Postgres, Redis and the temporary folder. */
import { rmSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { withPg } from "./adapters/util.js";

/** Where one invocation of the bench puts its runs' data, and how it reports. */
export interface Leftovers {
  pgUrl: string;
  redisUrl: string;
  /** The prefix of every run of this invocation. */
  invocation: string;
  /** The invocation's folder of SQLite files. */
  tmp: string;
  log(line: string): void;
}

/**
 * Drops whatever runs under `prefix` left behind: Postgres schemas, Redis keys, SQLite files.
 * A schema still locked by a stuck connection is left after a 10 s lock timeout (and named).
 */
export async function sweep(place: Leftovers, prefix: string = place.invocation): Promise<void> {
  const { pgUrl, redisUrl, invocation, tmp, log } = place;
  await withPg(pgUrl, async (c) => {
    await c.query("SET lock_timeout = '10s'");
    const { rows } = await c.query("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [
      prefix,
    ]);
    for (const r of rows) {
      await c
        .query(`DROP SCHEMA IF EXISTS "${r.nspname}" CASCADE`)
        .catch((err: Error) => log(`could not drop schema ${r.nspname}: ${err.message}`));
    }
  }).catch(() => {});
  await sweepRedis(redisUrl, prefix).catch(() => {});
  if (prefix === invocation) rmSync(tmp, { recursive: true, force: true });
  else
    for (const suffix of [".db", ".db-wal", ".db-shm", ".db-journal"])
      rmSync(join(tmp, prefix + suffix), { force: true });
}

/** Deletes Redis keys under errand-bench:<prefix> (only ours) with SCAN + DEL over RESP. */
function sweepRedis(redisUrl: string, prefix: string): Promise<void> {
  const url = new URL(redisUrl);
  const encode = (parts: string[]) =>
    `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join("")}`;
  return new Promise((resolve) => {
    const socket = connect(Number(url.port || 6379), url.hostname);
    let buffer = "";
    let cursor = "0";
    const finish = () => {
      socket.destroy();
      resolve();
    };
    socket.setTimeout(5000, finish);
    socket.on("error", finish);
    const scan = () =>
      socket.write(encode(["SCAN", cursor, "MATCH", `errand-bench:${prefix}*`, "COUNT", "1000"]));
    socket.on("connect", scan);
    socket.on("data", (chunk) => {
      buffer += chunk.toString();
      // A SCAN reply: *2 $n cursor *k ($len key)...; a DEL reply: :n
      if (buffer.startsWith(":")) {
        buffer = "";
        if (cursor === "0") finish();
        else scan();
        return;
      }
      const lines = buffer.split("\r\n");
      if (lines.length < 4) return;
      const count = Number(lines[3].slice(1));
      if (lines.length < 4 + count * 2 + 1) return;
      cursor = lines[2];
      const keys = Array.from({ length: count }, (_, i) => lines[5 + i * 2]);
      buffer = "";
      if (keys.length) socket.write(encode(["DEL", ...keys]));
      else if (cursor === "0") finish();
      else scan();
    });
  });
}
