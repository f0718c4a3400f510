/**
 * The PostgreSQL store's connections, and how it survives one that goes silent (issue 12).
 *
 * A connection can stay open and carry nothing: a NAT or firewall entry lost, a frozen database
 * VM, a stalled pooler. Without limits every statement on it waits forever (TCP keepalive gives
 * up after the OS default of two hours), a transaction on it keeps its row locks on the server
 * for as long ("idle in transaction"), and ending the pool waits for it. So:
 *
 * - Every statement has a client-side timeout (node-postgres `query_timeout`), sized from the
 *   lease: a statement unanswered that long fails, its connection is destroyed (never given back
 *   to the pool) and the next statement opens a new one. A timed-out autocommit statement may
 *   still finish on the server — harmless, every write is fenced by the lease token — and a
 *   statement inside a transaction is also bounded on the server (below).
 * - Every errand transaction carries server-side limits, set in its BEGIN (no extra round trip):
 *   `idle_in_transaction_session_timeout` (the server ends a session whose client went quiet
 *   mid-transaction, releasing its row locks, so the rescuer can take the job back) and
 *   `statement_timeout`.
 * - TCP keepalive after 5 s of idle: a peer that vanished is found by the OS (and NAT entries
 *   stay alive). Node cannot set the probe interval (Linux default 9 × 75 s), so keepalive alone
 *   does not bound anything: the timeouts above do.
 * - Closing is bounded: connections still busy after a grace period are destroyed.
 *
 * The limits follow the shortest lease of the workers using the store (`limitsForLease`): a
 * connection that does not answer within a lease costs the jobs their leases anyway.
 */
import pg from "pg";
import { ValidationError } from "../../errors.js";

export interface ConnectionLimits {
  /** Client side: a statement unanswered this long fails and its connection is destroyed. */
  queryMs: number;
  /** Server side, inside errand's transactions: `statement_timeout`. */
  statementMs: number;
  /** Server side, inside errand's transactions: `idle_in_transaction_session_timeout`. */
  idleInTransactionMs: number;
  /** Opening a connection (TCP, TLS, authentication) gives up after this. */
  connectMs: number;
}

/** The worker's default lease: the limits of a store no worker told its lease to. */
export const DEFAULT_LEASE_MS = 15_000;

/**
 * Statements that may legitimately run long get this instead of the lease-sized limit: bulk
 * inserts (5,000 rows, up to 64 MiB of payload per statement; ~40 ms for small payloads on the
 * 2-core VM, bench/enqueue.ts), prune and admin batches, reads over the whole jobs table (stats
 * and throughput scans took 6.6 ms / seconds with 5M finished rows). Five minutes is far above
 * any of them and still bounds a silent connection.
 */
export const SLOW_MS = 5 * 60_000;

/**
 * No practical limit (setTimeout's maximum, ~24 days): migrations (a schema change can rewrite
 * a big table for many minutes; its advisory lock waits for another process's migration) and
 * VACUUM (minutes on a big table; close() drops its connection rather than wait).
 */
export const UNBOUNDED_MS = 2 ** 31 - 1;

/**
 * Limits for a lease. The server cancels a statement after a lease (then the client gets a
 * proper error and keeps its connection); the client gives up a second later (the server did
 * not answer at all). The floor of 1 s keeps a short test lease (100 ms) from failing ordinary
 * statements on a loaded machine.
 */
export function limitsForLease(leaseMs: number): ConnectionLimits {
  const base = Math.max(1_000, Math.floor(leaseMs));
  return {
    statementMs: base,
    queryMs: base + 1_000,
    idleInTransactionMs: base,
    connectMs: Math.max(5_000, 2 * base),
  };
}

const KEEPALIVE_IDLE_MS = 5_000;

/**
 * Session settings errand's SQL and node-postgres rely on, set on each connection of a pool
 * errand owns, whatever the database's or role's defaults (ALTER DATABASE/ROLE … SET):
 * - DateStyle ISO: node-postgres parses only ISO dates; under 'SQL, DMY' or 'German' every
 *   timestamp read as 1970-01-01 or null (now(), run times, unique windows, debounces);
 * - extra_float_digits 1 (the default since PostgreSQL 12): epoch milliseconds read as float8
 *   keep every digit; at -15 a `unique: { for: "24h" }` window let duplicates in;
 * - read committed: each statement sees what committed before it (the claim and migration locks
 *   count on it); under serializable, keyed enqueues failed with 40001 and concurrent opens failed.
 * Sent with SET, not as a startup `options` parameter, which PgBouncer refuses by default.
 * test/postgres-store/session-settings.test.ts.
 */
