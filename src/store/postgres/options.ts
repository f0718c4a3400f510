/** What openPostgresStore takes (store.ts). */
import type pg from "pg";

export interface PostgresStoreOptions {
  /** `postgres://user:pass@host:port/db`. Optional when `pool` is given (then its options are used to LISTEN). */
  url?: string;
  /** Schema holding errand's tables (default "errand"). Letters, digits and "_", at most 50. */
  schema?: string;
  /** An application's own pool to share; errand then never ends it. */
  pool?: pg.Pool;
  /** Size of the pool errand creates (default 10). */
  poolSize?: number;
  /**
   * Background connection errors (an idle pool client or the LISTEN connection dropped). The store
   * recovers by itself and never logs; pass this to log them.
   */
  onError?: (err: Error) => void;
  /**
   * Dead rows in the jobs table after which a worker's upkeep vacuums it (default 100,000;
   * 0 turns it off). Needed where autovacuum is off or throttled behind the queue's churn.
   */
  vacuumDeadRows?: number;
  /**
   * For tests only: the store's "now" in ms since the epoch, instead of the database clock, so a
   * test can move time (leases, due times, retention) without waiting. Production leaves it unset.
   */
  clock?: () => number;
}
