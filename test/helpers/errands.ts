/**
 * Opens a fresh errand per test on each store the suite runs against: memory, a SQLite file
 * in a temp folder, and a Postgres schema (when reachable; required when CI=true).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Errand, type OpenErrandOptions, openErrand, silentLogger } from "../../src/index.js";
import { postgresAvailability } from "./pg-availability.js";

export interface ErrandTarget {
  name: "memory" | "sqlite" | "postgres";
  /** A reason to skip, or false. */
  skip: string | false;
  open(
    options?: Omit<OpenErrandOptions, "url" | "store">,
  ): Promise<{ errand: Errand; url: string; cleanup(): Promise<void> }>;
}

let schemaSeq = 0;

export const targets: ErrandTarget[] = [
  {
    name: "memory",
    skip: false,
    async open(options = {}) {
      const errand = await openErrand({ url: "memory:", logger: silentLogger(), ...options });
      return { errand, url: "memory:", cleanup: () => errand.close() };
    },
  },
  {
    name: "sqlite",
    skip: false,
    async open(options = {}) {
      const dir = mkdtempSync(join(tmpdir(), "errand-test-"));
      const url = join(dir, "errand.db");
      const errand = await openErrand({ url, logger: silentLogger(), ...options });
      return {
        errand,
        url,
        async cleanup() {
          await errand.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: "postgres",
    skip: postgresAvailability().skip,
    async open(options = {}) {
      const { url } = postgresAvailability();
      const schema = `errand_t${process.pid}_${Date.now().toString(36)}_${schemaSeq++}`;
      const errand = await openErrand({ url, schema, logger: silentLogger(), ...options });
      return {
        errand,
        url,
        async cleanup() {
          await errand.close();
          const pg = await import("pg");
          const client = new pg.default.Client({ connectionString: url });
          await client.connect();
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await client.end();
        },
      };
    },
  },
];

/** Runs `fn` on a fresh errand of `target`, cleaning up afterwards whatever happens. */
export async function withErrand(target: ErrandTarget, fn: (errand: Errand) => Promise<void>): Promise<void> {
  const { errand, cleanup } = await target.open();
  try {
    await fn(errand);
  } finally {
    await cleanup();
  }
}
