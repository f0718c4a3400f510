/** SQLite store tests: fresh database files under os.tmpdir(), removed after each test. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { openSqliteStore, type SqliteStoreOptions } from "../../src/store/sqlite/index.js";
import { MIGRATIONS, MIGRATIONS_TABLE_SQL } from "../../src/store/sqlite/migrations.js";
import type { NewJob } from "../../src/store/types.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The SQLite store's module, for child processes to import. */
export const STORE_MODULE = pathToFileURL(join(ROOT, "src/store/sqlite/index.ts")).href;

/** A job for the store's insertJobs: queue "q", name "task", unless `over` says otherwise. */
export const job = (over: Partial<NewJob> = {}): NewJob => ({
  queue: "q",
  name: "task",
  payload: { n: 1 },
  priority: 0,
  maxAttempts: 3,
  ...over,
});

/** The single number `sql` selects on `db` (0 for none). */
export const count = (db: Database.Database, sql: string) => (db.prepare(sql).pluck().get() as number) ?? 0;

/** A database path in a fresh temp folder, removed after the test. */
export async function tempPath(t: TestContext, prefix = "errand-sqlite-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, "errand.db");
}

/** A migrated store on a fresh file, closed after the test. */
export async function fresh(t: TestContext, options: Omit<SqliteStoreOptions, "path" | "db"> = {}) {
  const path = await tempPath(t);
  const store = openSqliteStore({ path, ...options });
  t.after(() => store.close());
  await store.migrate();
  return { path, store };
}

/** A second, plain better-sqlite3 connection on `path` (an application's own handle), closed after the test. */
export function connection(t: TestContext, path: string): Database.Database {
  const db = new Database(path);
  db.pragma("busy_timeout = 5000");
  t.after(() => db.close());
  return db;
}

/**
 * Brings a bare database to the schema an older errand left: every migration below `version`,
 * recorded as applied, as upgrade tests need before they open the store on it.
 */
export function applyMigrationsBelow(db: Database.Database, version: number): void {
  db.exec(MIGRATIONS_TABLE_SQL);
  for (const m of MIGRATIONS.filter((x) => x.version < version)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO errand_migrations (version, name, applied_at) VALUES (?, ?, 0)").run(
      m.version,
      m.name,
    );
  }
}
