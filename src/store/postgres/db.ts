/**
 * How the store's operations reach the database: each statement of queries.ts by name, bound
 * to the store's schema, with its timeout (connection.ts), hot ones as prepared statements; and
 * transactions. The operation files (insert.ts, reads.ts, leases.ts, …) take a `Db` and run
 * their statements through it.
 */
import pg from "pg";
import {
  type ConnectionLimits,
  inTransaction,
  isReadTimeout,
  type Queryable,
  SilentConnectionError,
  statementTimeout,
  timed,
} from "./connection.js";
import * as Q from "./queries.js";

export type QueryName = { [K in keyof typeof Q]: (typeof Q)[K] extends string ? K : never }[keyof typeof Q];

/**
 * Hot statements run as named prepared statements (parsed and planned once per connection).
 * The others run unnamed: planned with their actual parameters each time, which lets Postgres
 * fold away the filters passed as NULL (LIST_JOBS, RETRY_JOBS, DISCARD_JOBS).
 */
const PREPARED = new Set<QueryName>([
  "SELECT_NOW",
  "INSERT_NEW_JOBS",
  "INSERT_JOBS",
  "INSERT_NEW_TRACED_JOBS",
  "INSERT_TRACED_JOBS",
  "SELECT_JOB",
  "CLAIM_JOBS",
  "QUEUE_IS_PAUSED",
  "EXTEND_LEASES",
  "FINISH_JOBS",
  "FINISH_COMPLETED",
  "LOCK_HELD_JOB",
  "SET_PROGRESS",
  "RESCUE_EXPIRED",
  "NEXT_RUN_AT",
  "LEDGER_GET",
  "LEDGER_PUT",
  "HEARTBEAT_WORKER",
  "COMPACT_COUNTS",
  "STATS",
  "FLOW_CLAIM",
  "FINISH_COMPLETED_FREEING",
  "FINISH_JOBS_FREEING",
]);

/** Thrown inside a transaction to roll it back without an error reaching the caller. */
export class Rollback {}

export interface Db {
  readonly pool: pg.Pool;
  readonly schema: string;
  /** Every statement's text, bound to the schema. */
  readonly sql: Readonly<Record<QueryName, string>>;
  /** The store's current timeouts (they shrink when a worker with a shorter lease uses it). */
  limits(): ConnectionLimits;
  /** Background errors, to the store's onError. */
  report(err: unknown): void;
  /**
   * The parser of jsonb text a statement's result was read with (the claim's payloads arrive as
   * text and go through it, as a jsonb column would).
   */
  jsonbParser(result: pg.QueryResult): (text: string) => unknown;
  /** Runs one statement on the pool (or `on`), prepared when it is a hot one and `prepared`. */
  run(name: QueryName, values?: unknown[], on?: Queryable, prepared?: boolean): Promise<pg.QueryResult>;
  /**
   * Runs `fn` in a transaction with server-side limits (connection.ts inTransaction):
   * `statementMs` is its statement_timeout. `Rollback` thrown by `fn` rolls back and returns it.
   */
  transaction<T>(
    fn: (client: pg.PoolClient) => Promise<T>,
    statementMs?: number,
  ): Promise<T | typeof Rollback>;
}

function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(36);
}

/**
 * With a test clock, the database clock in `text` becomes `coalesce($n, statement_timestamp())`,
 * `$n` one past the statement's last parameter (River's `coalesce(@now, now())`). Returns the
 * text and n, or n = 0 when the statement does not read the clock.
 */
export function withTestClock(text: string): { text: string; param: number } {
  if (!text.includes(Q.NOW)) return { text, param: 0 };
  let last = 0;
  for (const m of text.matchAll(/\$(\d+)/g)) last = Math.max(last, Number(m[1]));
  const param = last + 1;
  return { text: text.replaceAll(Q.NOW, `coalesce($${param}::timestamptz, ${Q.NOW})`), param };
}

/**
 * The statements that run once per finish batch read each job's int8 id as the text Postgres
 * sent. node-postgres's int8 parser evaluates a regex literal per value (a new RegExp object
 * each time): one per job in the finish's rows (bench/NOTES.md finding 17 measured 6% of what
 * the worker allocated per no-op job for the claim's and the finish's together; the claim's ids
 * now come in one text array, claim-arrays.ts). leases.ts takes the id with String() either
 * way; every other type is parsed as the pool would.
 */
