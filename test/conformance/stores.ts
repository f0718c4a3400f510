/**
 * The store view of the one target registry (test/helpers/targets.ts), for the conformance
 * suite: each entry's `open()` gives a test a migrated store of its own, isolated from every
 * other test (memory: a new MemoryStore; SQLite: a fresh temp file; Postgres: a fresh schema,
 * skipped with a message when unreachable and required when CI is set). `cleanup()` closes it
 * and removes what it created.
 */
import { targets } from "../helpers/targets.js";

export type { OpenedStore } from "../helpers/targets.js";

import type { OpenedStore } from "../helpers/targets.js";

export interface StoreFactory {
  name: string;
  open(): Promise<OpenedStore>;
  /** A message saying why this store is skipped (e.g. "Postgres not reachable"), or false. */
  skip?: string | false;
}

export const stores: StoreFactory[] = targets.map((t) => ({
  name: t.name,
  skip: t.skip,
  open: () => t.openStore(),
}));
