/**
 * The PostgreSQL store: production mode, any number of worker processes on any number of hosts
 * against one database, no coordinator. Behaves exactly as the memory store (the reference);
 * test/conformance/ holds it to that. All SQL is in queries.ts, the schema in migrations.ts.
 *
 * How it stays fast and safe under many workers:
 * - claimJobs is one statement: `FOR UPDATE SKIP LOCKED` over a partial index of pending jobs in
 *   claim order, so concurrent claimers never wait on each other nor take the same job, and the
 *   index never holds the millions of finished rows.
 * - finishJobs and extendLeases are one statement per batch (`unnest` of arrays), each outcome
 *   fenced by its lease token: a worker that lost its lease cannot overwrite the job's new life.
 * - Leases, due times and retention use the database clock (`statement_timestamp()`).
 * - Inserts are bulk statements of up to 5,000 rows (insert.ts); idempotency keys are a unique
 *   partial index.
 * - LISTEN/NOTIFY wakes idle workers (notifier.ts); polling remains the safety net.
 * - The pool survives killed connections and server restarts: a broken client is dropped, the
 *   next query opens a new one; a method whose connection died throws (the worker backs off and
 *   retries). Idle-client errors never crash the process. A silent connection (no answer at
 *   all) is bounded by timeouts sized from the lease (connection.ts).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import { ValidationError } from "../../errors.js";
import type { JobRecord } from "../../job.js";
import { decodeCursor, emptyStats, encodeCursor, newJobRecord } from "../shared.js";
import type {
  ClaimedJob,
  InsertResult,
  JobFilter,
  JobPage,
  Lease,
  LeaseStatus,
  NewJob,
  Outcome,
  OutcomeKind,
  QueueStats,
  RescuedJob,
  ScheduleInput,
  ScheduleRecord,
  Store,
  ThroughputBucket,
  TxHandle,
  WorkerInfo,
} from "../types.js";
import {
  asClient,
  type ConnectionLimits,
  createPool,
  DEFAULT_LEASE_MS,
  endPool,
  inTransaction,
  isReadTimeout,
  limitsForLease,
  listenClientConfig,
  type Queryable,
  retryOnDeadlock,
  SilentConnectionError,
  SLOW_MS,
  statementTimeout,
  timed,
  trackClients,
  UNBOUNDED_MS,
} from "./connection.js";
import { insertChunks, insertValues } from "./insert.js";
import { LATEST_VERSION, MIGRATIONS } from "./migrations.js";
import { Notifier } from "./notifier.js";
import * as Q from "./queries.js";
import {
  compareIds,
  isJobId,
  type Row,
  toClaimed,
  toDate,
  toDateOrNull,
  toJob,
  toSchedule,
  toWorker,
} from "./rows.js";

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
}

/** Dead rows in job_count_deltas (a row per writing statement, folded away by stats()) before a vacuum. */
const VACUUM_DELTA_ROWS = 10_000;

/** Rows per rescue / prune statement: short statements, few row locks held at once. */
const RESCUE_BATCH = 1_000;
const PRUNE_BATCH = 10_000;

type QueryName = { [K in keyof typeof Q]: (typeof Q)[K] extends string ? K : never }[keyof typeof Q];

/**
 * Hot statements run as named prepared statements (parsed and planned once per connection).
 * The others run unnamed: planned with their actual parameters each time, which lets Postgres
 * fold away the filters passed as NULL (LIST_JOBS, RETRY_JOBS, DISCARD_JOBS).
 */
const PREPARED = new Set<QueryName>([
  "SELECT_NOW",
  "INSERT_NEW_JOBS",
  "INSERT_JOBS",
  "SELECT_JOB",
  "CLAIM_JOBS",
  "EXTEND_LEASES",
  "FINISH_JOBS",
  "LOCK_HELD_JOB",
  "SET_PROGRESS",
  "RESCUE_EXPIRED",
  "NEXT_RUN_AT",
  "LEDGER_GET",
  "LEDGER_PUT",
  "HEARTBEAT_WORKER",
  "COMPACT_COUNTS",
  "STATS",
]);

const OUTCOME_KINDS = new Set<OutcomeKind>([
  "completed",
  "retry",
  "failed",
  "snoozed",
  "released",
  "cancelled",
]);

/** Thrown inside a transaction to roll it back without an error reaching the caller. */
class Rollback {}

function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(36);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function serialize(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new ValidationError(`${what} is not JSON-serializable: ${errorMessage(err)}`);
  }
  text ??= "null";
  // jsonb cannot hold the NUL character: fail with a clear message instead of a driver error.
  // A real NUL is JSON.stringify's escape \u0000 after an even number of backslashes; after an
  // odd number it is the text "\u0000" (a backslash, then "u0000"), which jsonb stores fine.
  if (/(?:^|[^\\])(?:\\\\)*\\u0000/.test(text))
    throw new ValidationError(
      `${what} contains a NUL character (\\u0000), which PostgreSQL jsonb cannot store`,
    );
  return text;
}

