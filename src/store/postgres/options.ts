/** What openPostgresStore takes (store.ts), and its check. */
import type pg from "pg";
import { ValidationError } from "../../errors.js";
import { SCHEMA_NAME_PATTERN } from "./queries.js";

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

/** The options checked (a ValidationError names the bad one); answers the schema name. */
export function checkPostgresStoreOptions(options: PostgresStoreOptions): string {
  const schema = options.schema ?? "errand";
  if (typeof schema !== "string" || !SCHEMA_NAME_PATTERN.test(schema) || /^pg_/i.test(schema)) {
    throw new ValidationError(
      `invalid Postgres schema name ${JSON.stringify(schema)}: use 1-50 letters, digits or "_", starting with a letter or "_" (and not "pg_")`,
    );
  }
  if (!options.pool && (typeof options.url !== "string" || options.url === "")) {
    throw new ValidationError("openPostgresStore needs a url (postgres://…) or a pool");
  }
  if (options.poolSize !== undefined && (!Number.isInteger(options.poolSize) || options.poolSize < 1)) {
    throw new ValidationError(`poolSize must be a positive integer; got ${JSON.stringify(options.poolSize)}`);
  }
  if (
    options.vacuumDeadRows !== undefined &&
    (!Number.isInteger(options.vacuumDeadRows) || options.vacuumDeadRows < 0)
  ) {
    throw new ValidationError(
      `vacuumDeadRows must be a non-negative integer (0 turns it off); got ${JSON.stringify(options.vacuumDeadRows)}`,
    );
  }
  return schema;
}