const HOT_ROWS = new Set<QueryName>(["FINISH_COMPLETED", "FINISH_COMPLETED_FREEING"]);
const INT8 = 20;
const asText = (value: string): string => value;

type TypeParsers = { getTypeParser(oid: number, format?: string): unknown };
const ownParsers = (pool: pg.Pool) => (pool as { options?: { types?: TypeParsers } }).options?.types;
const JSONB = 3802;

/** The pool's own type parsers (a pool passed in may carry some), with int8 as text. */
function int8AsText(pool: pg.Pool): TypeParsers {
  const own = ownParsers(pool);
  return {
    getTypeParser: (oid: number, format?: string) =>
      oid === INT8 && format !== "binary"
        ? asText
        : own
          ? own.getTypeParser(oid, format)
          : pg.types.getTypeParser(oid, format as "text"),
  };
}

export function createDb(options: {
  pool: pg.Pool;
  schema: string;
  limits: () => ConnectionLimits;
  report: (err: unknown) => void;
  /**
   * A test clock (ms since the epoch) for every statement's "now". Without one — always in
   * production — the statements are the plain ones, byte for byte: same plans, same speed.
   */
  clock?: () => number;
}): Db {
  const { pool, schema, limits, report, clock } = options;
  const hotTypes = int8AsText(pool);
  const sql = {} as Record<QueryName, string>;
  const names: Record<string, string> = {};
  /** With a test clock: the parameter each clock-reading statement takes it in. */
  const clockParam: Partial<Record<QueryName, number>> = {};
  for (const [name, value] of Object.entries(Q)) {
    if (typeof value !== "string") continue;
    let text = Q.bindSchema(value, schema);
    // The migration statements run outside `run` (migrate.ts), and their DDL's defaults stay the database's.
    if (clock && !name.startsWith("MIGRATE_")) {
      const clocked = withTestClock(text);
      text = clocked.text;
      if (clocked.param > 0) clockParam[name as QueryName] = clocked.param;
    }
    sql[name as QueryName] = text;
    // Named per text: two stores (schemas, errand versions) sharing a connection never clash.
    if (PREPARED.has(name as QueryName)) names[name] = `errand_${fnv1a(text)}_${name.toLowerCase()}`;
  }

  /** A statement past its timeout becomes a SilentConnectionError, reported once (a warning). */
  const silent = (err: unknown, what: string, ms: number): unknown => {
    if (!isReadTimeout(err) || err instanceof SilentConnectionError) return err;
    const error = new SilentConnectionError(what, ms);
    report(error);
    return error;
  };

  return {
    pool,
    schema,
    sql,
    limits,
    report,
    jsonbParser(result) {
      // node-postgres's Result keeps the types its query ran with: a pool's own, a client's
      // setTypeParser, or the global ones of the pg the pool was made with (not always this
      // package's copy). Absent (another driver's result), the pool's or this package's.
      const types = (result as { _types?: TypeParsers })._types ?? ownParsers(pool) ?? pg.types;
      return types.getTypeParser(JSONB, "text") as (text: string) => unknown;
    },
    async run(name, values = [], on = pool, prepared = true) {
      const param = clockParam[name];
      if (param !== undefined && clock) {
        values = [...values];
        while (values.length < param - 1) values.push(null);
        values[param - 1] = new Date(clock());
      }
      const statement = prepared ? names[name] : undefined;
      const query_timeout = statementTimeout(name, limits());
      const config: pg.QueryConfig = statement
        ? { name: statement, text: sql[name], values }
        : { text: sql[name], values };
      if (HOT_ROWS.has(name)) config.types = hotTypes as pg.CustomTypesConfig;
      try {
        return await on.query(timed(config, query_timeout));
      } catch (err) {
        throw silent(err, name, query_timeout);
      }
    },
    async transaction(fn, statementMs = limits().statementMs) {
      try {
        return await inTransaction(pool, limits(), statementMs, report, fn);
      } catch (err) {
        if (err instanceof Rollback) return Rollback;
        throw silent(err, "a transaction's statement", limits().queryMs);
      }
    },
  };
}