/**
 * The leases that can name a row, in id order: statements over several rows lock them in the
 * same order, so two of them cannot deadlock.
 */
function validLeases(leases: Lease[]): Lease[] {
  return leases
    .filter((l) => isJobId(l.id) && Number.isInteger(l.leaseToken))
    .sort((a, b) => compareIds(a.id, b.id));
}

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  readonly schema: string;
  readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly sql: Record<QueryName, string>;
  private readonly names: Record<string, string>;
  private readonly notifier: Notifier;
  private readonly onError?: (err: Error) => void;
  private readonly poolErrorHandler = (err: Error) => this.report(err);
  /**
   * The client of the completeInTransaction running in this async context: ledger reads and
   * writes made from its `fn` (ctx.once) join that transaction, so a ledger entry commits or
   * rolls back with the effect it records and the completion (as on SQLite).
   */
  private readonly txClient = new AsyncLocalStorage<pg.PoolClient>();
  private closed = false;
  private readonly vacuumDeadRows: number;
  /** The connection of a running upkeep vacuum: close() drops it rather than wait (a vacuum can take a minute). */
  private vacuumClient: pg.PoolClient | null = null;
  /** Timeouts, from the lease of the workers using this store (useLease) or the default lease. */
  private limits: ConnectionLimits = limitsForLease(DEFAULT_LEASE_MS);
  private leaseMs: number | null = null;
  /** The clients of an owned pool, so close() can destroy silent ones (connection.ts endPool). */
  private readonly clients: Set<pg.Client>;

  constructor(options: PostgresStoreOptions) {
    const schema = options.schema ?? "errand";
    if (typeof schema !== "string" || !Q.SCHEMA_NAME_PATTERN.test(schema) || /^pg_/i.test(schema)) {
      throw new ValidationError(
        `invalid Postgres schema name ${JSON.stringify(schema)}: use 1-50 letters, digits or "_", starting with a letter or "_" (and not "pg_")`,
      );
    }
    if (!options.pool && (typeof options.url !== "string" || options.url === "")) {
      throw new ValidationError("openPostgresStore needs a url (postgres://…) or a pool");
    }
    if (options.poolSize !== undefined && (!Number.isInteger(options.poolSize) || options.poolSize < 1)) {
      throw new ValidationError(
        `poolSize must be a positive integer; got ${JSON.stringify(options.poolSize)}`,
      );
    }
    if (
      options.vacuumDeadRows !== undefined &&
      (!Number.isInteger(options.vacuumDeadRows) || options.vacuumDeadRows < 0)
    ) {
      throw new ValidationError(
        `vacuumDeadRows must be a non-negative integer (0 turns it off); got ${JSON.stringify(options.vacuumDeadRows)}`,
      );
    }
    this.schema = schema;
    this.onError = options.onError;
    this.vacuumDeadRows = options.vacuumDeadRows ?? 100_000;
    this.ownsPool = !options.pool;
    this.pool =
      options.pool ??
      createPool({ url: options.url as string, schema, max: options.poolSize ?? 10, limits: this.limits });
    this.clients = this.ownsPool ? trackClients(this.pool) : new Set();
    // An idle client whose connection dies (restart, pg_terminate_backend) emits 'error' on the
    // pool; without a handler that would crash the process. The pool drops the client itself.
    this.pool.on("error", this.poolErrorHandler);

    const sql = {} as Record<QueryName, string>;
    const names: Record<string, string> = {};
    for (const [name, value] of Object.entries(Q)) {
      if (typeof value !== "string") continue;
      const text = Q.bindSchema(value, schema);
      sql[name as QueryName] = text;
      // Named per text: two stores (schemas, errand versions) sharing a connection never clash.
      if (PREPARED.has(name as QueryName)) names[name] = `errand_${fnv1a(text)}_${name.toLowerCase()}`;
    }
    this.sql = sql;
    this.names = names;

    const url = options.url;
    const poolOptions = (this.pool as unknown as { options?: pg.ClientConfig }).options ?? {};
    this.notifier = new Notifier({
      channel: Q.channelName(schema),
      onError: (err) => this.report(err),
      createClient: () =>
        new pg.Client(listenClientConfig(url ? { connectionString: url } : poolOptions, schema, this.limits)),
      // A silent LISTEN connection delivers nothing and says nothing: a check every lease finds it.
      checkEveryMs: () => this.limits.statementMs,
      onSilent: (ms) => this.report(new SilentConnectionError("the LISTEN connection's check", ms)),
    });
  }

  private report(err: unknown): void {
    try {
      this.onError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // a reporter that throws must not crash a connection handler
    }
  }

  // ── plumbing ────────────────────────────────────────────────────────────────────────────

  private async run(
    name: QueryName,
    values: unknown[] = [],
    on: Queryable = this.pool,
    prepared = true,
  ): Promise<pg.QueryResult> {
    const statement = prepared ? this.names[name] : undefined;
    const query_timeout = statementTimeout(name, this.limits);
    try {
      return await on.query(
        timed(
          statement ? { name: statement, text: this.sql[name], values } : { text: this.sql[name], values },
          query_timeout,
        ),
      );
    } catch (err) {
      throw this.silent(err, name, query_timeout);
    }
  }

  /** A statement past its timeout becomes a SilentConnectionError, reported once (a warning). */
  private silent(err: unknown, what: string, ms: number): unknown {
    if (!isReadTimeout(err) || err instanceof SilentConnectionError) return err;
    const silent = new SilentConnectionError(what, ms);
    this.report(silent);
    return silent;
  }

  /**
   * Runs `fn` in a transaction with server-side limits (connection.ts inTransaction):
   * `statementMs` is its statement_timeout. `Rollback` thrown by `fn` rolls back and returns it.
   */
  private async transaction<T>(
    fn: (client: pg.PoolClient) => Promise<T>,
    statementMs = this.limits.statementMs,
  ): Promise<T | typeof Rollback> {
    try {
      return await inTransaction(this.pool, this.limits, statementMs, (err) => this.report(err), fn);
    } catch (err) {
      if (err instanceof Rollback) return Rollback;
      throw this.silent(err, "a transaction's statement", this.limits.queryMs);
    }
  }

  /**
   * Sizes the connection timeouts from a worker's lease (the shortest, when several workers
   * share the store): a connection silent for a lease is dropped. Called by the worker at start.
   */
  useLease(leaseMs: number): void {
    if (!(leaseMs > 0) || (this.leaseMs !== null && leaseMs >= this.leaseMs)) return;
    this.leaseMs = leaseMs;
    this.limits = limitsForLease(leaseMs);
    // Connections opened from now on; the statements errand sends name their timeout anyway.
    if (this.ownsPool)
      Object.assign(this.pool.options, {
        query_timeout: this.limits.queryMs,
        connectionTimeoutMillis: this.limits.connectMs,
      });
  }

  /** Runs notifications for in-process listeners when the LISTEN connection was not yet (or no longer) up. */
  private notifyLocally(queues: Iterable<string>): void {
    for (const queue of new Set(queues)) queueMicrotask(() => this.notifier.emit(queue));
  }

  // ── lifecycle ───────────────────────────────────────────────────────────────────────────

  async migrate(options: { mustExist?: boolean } = {}): Promise<void> {
    // Fast path: a schema already at this version needs no lock (many processes start at once).
    const current = await this.appliedMigrations(this.pool).catch(() => null);
    if (options.mustExist && current === null && (await this.appliedMigrations(this.pool)) === null) {
      throw new ValidationError(
        `no errand schema "${this.schema}" in this database: check --schema, or create it with \`errand migrate\``,
      );
    }
    if (current && MIGRATIONS.every((m) => current.has(m.version))) {
      this.checkNewer(current);
      return;
    }
    // No statement_timeout: a migration may rewrite a big table (connection.ts UNBOUNDED_MS).
    await this.transaction(async (client) => {
      await client.query(
        timed({ text: this.sql.MIGRATE_LOCK, values: [`errand.migrate:${this.schema}`] }, UNBOUNDED_MS),
      );
      await client.query(this.sql.MIGRATE_CREATE_SCHEMA);
      await client.query(this.sql.MIGRATE_CREATE_TABLE);
      const applied = (await this.appliedMigrations(client)) ?? new Map<number, boolean>();
      this.checkNewer(applied);
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        await client.query(timed({ text: Q.bindSchema(migration.sql, this.schema) }, UNBOUNDED_MS));
        await client.query({
          text: this.sql.MIGRATE_RECORD,
          values: [migration.version, migration.name, migration.breaking ?? false],
        });
      }
    }, 0);
  }

  /** Applied versions (version → breaking), or null when the migrations table does not exist yet. */
  private async appliedMigrations(on: Queryable): Promise<Map<number, boolean> | null> {
    try {
      const { rows } = await on.query({ text: this.sql.MIGRATE_VERSIONS });
      return new Map(rows.map((r: Row) => [Number(r.version), Boolean(r.breaking)]));
    } catch (err) {
      if ((err as { code?: string }).code === "42P01" || (err as { code?: string }).code === "3F000")
        return null;
      throw err;
    }
  }

  private checkNewer(applied: Map<number, boolean>): void {
    const breaking = [...applied].filter(([version, isBreaking]) => version > LATEST_VERSION && isBreaking);
    if (breaking.length > 0) {
      throw new ValidationError(
        `schema "${this.schema}" has migration ${breaking.map(([v]) => v).join(", ")} applied, which this version of errand (schema version ${LATEST_VERSION}) cannot work with: upgrade errand`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const vacuuming = this.vacuumClient;
    this.vacuumClient = null;
    vacuuming?.release(new Error("store closed during vacuum"));
    await this.notifier.close();
    // Bounded: statements on silent connections get a query timeout to come back, then are destroyed.
    if (this.ownsPool) await endPool(this.pool, this.clients, this.limits.queryMs);
    else this.pool.off("error", this.poolErrorHandler);
  }

  /**
   * Vacuums jobs (and job_count_deltas) once their dead rows pass the threshold. Without it, on
   * a server with autovacuum off (or throttled behind the churn), a 5,000,000-job soak fell from
   * 18,000 to 1,500 jobs/s: the pending index held millions of dead entries in front of the
   * live ones, and each claim read through them from disk. Many workers may call this at once:
   * one that finds a vacuum running skips it.
   */
  async upkeep(): Promise<void> {
    if (this.vacuumDeadRows === 0 || this.closed) return;
    const { rows } = await this.run("TABLES_TO_VACUUM", [this.vacuumDeadRows, VACUUM_DELTA_ROWS]);
    for (const row of rows as Array<{ table: string }>) {
      if (this.closed) return;
      const client = await this.pool.connect();
      const onClientError = (err: Error) => this.report(err);
      client.on("error", onClientError);
      this.vacuumClient = client;
      try {
        await this.run(row.table === "jobs" ? "VACUUM_JOBS" : "VACUUM_JOB_COUNT_DELTAS", [], client, false);
      } catch (err) {
        if (this.closed) return; // close() dropped the connection on purpose
        throw err;
      } finally {
        client.off("error", onClientError);
        // close() released it already when it dropped the vacuum's connection.
        if (this.vacuumClient === client) {
          this.vacuumClient = null;
          client.release();
        }
      }
    }
  }

  async now(): Promise<Date> {
    const { rows } = await this.run("SELECT_NOW");
    return toDate(rows[0].now);
  }

  /** Resolves once the LISTEN connection is up (for tests that need a NOTIFY to arrive). */
  whenListening(): Promise<void> {
    return this.notifier.whenListening();
  }

  onJobsAvailable(listener: (queue: string | null) => void): () => void {
    if (this.closed) return () => {};
    return this.notifier.subscribe(listener);
  }

  // ── insert and read ─────────────────────────────────────────────────────────────────────

  async insertJobs(jobs: NewJob[], tx?: TxHandle): Promise<InsertResult[]> {
    const client = tx === undefined || tx === null ? null : asClient(tx);
    if (jobs.length === 0) return [];
    const payloads = new Array<string>(jobs.length);
    for (let i = 0; i < jobs.length; i++) {
      payloads[i] =
        jobs[i].payloadJson ?? serialize(jobs[i].payload, jobs.length === 1 ? "payload" : `job ${i} payload`);
    }
    const chunks = insertChunks(payloads);
    const wasListening = this.notifier.isListening;
    let results: InsertResult[];
    if (client) {
      // The caller's transaction, and nothing else: the jobs exist iff the caller commits.
      results = await this.insertOn(client, jobs, payloads, chunks, false);
    } else {
      // Several chunks can still deadlock with another multi-chunk insert of the same keys in
      // another order (each statement is ordered, the transaction is not): Postgres aborts one,
      // which is retried here, as nothing of it was stored.
      results = await retryOnDeadlock(async () =>
        chunks.length === 1
          ? this.insertOn(this.pool, jobs, payloads, chunks, true)
          : ((await this.transaction(
              (c) => this.insertOn(c, jobs, payloads, chunks, true),
              SLOW_MS,
            )) as InsertResult[]),
      );
    }
    if (!wasListening && this.notifier.size > 0) {
      this.notifyLocally(results.filter((r) => r.created).map((r) => r.job.queue));
    }
    return results;
  }

  private async insertOn(
    on: Queryable,
    jobs: NewJob[],
    payloads: string[],
    chunks: number[][],
    prepared: boolean,
  ): Promise<InsertResult[]> {
    const results: Array<InsertResult | undefined> = new Array(jobs.length);
    // A key whose existing job is deleted between our insert and our read (pruned, discarded)
    // is inserted again; a few rounds settle any real race.
    for (let round = 0; round < 5 && chunks.length > 0; round++) {
      // Each statement is queued before the previous one's rows are turned into records, so
      // the connection sends it the moment the previous one completes: the server inserts the
      // next chunk while this process builds the records of the last one.
      const send = (chunk: number[]) => {
        const keyed = chunk.some((i) => jobs[i].key !== undefined && jobs[i].key !== null);
        const sent = this.run(
          keyed ? "INSERT_JOBS" : "INSERT_NEW_JOBS",
          insertValues(jobs, payloads, chunk, keyed),
          on,
          prepared,
        );
        sent.catch(() => {}); // awaited below, unless an earlier statement failed
        return { chunk, keyed, sent };
      };
      let next = send(chunks[0]);
      for (let c = 0; c < chunks.length; c++) {
        const { chunk, keyed, sent } = next;
        if (c + 1 < chunks.length) next = send(chunks[c + 1]);
        const { rows } = await sent;
        const now = Number(rows[0]?.now_ms);
        if (keyed) {
          for (const row of rows) {
            const i = chunk[Number(row.ord) - 1];
            results[i] = { job: this.newJobRecord(jobs[i], payloads[i], String(row.id), now), created: true };
          }
        } else {
          const ids = (rows[0].ids as string).split(",");
          for (let r = 0; r < chunk.length; r++) {
            const i = chunk[r];
            results[i] = { job: this.newJobRecord(jobs[i], payloads[i], ids[r], now), created: true };
          }
        }
      }
      const missing = chunks.flat().filter((i) => results[i] === undefined);
      if (missing.length === 0) break;
      // Duplicates of (queue, key): read the existing jobs in a new statement (a fresh snapshot
      // sees the concurrent insert that our ON CONFLICT waited for).
      const pairs = new Map<string, { queue: string; key: string }>();
      for (const i of missing) {
        const { queue, key } = jobs[i];
        pairs.set(`${queue}\u0000${key}`, { queue, key: key as string });
      }
      const { rows } = await this.run(
        "SELECT_JOBS_BY_KEYS",
        [[...pairs.values()].map((p) => p.queue), [...pairs.values()].map((p) => p.key)],
        on,
        false,
      );
      const existing = new Map(rows.map((r: Row) => [`${r.queue}\u0000${r.key}`, toJob(r)]));
      for (const i of missing) {
        const job = existing.get(`${jobs[i].queue}\u0000${jobs[i].key}`);
        if (job) results[i] = { job: i === missing[0] ? job : structuredClone(job), created: false };
      }
      chunks = insertChunks(
        payloads,
        missing.filter((i) => results[i] === undefined),
      );
    }
    // Positions still without a result after the last round (`results` has holes: no reduce).
    const lost = chunks.flat().filter((i) => results[i] === undefined).length;
    if (lost > 0)
      throw new Error(`could not insert or find ${lost} job(s) with an idempotency key; try again`);
    return results as InsertResult[];
  }

  private newJobRecord(input: NewJob, payloadText: string, id: string, now: number): JobRecord {
    // The database's run_at is now + delay at microsecond precision; as a Date (ms) it is exactly this.
    const runAt = input.runAt ? new Date(input.runAt) : new Date(now + (input.delayMs ?? 0));
    // With payloadJson, the caller handed its parsed payload over: no need to parse a copy.
    const payload = input.payloadJson === undefined ? JSON.parse(payloadText) : input.payload;
    return newJobRecord(id, input, payload, runAt, new Date(now));
  }

  async getJob(id: string): Promise<JobRecord | null> {
    if (!isJobId(String(id))) return null;
    const { rows } = await this.run("SELECT_JOB", [String(id)]);
    return rows.length > 0 ? toJob(rows[0]) : null;
  }

  async listJobs(filter: JobFilter): Promise<JobPage> {
    const limit = filter.limit ?? 50;
    const before = decodeCursor(filter.cursor);
    if (!Number.isInteger(limit) || limit < 1) return { jobs: [], nextCursor: null };
    const cursor = before === null ? null : String(before);
    const dead =
      (filter.state === "failed" || filter.state === "cancelled") && !filter.name && !filter.search;
    const { rows } = dead
      ? await this.run(
          "LIST_DEAD_JOBS",
          [filter.queue || null, filter.state, cursor, limit + 1],
          this.pool,
          false,
        )
      : await this.run(
          "LIST_JOBS",
          [
            filter.queue || null,
            filter.state || null,
            filter.name || null,
            cursor,
            filter.search || null,
            limit + 1,
          ],
          this.pool,
          false,
        );
    const page = rows.slice(0, limit).map(toJob);
    const nextCursor = rows.length > limit ? encodeCursor(page[page.length - 1].id) : null;
    return { jobs: page, nextCursor };
  }

  /** Folds the counters' deltas (one process at a time; the others skip). */
  private async compactCounts(): Promise<void> {
    await this.run("COMPACT_COUNTS", [`errand.counts:${this.schema}`]);
  }

  /** Runs read queries in one transaction without JIT (queries.ts NO_JIT). */
  private async withoutJit<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return (await this.transaction(async (client) => {
      await client.query(this.sql.NO_JIT);
      return fn(client);
    }, SLOW_MS)) as T;
  }

  async stats(): Promise<QueueStats[]> {
    await this.compactCounts();
    const { rows } = await this.withoutJit((client) => this.run("STATS", [], client));
    const byQueue = new Map<string, QueueStats>();
    for (const r of rows) {
      const queue = r.queue as string;
      let s = byQueue.get(queue);
      if (!s) {
        s = emptyStats(queue);
        byQueue.set(queue, s);
      }
      const n = Number(r.n);
      switch (r.state) {
        case "pending":
          // n counts every pending job; due ones are those not delayed.
          s.delayed = Number(r.delayed);
          s.pending = n - s.delayed;
          s.oldestPendingMs = r.oldest_ms === null ? null : Math.max(0, Number(r.oldest_ms));
          break;
        case "running":
          s.running = n;
          break;
        case "completed":
          s.completed = n;
          s.completedLastHour = Number(r.last_hour);
          s.completedLastDay = Number(r.last_day);
          break;
        case "failed":
          s.failed = n;
          s.failedLastHour = Number(r.last_hour);
          s.failedLastDay = Number(r.last_day);
          break;
        case "cancelled":
          s.cancelled = n;
          break;
      }
    }
    return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
  }

  async throughput(sinceMs: number, bucketMs: number): Promise<ThroughputBucket[]> {
    if (!(bucketMs > 0)) throw new ValidationError(`bucketMs must be a positive number; got ${bucketMs}`);
    // Whole-minute buckets within the counters' 25 hours come from the counters; others scan.
    const fromCounters = bucketMs % 60_000 === 0 && sinceMs >= 0 && sinceMs <= 24 * 3_600_000;
    if (fromCounters) await this.compactCounts();
    const { rows } = await this.withoutJit((client) =>
      this.run(fromCounters ? "THROUGHPUT_BUCKETS" : "THROUGHPUT_SCAN", [sinceMs, bucketMs], client),
    );
    const buckets = new Map<string, ThroughputBucket>();
    for (const r of rows) {
      const at = Number(r.at);
      const id = `${r.queue}\u0000${at}`;
      let b = buckets.get(id);
      if (!b) {
        b = { at: new Date(at), queue: r.queue as string, completed: 0, failed: 0 };
        buckets.set(id, b);
      }
      if (r.state === "completed") b.completed += Number(r.n);
      else b.failed += Number(r.n);
    }
    return [...buckets.values()].sort(
      (a, b) => a.at.getTime() - b.at.getTime() || a.queue.localeCompare(b.queue),
    );
  }

  // ── claim, lease, finish ────────────────────────────────────────────────────────────────

  async claimJobs(req: {
    queue: string;
    limit: number;
    workerId: string;
    leaseMs: number;
  }): Promise<ClaimedJob[]> {
    const limit = Math.floor(req.limit);
    if (!(limit > 0)) return [];
    const { rows } = await this.run("CLAIM_JOBS", [req.queue, limit, req.workerId, req.leaseMs]);
    return rows.sort((a: Row, b: Row) => Number(a.ord) - Number(b.ord)).map(toClaimed);
  }

  async extendLeases(leases: Lease[], leaseMs: number): Promise<LeaseStatus[]> {
    const valid = validLeases(leases);
    const held = new Map<string, boolean>();
    if (valid.length > 0) {
      const { rows } = await this.run("EXTEND_LEASES", [
        valid.map((l) => l.id),
        valid.map((l) => l.leaseToken),
        leaseMs,
      ]);
      for (const r of rows) held.set(`${r.id}:${r.token}`, Boolean(r.cancel_requested));
    }
    return leases.map((lease) => {
      const cancel = held.get(`${lease.id}:${lease.leaseToken}`);
      return { id: lease.id, held: cancel !== undefined, cancelRequested: cancel ?? false };
    });
  }

  async returnJobs(leases: Lease[]): Promise<number> {
    const valid = validLeases(leases);
    if (valid.length === 0) return 0;
    const wasListening = this.notifier.isListening;
    const { rows } = await this.run("RETURN_JOBS", [valid.map((l) => l.id), valid.map((l) => l.leaseToken)]);
    if (!wasListening && this.notifier.size > 0) {
      this.notifyLocally(rows.filter((r: Row) => r.state === "pending").map((r: Row) => r.queue as string));
    }
    return rows.length;
  }

  async finishJobs(outcomes: Outcome[]): Promise<boolean[]> {
    return this.finishOn(this.pool, outcomes, true);
  }

  /**
   * One statement for the whole batch. The same (id, token) twice is applied once (the first);
   * outcomes go to the database sorted by id, so two batches touching the same rows lock them
   * in the same order and cannot deadlock.
   */
  private async finishOn(on: Queryable, outcomes: Outcome[], prepared: boolean): Promise<boolean[]> {
    const chosen = new Map<string, number>();
    outcomes.forEach((o, i) => {
      if (!OUTCOME_KINDS.has(o.kind))
        throw new ValidationError(`unknown outcome kind ${JSON.stringify(o.kind)}`);
      const pair = `${o.id}:${o.leaseToken}`;
      if (isJobId(o.id) && Number.isInteger(o.leaseToken) && !chosen.has(pair)) chosen.set(pair, i);
    });
    if (chosen.size === 0) return outcomes.map(() => false);
    const batch = [...chosen.values()].map((i) => outcomes[i]).sort((a, b) => compareIds(a.id, b.id));
    const values = [
      batch.map((o) => o.id),
      batch.map((o) => o.leaseToken),
      batch.map((o) => o.kind),
      batch.map((o) => o.delayMs ?? 0),
      batch.map((o) =>
        o.kind === "completed" ? serialize(o.result ?? null, `result of job ${o.id}`) : null,
      ),
      batch.map((o) => o.worker),
      batch.map((o) => (o.error ? String(o.error.message ?? "") : null)),
      batch.map((o) => (o.error?.stack ? String(o.error.stack) : null)),
      batch.map((o) => (o.error ? o.error.kind : null)),
    ];
    const wasListening = this.notifier.isListening;
    const { rows } = await this.run("FINISH_JOBS", values, on, prepared);
    const applied = new Set(rows.map((r: Row) => `${r.id}:${r.token}`));
    if (!wasListening && this.notifier.size > 0) {
      this.notifyLocally(rows.filter((r: Row) => r.state === "pending").map((r: Row) => r.queue as string));
    }
    return outcomes.map(
      (o, i) => chosen.get(`${o.id}:${o.leaseToken}`) === i && applied.has(`${o.id}:${o.leaseToken}`),
    );
  }

  async completeInTransaction<T>(
    lease: Lease,
    worker: string,
    fn: (tx: TxHandle) => Promise<T> | T,
  ): Promise<{ applied: boolean; value?: T }> {
    if (!isJobId(lease.id) || !Number.isInteger(lease.leaseToken)) return { applied: false };
    const result = await this.transaction(async (client) => {
      // The row lock holds the lease for the whole transaction: the rescuer skips the row, a
      // concurrent finish waits. A lease already lost means fn never runs.
      const locked = await this.run("LOCK_HELD_JOB", [lease.id, lease.leaseToken], client);
      if (locked.rowCount === 0) throw new Rollback();
      const value = await this.txClient.run(client, () => fn(client));
      const [applied] = await this.finishOn(
        client,
        [{ ...lease, kind: "completed", result: value, worker }],
        true,
      );
      if (!applied) throw new Rollback();
      return { applied: true, value };
    });
    return result === Rollback ? { applied: false } : (result as { applied: boolean; value?: T });
  }

  async setProgress(lease: Lease, progress: { fraction: number; message?: string }): Promise<boolean> {
    if (!isJobId(lease.id) || !Number.isInteger(lease.leaseToken)) return false;
    const result = await this.run("SET_PROGRESS", [
      lease.id,
      lease.leaseToken,
      serialize({ ...progress }, "progress"),
    ]);
    return (result.rowCount ?? 0) > 0;
  }

  async rescueExpiredLeases(_workerNote?: string): Promise<RescuedJob[]> {
    const rescued: RescuedJob[] = [];
    for (;;) {
      const wasListening = this.notifier.isListening;
      const { rows } = await this.run("RESCUE_EXPIRED", [RESCUE_BATCH]);
      for (const r of rows) {
        rescued.push({
          id: String(r.id),
          queue: r.queue as string,
          name: r.name as string,
          state: r.state as RescuedJob["state"],
          attempt: Number(r.attempt),
        });
      }
      if (!wasListening && this.notifier.size > 0) {
        this.notifyLocally(rows.filter((r: Row) => r.state === "pending").map((r: Row) => r.queue as string));
      }
      if (rows.length < RESCUE_BATCH) break;
    }
    // Every worker runs the rescuer periodically: the counters' deltas stay few between stats() calls.
    await this.compactCounts();
    return rescued;
  }

  async nextRunAt(queues: string[]): Promise<Date | null> {
    if (queues.length === 0) return null;
    const { rows } = await this.run("NEXT_RUN_AT", [queues]);
    return toDateOrNull(rows[0]?.next);
  }

  // ── admin ───────────────────────────────────────────────────────────────────────────────

  async cancelJob(id: string): Promise<JobRecord | null> {
    if (!isJobId(String(id))) return null;
    const { rows } = await this.run("CANCEL_JOB", [String(id)]);
    return rows.length > 0 ? toJob(rows[0]) : null;
  }

  /** ids filter: null = any; an empty or all-invalid list matches nothing. */
  private idFilter(filter: { ids?: string[] }): string[] | null | "none" {
    if (!filter.ids) return null;
    const ids = filter.ids.map(String).filter(isJobId);
    return ids.length > 0 ? ids : "none";
  }

  async retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    const ids = this.idFilter(filter);
    if (ids === "none") return 0;
    const wasListening = this.notifier.isListening;
    const { rows } = await this.run("RETRY_JOBS", [ids, filter.queue ?? null], this.pool, false);
    const n = Number(rows[0]?.n ?? 0);
    if (n > 0 && !wasListening && this.notifier.size > 0)
      this.notifyLocally((rows[0].queues as string[]) ?? []);
    return n;
  }

  async discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    const ids = this.idFilter(filter);
    if (ids === "none") return 0;
    const result = await this.run("DISCARD_JOBS", [ids, filter.queue ?? null], this.pool, false);
    return result.rowCount ?? 0;
  }

  async pruneFinished(req: { completedAgeMs: number; failedAgeMs: number }): Promise<number> {
    let pruned = 0;
    for (const [query, age] of [
      ["PRUNE_COMPLETED", req.completedAgeMs],
      ["PRUNE_FAILED", req.failedAgeMs],
    ] as const) {
      for (;;) {
        const result = await this.run(query, [age, PRUNE_BATCH]);
        const n = result.rowCount ?? 0;
        pruned += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    await this.compactCounts();
    return pruned;
  }

  // ── ledger ──────────────────────────────────────────────────────────────────────────────

  async ledgerGet(key: string): Promise<{ found: boolean; value?: unknown }> {
    const { rows } = await this.run("LEDGER_GET", [key], this.txClient.getStore() ?? this.pool);
    if (rows.length === 0) return { found: false };
    return { found: true, value: rows[0].is_undefined ? undefined : rows[0].value };
  }

  async ledgerPut(key: string, jobId: string, value: unknown): Promise<void> {
    const text = value === undefined ? null : serialize(value, `ledger value for ${JSON.stringify(key)}`);
    await this.run("LEDGER_PUT", [key, String(jobId), text], this.txClient.getStore() ?? this.pool);
  }

  // ── schedules ───────────────────────────────────────────────────────────────────────────

  private scheduleJson(schedules: ScheduleInput[]): string {
    // Last definition of a name wins, as repeated upserts would.
    const byName = new Map(schedules.map((s) => [s.name, s]));
    return serialize(
      [...byName.values()].map((s) => ({
        name: s.name,
        cron: s.cron,
        timezone: s.timezone,
        job_name: s.jobName,
        queue: s.queue,
        payload: s.payload ?? null,
        priority: s.priority,
        missed: s.missed,
        source: s.source,
        next_run_at: new Date(s.nextRunAt).toISOString(),
      })),
      "schedule",
    );
  }

  async syncSchedules(schedules: ScheduleInput[]): Promise<void> {
    await this.transaction(async (client) => {
      await this.run("DELETE_STALE_CODE_SCHEDULES", [schedules.map((s) => s.name)], client, false);
      if (schedules.length > 0)
        await this.run("UPSERT_SCHEDULES", [this.scheduleJson(schedules)], client, false);
    });
  }

  async upsertSchedule(schedule: ScheduleInput): Promise<void> {
    await this.run("UPSERT_SCHEDULES", [this.scheduleJson([schedule])], this.pool, false);
  }

  async removeSchedule(name: string): Promise<boolean> {
    const result = await this.run("REMOVE_SCHEDULE", [name]);
    return (result.rowCount ?? 0) > 0;
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    const { rows } = await this.run("LIST_SCHEDULES");
    return rows.map(toSchedule).sort((a, b) => a.name.localeCompare(b.name));
  }

  async dueSchedules(): Promise<ScheduleRecord[]> {
    const { rows } = await this.run("DUE_SCHEDULES");
    return rows.map(toSchedule).sort((a, b) => a.name.localeCompare(b.name));
  }

  async advanceSchedule(req: {
    name: string;
    expectedNextRunAt: Date;
    nextRunAt: Date;
    lastSlot: Date | null;
  }): Promise<boolean> {
    const result = await this.run("ADVANCE_SCHEDULE", [
      req.name,
      new Date(req.expectedNextRunAt),
      new Date(req.nextRunAt),
      req.lastSlot ? new Date(req.lastSlot) : null,
    ]);
    return (result.rowCount ?? 0) > 0;
  }

  // ── workers ─────────────────────────────────────────────────────────────────────────────

  async registerWorker(info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): Promise<void> {
    await this.run("REGISTER_WORKER", [
      info.id,
      info.host,
      info.pid,
      serialize(info.queues, "worker queues"),
      info.running,
      info.processed,
    ]);
  }

  async heartbeatWorker(id: string, running: number, processed: number): Promise<void> {
    await this.run("HEARTBEAT_WORKER", [id, running, processed]);
  }

  async unregisterWorker(id: string): Promise<void> {
    await this.run("UNREGISTER_WORKER", [id]);
  }

  async listWorkers(staleMs: number): Promise<WorkerInfo[]> {
    const { rows } = await this.run("LIST_WORKERS", [staleMs]);
    return rows.map(toWorker);
  }
}

/** Opens (does not migrate) a PostgreSQL store; call `migrate()` before use. */
export function openPostgresStore(options: PostgresStoreOptions): PostgresStore {
  return new PostgresStore(options);
}
