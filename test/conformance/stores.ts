/**
 * The stores the conformance suite runs against: store.test.ts and model.test.ts
 * run every test once per entry here. A behaviour is specified once and every
 * store must pass it (docs/semantics.md: one conformance suite, every store).
 *
 * Each store APPENDS ITS OWN ENTRY to `stores` below, and every entry gives each
 * test a store of its own, isolated from every other test:
 *
 * - memory:   a new MemoryStore per test (the reference implementation).
 * - SQLite:   a fresh temporary database file per test (mkdtemp + unique name),
 *             migrated in `open()`; `cleanup()` closes the store and deletes the
 *             file with its -wal/-shm companions.
 * - Postgres: a fresh schema per test (unique name, e.g. `errand_t_<random>`),
 *             migrated in `open()`; `cleanup()` closes the store and drops the
 *             schema CASCADE. Set `skip` to a message saying why when no database
 *             is reachable (no ERRAND_TEST_PG_URL / connection refused) — but when
 *             CI=true an unreachable database must FAIL, never skip, so CI cannot
 *             go green without having run Postgres.
 *
 * `open()` returns a migrated store ready to use. Tests never share a store.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "../../src/store/memory/index.js";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/types.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

export interface OpenedStore {
  store: Store;
  /** Closes the store and removes everything it created (file, schema). */
  cleanup(): Promise<void>;
}

export interface StoreFactory {
  name: string;
  open(): Promise<OpenedStore>;
  /** A message saying why this store is skipped (e.g. "Postgres not reachable"), or false. */
  skip?: string | false;
}

export const stores: StoreFactory[] = [
  {
    name: "memory",
    async open() {
      const store = new MemoryStore();
      await store.migrate();
      return { store, cleanup: () => store.close() };
    },
  },
  // SQLite appends its entry here (temp file per test).
  {
    name: "sqlite",
    async open() {
      const dir = await mkdtemp(join(tmpdir(), "errand-conformance-"));
      const store = openSqliteStore({ path: join(dir, "errand.db") });
      await store.migrate();
      return {
        store,
        cleanup: async () => {
          await store.close();
          await rm(dir, { recursive: true, force: true }); // the file and its -wal/-shm companions
        },
      };
    },
  },
  // Postgres appends its entry here (fresh schema per test; skip with a message unless reachable,
  // required when CI=true).
  {
    name: "postgres",
    // Throws when CI=true and the server is unreachable: CI must run Postgres, never skip it.
    skip: await skipUnlessPostgres(),
    async open() {
      const { schema, drop } = freshSchema("errand_t");
      const store = openPostgresStore({ url: postgresUrl(), schema, poolSize: 4 });
      try {
        await store.migrate();
      } catch (err) {
        await store.close().catch(() => {});
        await drop().catch(() => {});
        throw err;
      }
      return {
        store,
        cleanup: async () => {
          await store.close();
          await drop();
        },
      };
    },
  },
];