const SESSION_SETTINGS =
  "SET DateStyle = 'ISO, MDY'; SET extra_float_digits = 1; SET default_transaction_isolation = 'read committed'";

/** A pool errand owns: keepalive, connect and statement timeouts from `limits`, pinned session settings. */
export function createPool(options: {
  url: string;
  schema: string;
  max: number;
  limits: ConnectionLimits;
}): pg.Pool {
  return new pg.Pool({
    connectionString: options.url,
    max: options.max,
    application_name: `errand:${options.schema}`,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    connectionTimeoutMillis: options.limits.connectMs,
    // The default for statements that name no timeout: the application's own statements inside
    // completeInTransaction, BEGIN and COMMIT.
    query_timeout: options.limits.queryMs,
    idleTimeoutMillis: 30_000,
    // Before the new connection is handed out (a failure fails the checkout, as a refused
    // connection would); a query sent from the "connect" event overlapped the caller's first.
    verify: (client, done) => {
      client.query(SESSION_SETTINGS).then(
        () => done(),
        (err: Error) => done(err),
      );
    },
  });
}

/** Options of the dedicated LISTEN connection (notifier.ts). */
export function listenClientConfig(
  base: pg.ClientConfig,
  schema: string,
  limits: ConnectionLimits,
): pg.ClientConfig {
  return {
    ...base,
    application_name: `errand-listen:${schema}`,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    connectionTimeoutMillis: limits.connectMs,
    query_timeout: limits.queryMs,
  };
}

/** A statement with a client-side timeout (node-postgres reads `query_timeout`; its types omit it). */
export function timed(config: pg.QueryConfig, ms: number): pg.QueryConfig {
  return Object.assign(config, { query_timeout: ms });
}

/** A statement got no answer in time: the connection is presumed dead and was dropped. */
export class SilentConnectionError extends Error {
  readonly code = "ERRAND_PG_SILENT";
  constructor(what: string, ms: number) {
    super(
      `PostgreSQL did not answer ${what} within ${ms} ms: the connection went silent (network, NAT, frozen server or pooler); it is dropped and the next statement opens a new one`,
    );
    this.name = "SilentConnectionError";
  }
}

/** node-postgres's error for a statement past its `query_timeout`. */
export function isReadTimeout(err: unknown): boolean {
  return (
    err instanceof SilentConnectionError || (err instanceof Error && err.message === "Query read timeout")
  );
}

/**
 * The first statement of every errand transaction: BEGIN with its server-side limits, in one
 * round trip. `statementMs` 0 means none (migrations).
 */
export function beginStatement(limits: ConnectionLimits, statementMs = limits.statementMs): string {
  // Read committed whatever the session's default (a pool the application passed in): the
  // migration lock, then the read of the applied versions, must see what committed meanwhile.
  return `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = ${Math.floor(statementMs)}; SET LOCAL idle_in_transaction_session_timeout = ${Math.floor(limits.idleInTransactionMs)}`;
}

/**
 * Destroys a client's socket at once (no goodbye: on a silent connection it would never be
 * acknowledged). A late error of the dead client is swallowed rather than crash the process.
 */
export function destroyClient(client: pg.Client | pg.PoolClient): void {
  client.on("error", () => {});
  const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
  stream?.destroy();
}

/** Ends a client, or destroys it when the server has not acknowledged within `graceMs`. */
export async function endClient(client: pg.Client, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const ended = client.end().catch(() => {});
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), graceMs);
  });
  try {
    if ((await Promise.race([ended, late])) === "late") destroyClient(client);
  } finally {
    clearTimeout(timer);
  }
}

/** Remembers the clients of a pool, so that closing it can destroy the ones that never return. */
export function trackClients(pool: pg.Pool): Set<pg.Client> {
  const clients = new Set<pg.Client>();
  pool.on("connect", (client) => clients.add(client as unknown as pg.Client));
  pool.on("remove", (client) => clients.delete(client as unknown as pg.Client));
  return clients;
}

/**
 * Ends a pool in bounded time: gives busy clients `graceMs` to come back, then destroys every
 * client still open (a statement on a silent connection would keep `pool.end()` waiting).
 */
