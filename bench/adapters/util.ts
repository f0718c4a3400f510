import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

/** The repository root (bench/adapters/../..). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The installed version of a package in the project's node_modules, or "not installed". */
export function packageVersion(name: string, base = join(ROOT, "node_modules")): string {
  try {
    return (JSON.parse(readFileSync(join(base, name, "package.json"), "utf8")) as { version: string })
      .version;
  } catch {
    return "not installed";
  }
}

/** Runs a few statements on a short-lived connection. */
export async function withPg<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  await withPg(url, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** null when Postgres answers; otherwise the reason. */
export async function postgresReachable(url: string): Promise<string | null> {
  try {
    await withPg(url, (c) => c.query("SELECT 1"));
    return null;
  } catch (err) {
    return `PostgreSQL not reachable at ${url.replace(/\/\/[^@/]*@/, "//")}: ${(err as Error).message}`;
  }
}

/** Runs `fn` over `items` in slices of `size`, one after another. */
export async function inChunks<T>(
  items: T[],
  size: number,
  fn: (chunk: T[]) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < items.length; i += size) await fn(items.slice(i, i + size));
}

/** Runs `fn` over `items` with at most `parallel` calls in flight (for systems with no bulk API). */
export async function inParallel<T>(
  items: T[],
  parallel: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, lane));
}

/** The size of a chunk for batch-insert APIs: the same for every system. */
export const BULK_CHUNK = 5_000;
