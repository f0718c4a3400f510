/**
 * The one registry of store targets for every test: memory, SQLite and Postgres. A test that
 * should hold on every store loops over `targets` (or `sqlTargets` when it needs a database other
 * processes can open) and opens what it needs through the target:
 *
 * - `openStore()`: a migrated store of its own — memory: a new MemoryStore; SQLite: a fresh file
 *   in a temp folder (or in `dir`); Postgres: a fresh schema of the test database. `cleanup()`
 *   closes it and removes the file (with its -wal/-shm companions) or drops the schema.
 * - `openErrand()`: the same, behind `openErrand` (with a silent logger unless given one).
 *
 * Both take an optional test `clock` (ms since the epoch): the store then reads "now" from it
 * instead of its database's clock, so a test moves time instead of waiting for it.
 *
 * Postgres is skipped with a message when unreachable, and required when CI is set (then the
 * import throws: CI cannot go green without having run Postgres) — see ./postgres.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Errand, type OpenErrandOptions, openErrand, silentLogger } from "../../src/index.js";
import { checkedStore } from "../../src/store/checked.js";
import { MemoryStore } from "../../src/store/memory/index.js";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "./postgres.js";

export type TargetName = "memory" | "sqlite" | "postgres";

export interface OpenedStore {
  store: Store;
  /** Closes the store and removes everything it created (file, schema). */
  cleanup(): Promise<void>;
}

export interface OpenedDatabase extends OpenedStore {
  /** What another process opens the same database with: a file path, a Postgres URL, or "memory:". */
  url: string;
  /** Postgres: the schema of this database. */
  schema?: string;
}

export interface OpenedErrand {
  errand: Errand;
  url: string;
  /** Closes the errand and removes its database. */
  cleanup(): Promise<void>;
}

export interface TargetOptions {
  /** A test clock (ms since the epoch) the store reads "now" from instead of its database's. */
  clock?: () => number;
  /** SQLite: the folder the database file goes in (kept at cleanup); default a fresh temp folder (removed). */
  dir?: string;
  /** Postgres: the pool size (default 4) and the prefix of the schema's name. */
  poolSize?: number;
  schemaPrefix?: string;
}

export interface StoreTarget {
  name: TargetName;
  /** Why this target is skipped (Postgres unreachable outside CI), or false. */
  skip: string | false;
  openStore(options?: TargetOptions): Promise<OpenedDatabase>;
  openErrand(options?: ErrandOptions & Pick<TargetOptions, "clock">): Promise<OpenedErrand>;
}

const postgresSkip = await skipUnlessPostgres();

/** A folder for a SQLite file: `dir`, or a fresh temp folder removed by the returned function. */
async function folder(dir: string | undefined): Promise<{ dir: string; remove(): Promise<void> }> {
  if (dir !== undefined) return { dir, remove: async () => {} };
  const made = await mkdtemp(join(tmpdir(), "errand-test-"));
  return { dir: made, remove: () => rm(made, { recursive: true, force: true }) };
}

type ErrandOptions = Omit<OpenErrandOptions, "url" | "store">;

/**
 * An errand on a fresh database of `target`. Without a clock errand opens it by URL, as an
 * application does (it owns the store); with one, on a store built with that clock (wrapped in
 * checkedStore, as openErrand's own stores are).
 */
async function errandOn(
  target: StoreTarget,
  { clock, ...options }: ErrandOptions & Pick<TargetOptions, "clock">,
): Promise<OpenedErrand> {
  const opened = await target.openStore({ clock });
  if (clock) {
    try {
      const errand = await openErrand({
        store: checkedStore(opened.store),
        logger: silentLogger(),
        ...options,
      });
      return { errand, url: opened.url, cleanup: () => errand.close().finally(() => opened.cleanup()) };
    } catch (err) {
      await opened.cleanup().catch(() => {});
      throw err;
    }
  }
  // By URL: the freshly migrated store only made the database; errand opens its own on it.
  await opened.store.close();
  const remove = () => opened.cleanup();
  try {
    const errand = await openErrand({
      url: opened.url,
      ...(opened.schema ? { schema: opened.schema } : {}),
      logger: silentLogger(),
      ...options,
    });
    return { errand, url: opened.url, cleanup: () => errand.close().finally(remove) };
  } catch (err) {
    await remove().catch(() => {});
    throw err;
  }
}

const memory: StoreTarget = {
  name: "memory",
  skip: false,
  async openStore(options = {}) {
    const store = new MemoryStore(options.clock ? { clock: options.clock } : {});
    await store.migrate();
    return { store, url: "memory:", cleanup: () => store.close() };
  },
  async openErrand(options = {}) {
    if (options.clock) return errandOn(memory, options);
    const { clock: _, ...rest } = options;
    const errand = await openErrand({ url: "memory:", logger: silentLogger(), ...rest });
    return { errand, url: "memory:", cleanup: () => errand.close() };
  },
};

const sqlite: StoreTarget = {
  name: "sqlite",
  skip: false,
  async openStore(options = {}) {
    const { dir, remove } = await folder(options.dir);
    const url = join(dir, "errand.db");
    const store = openSqliteStore({ path: url, clock: options.clock });
    const cleanup = async () => {
      await store.close();
      await remove(); // the file and its -wal/-shm companions
    };
    try {
      await store.migrate();
    } catch (err) {
      await cleanup().catch(() => {});
      throw err;
    }
    return { store, url, cleanup };
  },
  openErrand: (options = {}) => errandOn(sqlite, options),
};

const postgres: StoreTarget = {
  name: "postgres",
  skip: postgresSkip,
  async openStore(options = {}) {
    const { schema, drop } = freshSchema(options.schemaPrefix ?? "errand_t");
    const url = postgresUrl();
    const store = openPostgresStore({ url, schema, poolSize: options.poolSize ?? 4, clock: options.clock });
    const cleanup = async () => {
      await store.close();
      await drop();
    };
    try {
      await store.migrate();
    } catch (err) {
      await cleanup().catch(() => {});
      throw err;
    }
    return { store, url, schema, cleanup };
  },
  openErrand: (options = {}) => errandOn(postgres, options),
};

/** Every store, the reference (memory) first. */
export const targets: StoreTarget[] = [memory, sqlite, postgres];

/** The stores on a database other processes can open too (SQLite, Postgres). */
export const sqlTargets: StoreTarget[] = [sqlite, postgres];

/** The target of that name. */
export function target(name: TargetName): StoreTarget {
  const found = targets.find((t) => t.name === name);
  if (!found) throw new Error(`no store target named ${name}`);
  return found;
}

/** Runs `fn` on a fresh errand of `target`, cleaning up afterwards whatever happens. */
export async function withErrand(
  target: StoreTarget,
  fn: (errand: Errand) => Promise<void>,
  options?: Parameters<StoreTarget["openErrand"]>[0],
): Promise<void> {
  const { errand, cleanup } = await target.openErrand(options);
  try {
    await fn(errand);
  } finally {
    await cleanup();
  }
}
