import { ValidationError } from "../errors.js";
import type { Logger } from "../logger.js";
import { redactCredentials } from "../redact.js";
import { checkedStore } from "./checked.js";
import { MemoryStore } from "./memory/index.js";
import type { Store } from "./types.js";

export const DEFAULT_URL = "./errand.db";

export interface OpenStoreOptions {
  /** Postgres schema for errand's tables (default "errand"). */
  schema?: string;
  /** An application's own better-sqlite3 Database to share. */
  db?: unknown;
  /** Where a store reports trouble it works around (SQLite: a directory it cannot watch). */
  logger?: Logger;
}

/** SQLite: the watch for other processes' commits failed; the store polls instead. */
function sqliteWatchWarning(logger: Logger | undefined) {
  return (err: Error) =>
    logger?.warn(
      { err },
      "cannot watch the SQLite database's directory for other processes' commits; polling every 50 ms instead",
    );
}

/** Where a URL points: `memory:`, `postgres://…`, `sqlite:<path>` / `file:<path>` / a plain path. */
export function parseStoreUrl(
  url: string,
): { kind: "memory" } | { kind: "postgres"; url: string } | { kind: "sqlite"; path: string } {
  const value = url.trim();
  if (value === "")
    throw new ValidationError("store URL is empty; use a file path, sqlite:<path>, memory: or postgres://…");
  if (value === "memory:" || value === "memory://") return { kind: "memory" };
  if (/^postgres(ql)?:\/\//i.test(value)) return { kind: "postgres", url: value };
  const sqlite = /^(sqlite|file):(\/\/)?(.*)$/i.exec(value);
  if (sqlite) {
    const path = sqlite[3];
    if (!path) throw new ValidationError(`store URL ${JSON.stringify(url)} names no file`);
    return { kind: "sqlite", path };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new ValidationError(
      `unsupported store URL scheme in ${JSON.stringify(redactCredentials(url))}: use a file path, sqlite:<path>, memory: or postgres://…`,
    );
  }
  return { kind: "sqlite", path: value };
}

/**
 * Opens the store a URL names (migrating is the caller's: `migrate()`), wrapped in checkedStore
 * so every backend refuses the same bad arguments. Backends load lazily.
 */
export async function openStore(url: string = DEFAULT_URL, options: OpenStoreOptions = {}): Promise<Store> {
  let store: Store;
  if (options.db) {
    const { openSqliteStore } = await import("./sqlite/index.js");
    store = openSqliteStore({ db: options.db as never, onWatchError: sqliteWatchWarning(options.logger) });
  } else {
    const target = parseStoreUrl(url);
    if (target.kind === "memory") store = new MemoryStore();
    else if (target.kind === "sqlite") {
      const { openSqliteStore } = await import("./sqlite/index.js");
      store = openSqliteStore({ path: target.path, onWatchError: sqliteWatchWarning(options.logger) });
    } else {
      const { openPostgresStore } = await import("./postgres/index.js");
      store = openPostgresStore({
        url: target.url,
        schema: options.schema,
        // Dropped connections and silent ones (no answer within about a lease) are recovered
        // from by the store; an operator still wants to see them.
        onError: (err) =>
          options.logger?.warn({ err }, "PostgreSQL connection trouble; errand reconnects by itself"),
      });
    }
  }
  return checkedStore(store);
}