export async function endPool(pool: pg.Pool, clients: Set<pg.Client>, graceMs: number): Promise<void> {
  const ended = pool.end().catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), graceMs);
  });
  try {
    if ((await Promise.race([ended, late])) !== "late") return;
    for (const client of clients) destroyClient(client);
    // Each destroyed client fails its statement; its holder releases it and the pool ends.
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
  } finally {
    clearTimeout(timer);
  }
}

/** Statements that get SLOW_MS (see there) or no limit instead of the lease-sized one. */
const SLOW_STATEMENTS = new Set([
  "INSERT_NEW_JOBS",
  "INSERT_JOBS",
  "INSERT_NEW_TRACED_JOBS",
  "INSERT_TRACED_JOBS",
  "SELECT_JOBS_BY_KEYS",
  "LIST_JOBS",
  "LIST_DEAD_JOBS",
  "STATS",
  "COMPACT_COUNTS",
  "THROUGHPUT_BUCKETS",
  "THROUGHPUT_SCAN",
  "TABLES_TO_VACUUM",
  "RETRY_JOBS",
  "DISCARD_JOBS",
  "PRUNE_COMPLETED",
  "PRUNE_FAILED",
  "PRUNE_GLOBAL_LEDGER",
]);
const UNBOUNDED_STATEMENTS = new Set(["MIGRATE_LOCK", "VACUUM_JOBS", "VACUUM_JOB_COUNT_DELTAS"]);

/** The client-side timeout of a named statement (queries.ts). */
export function statementTimeout(name: string, limits: ConnectionLimits): number {
  if (UNBOUNDED_STATEMENTS.has(name)) return UNBOUNDED_MS;
  if (SLOW_STATEMENTS.has(name)) return SLOW_MS;
  return limits.queryMs;
}

/**
 * Runs `fn` in a transaction on one pool client, BEGIN carrying the server-side limits
 * (`statementMs`: statement_timeout; 0 = none). A client whose connection broke or went silent
 * is destroyed rather than returned to the pool; on a silent one no ROLLBACK is tried (it would
 * wait in vain: the server rolls back when it ends the idle transaction).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  limits: ConnectionLimits,
  statementMs: number,
  onError: (err: Error) => void,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no error listener of the pool's: keep the process alive if its
  // connection dies between our statements.
  client.on("error", onError);
  let broken: Error | undefined;
  try {
    await client.query(timed({ text: beginStatement(limits, statementMs) }, limits.queryMs));
    const value = await fn(client);
    await client.query(timed({ text: "COMMIT" }, limits.queryMs));
    return value;
  } catch (err) {
    if (isReadTimeout(err)) {
      broken = err as Error;
      destroyClient(client);
    } else {
      try {
        await client.query(timed({ text: "ROLLBACK" }, limits.queryMs));
      } catch (rollbackErr) {
        broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
        if (isReadTimeout(rollbackErr)) destroyClient(client);
      }
    }
    throw err;
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

/** What errand's statements run on: the pool, or one client. */
export interface Queryable {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
}

/**
 * What Postgres aborts a statement for when another transaction holds what it needs, nothing of
 * it kept: a deadlock broken (40P01), a serialization failure (40001: a pool the application
 * passed in whose default isolation is stricter), a lock wait past a role's lock_timeout (55P03:
 * two processes enqueueing one key under lock_timeout 10ms).
 */
const ABORTED_BY_OTHERS = new Set(["40P01", "40001", "55P03"]);

/** Runs `fn` again (up to 5 times, 5 ms doubling between) when Postgres aborted it for another transaction. */
export async function retryWhenAborted<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!ABORTED_BY_OTHERS.has((err as { code?: string }).code ?? "") || attempt >= 5) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5 * 2 ** (attempt - 1) * (0.5 + Math.random())));
    }
  }
}

/** The caller's transaction handle must be a connected node-postgres client, not a pool. */
export function asClient(tx: unknown): Queryable {
  if (typeof tx !== "object" || tx === null || typeof (tx as { query?: unknown }).query !== "function") {
    throw new ValidationError(
      `tx must be a node-postgres client inside the caller's transaction (a pg.Client, or a client from pool.connect() after BEGIN); got ${tx === null ? "null" : typeof tx === "object" ? (tx.constructor?.name ?? "an object") + " without a query() method" : typeof tx}`,
    );
  }
  if ("totalCount" in tx && "idleCount" in tx) {
    throw new ValidationError(
      "tx is a pg.Pool: each statement on a pool may run on another connection, outside your transaction. Pass the client from `const client = await pool.connect(); await client.query('BEGIN')`",
    );
  }
  return tx as Queryable;
}
