/**
 * Inserting a batch of jobs: which jobs go in which INSERT statement, each statement's
 * parameters, the statements pipelined on one connection, jobs whose idempotency key exists
 * already, and the records returned.
 */
import type { JobRecord } from "../../job.js";
import { newJobRecord } from "../common.js";
import { needsDependencyPlan } from "../dependency-plan.js";
import type { InsertResult, NewJob, TxHandle } from "../types.js";
import { asClient, type Queryable, retryWhenAborted, SLOW_MS } from "./connection.js";
import type { Db } from "./db.js";
import { lockDependencies, writeDependencies } from "./dependencies.js";
import { setFlowKeys } from "./flow.js";
import { serialize } from "./json.js";
import { type Notifier, notifyLocally } from "./notifier.js";
import { type Row, toJob } from "./rows.js";
import { insertScoped } from "./unique.js";

/**
 * A node-postgres client with no transaction open: its last ReadyForQuery said "I" (idle; pg 8
 * keeps it as `_txStatus`). Absent on other query objects (the ORM adapters'): taken as inside.
 */
function outsideTransaction(client: Queryable): boolean {
  return (client as { _txStatus?: unknown })._txStatus === "I";
}

/**
 * A `tx` outside a transaction (no BEGIN) gets one of its own on that client, as a SQLite handle
 * does: else each statement committed alone — a job with dependencies was stored pending, and
 * claimable, before its edges were written; a keyed job keyless until its key was set; and a
 * failure halfway left part of the call stored (test/postgres-store/enqueue.test.ts).
 */
async function inOwnTransaction<T>(client: Queryable, fn: () => Promise<T>): Promise<T> {
  await client.query({ text: "BEGIN" });
  let result: T;
  try {
    result = await fn();
  } catch (err) {
    await client.query({ text: "ROLLBACK" }).catch(() => {});
    throw err;
  }
  await client.query({ text: "COMMIT" });
  return result;
}

/** Inserts `jobs` in the caller's transaction `tx`, or else on its own (one transaction). */
export async function insertJobs(
  db: Db,
  notifier: Notifier,
  jobs: NewJob[],
  tx?: TxHandle,
): Promise<InsertResult[]> {
  const client = tx === undefined || tx === null ? null : asClient(tx);
  if (jobs.length === 0) return [];
  if (client && outsideTransaction(client)) {
    return inOwnTransaction(client, () => insertJobs(db, notifier, jobs, client));
  }
  const payloads = new Array<string>(jobs.length);
  for (let i = 0; i < jobs.length; i++) {
    payloads[i] =
      jobs[i].payloadJson ?? serialize(jobs[i].payload, jobs.length === 1 ? "payload" : `job ${i} payload`);
  }
  const wasListening = notifier.isListening;
  if (jobs.some((j) => j.unique)) {
    const results = await insertWithScopedKeys(db, client, jobs, payloads);
    notifyLocally(notifier, wasListening, () =>
      results.filter((r) => r.created || r.replaced).map((r) => r.job.queue),
    );
    return results;
  }
  const chunks = insertChunks(payloads);
  let results: InsertResult[];
  // Flow keys are set by a second statement in the same transaction (flow.ts setFlowKeys), so
  // the insert statements of jobs without one stay as they are.
  const flowKeyed = jobs.some((j) => j.flowKey !== undefined && j.flowKey !== null);
  // Dependencies too (dependencies.ts): the stored ones are locked and checked before any write,
  // the new jobs' states and edges written after the insert, in the same transaction.
  const linked = needsDependencyPlan(jobs);
  if (client) {
    // The caller's transaction, and nothing else: the jobs exist iff the caller commits.
    const existing = linked ? await lockDependencies(db, client, jobs) : null;
    results = await insertOn(db, client, jobs, payloads, chunks, false);
    if (flowKeyed) await setFlowKeys(db, client, jobs, results);
    if (existing) await writeDependencies(db, client, jobs, results, existing);
  } else if (flowKeyed || linked) {
    results = await retryWhenAborted(
      async () =>
        (await db.transaction(async (c) => {
          const existing = linked ? await lockDependencies(db, c, jobs) : null;
          const inserted = await insertOn(db, c, jobs, payloads, chunks, true);
          if (flowKeyed) await setFlowKeys(db, c, jobs, inserted);
          if (existing) await writeDependencies(db, c, jobs, inserted, existing);
          return inserted;
        }, SLOW_MS)) as InsertResult[],
    );
  } else {
    // Several chunks can still deadlock with another multi-chunk insert of the same keys in
    // another order (each statement is ordered, the transaction is not): Postgres aborts one,
    // which is retried here, as nothing of it was stored.
    results = await retryWhenAborted(async () =>
      chunks.length === 1
        ? insertOn(db, db.pool, jobs, payloads, chunks, true)
        : ((await db.transaction(
            (c) => insertOn(db, c, jobs, payloads, chunks, true),
            SLOW_MS,
          )) as InsertResult[]),
    );
  }
  notifyLocally(notifier, wasListening, () => results.filter((r) => r.created).map((r) => r.job.queue));
  return results;
}

