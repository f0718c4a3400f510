/**
 * Steady state before a timed phase: after the untimed enqueue, the system's tables get
 * statistics and the enqueue's dirty pages are written out, as they would be on a server that
 * has been running for a while (autovacuum analyzes a table that grew by 50,000 rows; the
 * checkpointer flushes). Without this, every run measured a fresh, never-analyzed schema: the
 * planner worked from default estimates, which flatter some systems and not others (issue 13:
 * graphile-worker-best ran 26-29k jobs/s never analyzed, 40-41k analyzed). That state is kept
 * as its own row ("burst into a never-analyzed table", workloads.ts), never as the headline.
 *
 * Postgres: ANALYZE every table of the run's schemas (each system's schema starts with the
 * run's namespace), then CHECKPOINT. SQLite: ANALYZE and a WAL checkpoint on the run's file.
 * Redis has no planner: nothing to do.
 */
import Database from "better-sqlite3";
import type { SystemDef, Target } from "./adapters/types.js";
import { withPg } from "./adapters/util.js";

export async function settle(system: SystemDef, target: Target): Promise<void> {
  if (system.backend === "postgres") {
    await withPg(target.pgUrl, async (c) => {
      const { rows } = await c.query(
        `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE starts_with(schemaname, $1)`,
        [target.namespace],
      );
      for (const r of rows) await c.query(`ANALYZE ${r.t}`);
      await c.query("CHECKPOINT");
    });
  } else if (system.backend === "sqlite") {
    const db = new Database(target.sqlitePath);
    try {
      db.exec("ANALYZE");
      db.pragma("wal_checkpoint(TRUNCATE)");
    } finally {
      db.close();
    }
  }
}
