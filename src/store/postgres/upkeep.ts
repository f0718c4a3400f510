/**
 * Keeping the tables small: folding the counters' deltas, pruning finished jobs, and vacuuming
 * the jobs table where autovacuum does not keep up.
 */
import type pg from "pg";
import type { PruneRequest } from "../types.js";
import type { Db } from "./db.js";

/** Dead rows in job_count_deltas (a row per writing statement, folded away by stats()) before a vacuum. */
const VACUUM_DELTA_ROWS = 10_000;

/** Rows per prune statement: short statements, few row locks held at once. */
const PRUNE_BATCH = 10_000;

/** Folds the counters' deltas (one process at a time; the others skip). */
export async function compactCounts(db: Db): Promise<void> {
  await db.run("COMPACT_COUNTS", [`errand.counts:${db.schema}`]);
}

/**
 * The compaction a read of the counters begins with: only a saving (the reads add the deltas
 * not yet folded in), so a session that cannot write — a read replica, a hot standby, a role
 * with default_transaction_read_only — reads without it instead of failing (SQLSTATE 25006,
 * test/postgres-store/read-only.test.ts).
 */
export async function compactBeforeRead(db: Db): Promise<void> {
  try {
    await compactCounts(db);
  } catch (err) {
    if ((err as { code?: unknown }).code !== "25006") throw err;
  }
}

/** Deletes old jobs (their ctx.once entries go with them: migrations.ts 8's trigger) and old global entries. */
export async function pruneFinished(db: Db, req: PruneRequest): Promise<number> {
  let pruned = 0;
  for (const [query, age] of [
    ["PRUNE_COMPLETED", req.completedAgeMs],
    ["PRUNE_FAILED", req.failedAgeMs],
  ] as const) {
    for (;;) {
      const result = await db.run(query, [age, PRUNE_BATCH]);
      const n = result.rowCount ?? 0;
      pruned += n;
      if (n < PRUNE_BATCH) break;
    }
  }
  if (req.globalOnceAgeMs !== undefined) {
    while (
      ((await db.run("PRUNE_GLOBAL_LEDGER", [req.globalOnceAgeMs, PRUNE_BATCH])).rowCount ?? 0) >= PRUNE_BATCH
    );
  }
  await compactCounts(db);
  return pruned;
}

/**
 * Vacuums jobs (and job_count_deltas) once their dead rows pass the threshold. Without it, on
 * a server with autovacuum off (or throttled behind the churn), a 5,000,000-job soak fell from
 * 18,000 to 1,500 jobs/s: the pending index held millions of dead entries in front of the
 * live ones, and each claim read through them from disk. Many workers may call this at once:
 * one that finds a vacuum running skips it.
 */
export class Vacuum {
  private stopped = false;
  /** The connection of a running vacuum: stop() drops it rather than wait (a vacuum can take a minute). */
  private client: pg.PoolClient | null = null;

  /** `deadRows`: dead rows in the jobs table before a vacuum (0 turns it off). */
  constructor(
    private readonly db: Db,
    private readonly deadRows: number,
  ) {}

  async run(): Promise<void> {
    const db = this.db;
    if (this.deadRows === 0 || this.stopped) return;
    const { rows } = await db.run("TABLES_TO_VACUUM", [this.deadRows, VACUUM_DELTA_ROWS]);
    for (const row of rows as Array<{ table: string }>) {
      if (this.stopped) return;
      const client = await db.pool.connect();
      const onClientError = (err: Error) => db.report(err);
      client.on("error", onClientError);
      this.client = client;
      try {
        await db.run(row.table === "jobs" ? "VACUUM_JOBS" : "VACUUM_JOB_COUNT_DELTAS", [], client, false);
      } catch (err) {
        if (this.stopped) return; // stop() dropped the connection on purpose
        throw err;
      } finally {
        client.off("error", onClientError);
        // stop() released it already when it dropped the vacuum's connection.
        if (this.client === client) {
          this.client = null;
          client.release();
        }
      }
    }
  }

  /** For the store's close(): no new vacuum, and a running one loses its connection. */
  stop(): void {
    this.stopped = true;
    const vacuuming = this.client;
    this.client = null;
    vacuuming?.release(new Error("store closed during vacuum"));
  }
}