/**
 * A batch holding jobs with scoped keys (NewJob.unique), in one transaction (the caller's, or
 * its own): the others as usual, then each scoped one on its own (unique.ts), in (queue, key)
 * order — two batches locking the same holders in one order cannot deadlock.
 */
async function insertWithScopedKeys(
  db: Db,
  client: Queryable | null,
  jobs: NewJob[],
  payloads: string[],
): Promise<InsertResult[]> {
  const plain: number[] = [];
  const scoped: number[] = [];
  for (let i = 0; i < jobs.length; i++) (jobs[i].unique ? scoped : plain).push(i);
  scoped.sort((a, b) =>
    jobs[a].queue === jobs[b].queue
      ? compare(jobs[a].key as string, jobs[b].key as string)
      : compare(jobs[a].queue, jobs[b].queue),
  );
  // Dependencies as on the plain path: the stored ones locked and checked before any write, the
  // new jobs' states and edges written after. Without this a scoped job with dependsOn was
  // stored pending, without its edges (test/conformance/dependency-edges.test.ts).
  const linked = needsDependencyPlan(jobs);
  const run = async (c: Queryable): Promise<InsertResult[]> => {
    const existing = linked ? await lockDependencies(db, c, jobs) : null;
    const results =
      plain.length > 0
        ? await insertOn(db, c, jobs, payloads, insertChunks(payloads, plain), client === null)
        : new Array<InsertResult>(jobs.length);
    for (const i of scoped) {
      results[i] = await insertScoped(db, c, jobs[i], payloads[i], async () => {
        const traced = jobs[i].traceContext !== undefined && jobs[i].traceContext !== null;
        const statement = traced ? "INSERT_TRACED_JOBS" : "INSERT_JOBS";
        const { rows } = await db.run(statement, insertValues(jobs, payloads, [i], true, traced), c, false);
        if (rows.length === 0) return null;
        return {
          job: insertedRecord(jobs[i], payloads[i], String(rows[0].id), Number(rows[0].now_ms)),
          created: true,
        };
      });
    }
    await setFlowKeys(db, c, jobs, results);
    if (existing) await writeDependencies(db, c, jobs, results, existing);
    return results;
  };
  if (client) return run(client);
  return retryWhenAborted(async () => (await db.transaction(run, SLOW_MS)) as InsertResult[]);
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

async function insertOn(
  db: Db,
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
      const traced = chunk.some((i) => jobs[i].traceContext !== undefined && jobs[i].traceContext !== null);
      const statement = keyed
        ? traced
          ? "INSERT_TRACED_JOBS"
          : "INSERT_JOBS"
        : traced
          ? "INSERT_NEW_TRACED_JOBS"
          : "INSERT_NEW_JOBS";
      const sent = db.run(statement, insertValues(jobs, payloads, chunk, keyed, traced), on, prepared);
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
          results[i] = { job: insertedRecord(jobs[i], payloads[i], String(row.id), now), created: true };
        }
      } else {
        const ids = (rows[0].ids as string).split(",");
        for (let r = 0; r < chunk.length; r++) {
          const i = chunk[r];
          results[i] = { job: insertedRecord(jobs[i], payloads[i], ids[r], now), created: true };
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
    const { rows } = await db.run(
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
  if (lost > 0) throw new Error(`could not insert or find ${lost} job(s) with an idempotency key; try again`);
  return results as InsertResult[];
}

function insertedRecord(input: NewJob, payloadText: string, id: string, now: number): JobRecord {
  // The database's run_at is now + delay at microsecond precision; as a Date (ms) it is exactly this.
  const runAt = input.runAt ? new Date(input.runAt) : new Date(now + (input.delayMs ?? 0));
  // With payloadJson, the caller handed its parsed payload over: no need to parse a copy.
  const payload = input.payloadJson === undefined ? JSON.parse(payloadText) : input.payload;
  return newJobRecord(id, input, payload, runAt, new Date(now));
}

/**
 * Rows per INSERT statement. 5,000 rows keep a statement well under a second; on the 2-core VM
 * 2,000 and 10,000 rows per statement were no faster (100,000 jobs, bench/enqueue.ts).
 */
export const INSERT_CHUNK = 5_000;
/** Payload text per INSERT statement, past its first row (UTF-16 length × 3, an upper bound of the bytes). */
export const INSERT_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * The input positions of each INSERT statement: at most INSERT_CHUNK rows and, past the first
 * row, at most INSERT_CHUNK_BYTES of payload text (a jsonb value cannot exceed 255 MB; 5,000
 * payloads of 1 MiB could).
 */
export function insertChunks(payloads: string[], positions?: number[]): number[][] {
  const chunks: number[][] = [];
  let chunk: number[] = [];
  let bytes = 0;
  const count = positions ? positions.length : payloads.length;
  for (let k = 0; k < count; k++) {
    const i = positions ? positions[k] : k;
    // UTF-16 length: a byte count would cost a pass over every payload; 3× covers any text.
    const size = payloads[i].length * 3;
    if (chunk.length === INSERT_CHUNK || (chunk.length > 0 && bytes + size > INSERT_CHUNK_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(i);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * The parameters of INSERT_NEW_JOBS / INSERT_JOBS for one chunk, as array literals built here:
 * node-postgres's own array encoding (a type check and a regex escape per element) cost more
 * than the rest of the insert's JavaScript.
 */
export function insertValues(
  jobs: NewJob[],
  payloads: string[],
  chunk: number[],
  keyed: boolean,
  traced = false,
): string[] {
  const n = chunk.length;
  const queues = new Array<string>(n);
  const names = new Array<string>(n);
  const json = new Array<string>(n);
  const priorities = new Array<number>(n);
  const attempts = new Array<number>(n);
  const runAts = new Array<number | string>(n);
  const delays = new Array<number>(n);
  const keys = keyed ? new Array<string>(n) : null;
  const contexts = traced ? new Array<string>(n) : null;
  const quote = literalQuoter();
  for (let r = 0; r < n; r++) {
    const i = chunk[r];
    const job = jobs[i];
    queues[r] = quote(job.queue);
    names[r] = quote(job.name);
    json[r] = payloads[i];
    priorities[r] = job.priority;
    attempts[r] = job.maxAttempts;
    runAts[r] = job.runAt ? new Date(job.runAt).getTime() : "NULL";
    delays[r] = job.delayMs ?? 0;
    if (keys) keys[r] = job.key === undefined || job.key === null ? "NULL" : quote(job.key);
    if (contexts)
      contexts[r] =
        job.traceContext === undefined || job.traceContext === null ? "NULL" : quote(job.traceContext);
  }
  const values = [
    `{${queues.join(",")}}`,
    `{${names.join(",")}}`,
    `[${json.join(",")}]`,
    `{${priorities.join(",")}}`,
    `{${attempts.join(",")}}`,
    `{${runAts.join(",")}}`,
    `{${delays.join(",")}}`,
  ];
  if (keys) values.push(`{${keys.join(",")}}`);
  if (contexts) values.push(`{${contexts.join(",")}}`);
  return values;
}

/** Quotes a text for a Postgres array literal; remembers the last one (a batch repeats its queue and name). */
export function literalQuoter(): (text: string) => string {
  let lastText: string | undefined;
  let lastQuoted = "";
  return (text) => {
    if (text !== lastText) {
      lastText = text;
      lastQuoted = `"${text.replace(/["\\]/g, "\\$&")}"`;
    }
    return lastQuoted;
  };
}
