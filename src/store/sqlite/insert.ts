/**
 * The SQLite store's insert: a batch of jobs in one BEGIN IMMEDIATE transaction on errand's
 * connection (`insertJobs`), or on the application's handle passed as `tx` (`insertJobsNow`:
 * tx.ts checks the handle). Synchronous from start to end: a caller inside better-sqlite3's
 * `db.transaction(() => …)` gets every row in it.
 */
import { ValidationError } from "../../errors.js";
import { newJobRecord } from "../common.js";
import type { InsertResult, NewJob } from "../types.js";
import type { Connection } from "./connection.js";
import { FLOW_SET_KEY } from "./flow-queries.js";
import type { Db, Statements } from "./handle.js";
import {
  INSERT_JOB,
  INSERT_JOB_CHUNK,
  INSERT_JOB_CHUNK_SIZES,
  SELECT_JOB_BY_KEY,
  SET_TRACE_CONTEXT,
} from "./queries.js";
import { type JobRow, jobFromRow, toJson } from "./rows.js";
import { checkTxHandle } from "./tx.js";

/** One BEGIN IMMEDIATE transaction for the batch on errand's own connection. */
export function insertJobs(c: Connection, jobs: NewJob[]): InsertResult[] {
  if (jobs.length === 0) return [];
  return c.db.transaction(() => insertJobsOn(c.db, c.statements, jobs)).immediate();
}

/**
 * The inserts run on `tx` (a better-sqlite3 Database on errand's file, tx.ts) synchronously,
 * inside its open transaction — or, if it has none, in one of their own; any error is thrown,
 * so that an application's `db.transaction(() => …)` rolls back with it.
 */
export function insertJobsNow(c: Connection, jobs: NewJob[], tx: unknown): InsertResult[] {
  const db = checkTxHandle(tx, c.db, c.statements);
  const insert = () => insertJobsOn(db, c.statements, jobs);
  return db.inTransaction ? insert() : db.transaction(insert).immediate();
}

/** Columns bound per row by INSERT_JOB_CHUNK. */
const CHUNK_COLUMNS = 7;
const LARGEST_CHUNK = INSERT_JOB_CHUNK_SIZES[0];

/**
 * Keyless jobs go in chunks of several rows per statement (INSERT_JOB_CHUNK, see queries.ts); a
 * keyed job goes alone, `ON CONFLICT DO NOTHING`, and on a conflict the existing job is returned.
 * Rows are inserted in input order, so ids grow in input order.
 */
export function insertJobsOn(db: Db, statements: Statements, jobs: NewJob[]): InsertResult[] {
  if (jobs.length === 0) return [];
  const now = statements.now(db);
  const results: InsertResult[] = new Array(jobs.length);
  const payloads: string[] = new Array(jobs.length);
  const runAts: number[] = new Array(jobs.length);
  /** One parameter array per chunk size, reused. */
  const params = new Map<number, unknown[]>();
  /** Indexes of keyless jobs not inserted yet (fewer than the largest chunk). */
  const waiting: number[] = [];

  const created = (i: number, id: number, key: string | null): void => {
    const input = jobs[i];
    results[i] = {
      created: true,
      // The payload as getJob will read it back (what the caller handed over with payloadJson);
      // the key as stored (an empty key is no key).
      job: newJobRecord(
        String(id),
        input,
        input.payloadJson === undefined ? JSON.parse(payloads[i]) : input.payload,
        new Date(runAts[i]),
        new Date(now),
        key,
      ),
    };
  };

  const insertOne = (i: number, key: string | null): boolean => {
    const input = jobs[i];
    const info = statements
      .get(db, INSERT_JOB)
      .run(input.queue, input.name, input.priority, input.maxAttempts, runAts[i], payloads[i], key, now);
    if (info.changes === 1) created(i, Number(info.lastInsertRowid), key);
    return info.changes === 1;
  };

  /** Inserts waiting[from .. from + rows) in one statement. */
  const insertChunk = (from: number, rows: number): void => {
    let values = params.get(rows);
    if (!values) {
      values = new Array(rows * CHUNK_COLUMNS);
      params.set(rows, values);
    }
    for (let r = 0; r < rows; r++) {
      const i = waiting[from + r];
      const input = jobs[i];
      const p = r * CHUNK_COLUMNS;
      values[p] = input.queue;
      values[p + 1] = input.name;
      values[p + 2] = input.priority;
      values[p + 3] = input.maxAttempts;
      values[p + 4] = runAts[i];
      values[p + 5] = payloads[i];
      values[p + 6] = now;
    }
    const info = statements.get(db, INSERT_JOB_CHUNK[rows]).run(values);
    // The write lock is held: AUTOINCREMENT gave the rows consecutive ids ending at lastInsertRowid.
    const first = Number(info.lastInsertRowid) - rows + 1;
    for (let r = 0; r < rows; r++) created(waiting[from + r], first + r, null);
  };

  /** Inserts every waiting job, in order: as many of the largest chunks as fit, then smaller ones. */
  const insertWaiting = (): void => {
    let from = 0;
    for (const rows of INSERT_JOB_CHUNK_SIZES) {
      for (; waiting.length - from >= rows; from += rows) insertChunk(from, rows);
    }
    for (; from < waiting.length; from++) insertOne(waiting[from], null);
    waiting.length = 0;
  };

  for (let i = 0; i < jobs.length; i++) {
    const input = jobs[i];
    payloads[i] = input.payloadJson ?? toJson(input.payload);
    // The memory store's arithmetic: a Date truncates fractional milliseconds.
    runAts[i] =
      input.runAt || input.delayMs
        ? (input.runAt ? new Date(input.runAt) : new Date(now + (input.delayMs ?? 0))).getTime()
        : now;
    if (!Number.isFinite(runAts[i])) throw new ValidationError(`job "${input.name}": invalid runAt`);
    // An empty key is no key: a unique index cannot tell "" from "no key".
    const key = input.key ? input.key : null;
    if (key === null) {
      waiting.push(i);
      if (waiting.length === LARGEST_CHUNK) insertWaiting();
      continue;
    }
    insertWaiting(); // keeps ids in input order
    if (!insertOne(i, key)) {
      const existing = statements.get(db, SELECT_JOB_BY_KEY).get(input.queue, key) as JobRow;
      results[i] = { job: jobFromRow(existing), created: false };
    }
  }
  insertWaiting();
  setFlowKeys(db, statements, jobs, results);
  setTraceContexts(db, statements, jobs, results);
  return results;
}

/**
 * The trace contexts of the jobs created (tracing), set in the inserting transaction as flow
 * keys are: a second statement only for traced jobs (in-process: microseconds).
 */
function setTraceContexts(db: Db, statements: Statements, jobs: NewJob[], results: InsertResult[]): void {
  for (let i = 0; i < jobs.length; i++) {
    const context = jobs[i].traceContext;
    if (context !== undefined && context !== null && results[i].created)
      statements.get(db, SET_TRACE_CONTEXT).run({ context, id: Number(results[i].job.id) });
  }
}

/**
 * The flow keys of the jobs created (flow control), set in the inserting transaction: a second
 * statement only for jobs that have one, so the insert statements of every other job stay as
 * they are.
 */
function setFlowKeys(db: Db, statements: Statements, jobs: NewJob[], results: InsertResult[]): void {
  for (let i = 0; i < jobs.length; i++) {
    const key = jobs[i].flowKey;
    if (key !== undefined && key !== null && results[i].created)
      statements.get(db, FLOW_SET_KEY).run({ key, id: Number(results[i].job.id) });
  }
}
