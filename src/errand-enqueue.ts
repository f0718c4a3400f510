/**
 * The facade's enqueue family: enqueue, enqueueMany and enqueueFlow, and the store insert they
 * share (in an `enqueue` span, then the "enqueued" event). Errand inherits them; they need only
 * its store and its way to resolve, validate and prepare a job (job.ts, enqueue.ts).
 */
import type { EnqueueFlowOptions, FlowSpec } from "./dependencies.js";
import { checkEnqueueOptions, checkItems, checkTxOnly, type JobOptions, prepareNow } from "./enqueue.js";
import { type EnqueuedFlow, flowResult, prepareFlow } from "./enqueue-flow.js";
import { ErrandResults } from "./errand-results.js";
import type { EnqueuedJob, EnqueueManyItem, EnqueueOptions, JobRef } from "./errand-types.js";
import { ValidationError } from "./errors.js";
import type { JobDefinition } from "./job.js";
import { inSynchronousTransaction } from "./store/sqlite/tx.js";
import type { InsertResult, NewJob, TxHandle } from "./store/types.js";
import { startEnqueueSpan } from "./tracing/spans.js";

/** Where enqueueMany's per-job options go, for the error refusing them in its last argument. */
const MANY_HINT = 'on each item, next to its payload: [{ payload, delay: "5s" }, …]';

export abstract class ErrandEnqueue extends ErrandResults {
  /** The definition of a job reference; a definition not yet registered is registered. */
  protected abstract resolve<P>(ref: JobRef<P, unknown>): JobDefinition<P, unknown>;
  /** A validated row to insert (async when the schema is). */
  protected abstract prepare<P>(
    def: JobDefinition<P, unknown>,
    payload: P,
    options: JobOptions,
    what: string,
  ): NewJob | Promise<NewJob>;
  /** Throws once the errand is closed. */
  protected abstract assertOpen(): void;

  /**
   * Stores one job. With `key`, an existing job of the queue with that key is returned instead
   * (created: false). With `tx`, the insert joins the caller's transaction. When `tx` is a
   * better-sqlite3 Database inside a transaction (`db.transaction(() => …)` cannot wait), the job
   * is validated and inserted before this returns, and any error is thrown synchronously — the
   * application's transaction rolls back with it; an asynchronous schema is refused there.
   */
  enqueue<P, R = unknown>(
    job: JobRef<P, R>,
    payload: P,
    options: EnqueueOptions = {},
  ): Promise<EnqueuedJob<P, R>> {
    if (inSynchronousTransaction(options.tx)) {
      this.assertOpen();
      checkEnqueueOptions(options);
      const def = this.resolve(job);
      const row = prepareNow(def.name, this.prepare(def, payload, options, "payload"));
      return Promise.resolve(this.insertNow<P, R>([row], options.tx)[0]);
    }
    try {
      this.assertOpen();
      checkEnqueueOptions(options);
      const def = this.resolve(job);
      const row = this.prepare(def, payload, options, "payload");
      const insert = (r: NewJob) => this.insert<P, R>([r], options.tx).then((jobs) => jobs[0]);
      return row instanceof Promise ? row.then(insert) : insert(row);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Stores many jobs of one type in one transaction. Any invalid item rejects the whole call;
   * nothing is stored. Inside a better-sqlite3 transaction, synchronous as `enqueue` is.
   */
  enqueueMany<P, R = unknown>(
    job: JobRef<P, R>,
    items: readonly EnqueueManyItem<P>[],
    options: { tx?: TxHandle } = {},
  ): Promise<EnqueuedJob<P, R>[]> {
    if (!inSynchronousTransaction(options.tx)) return this.enqueueManyLater(job, items, options);
    this.assertOpen();
    checkTxOnly(options, "enqueueMany", MANY_HINT);
    const def = this.resolve(job);
    const rows = checkItems(items).map((item, i) =>
      prepareNow(def.name, this.prepare(def, item.payload, item, `item ${i} payload`)),
    );
    return Promise.resolve(rows.length === 0 ? [] : this.insertNow<P, R>(rows, options.tx));
  }

  private async enqueueManyLater<P, R>(
    job: JobRef<P, R>,
    items: readonly EnqueueManyItem<P>[],
    options: { tx?: TxHandle },
  ): Promise<EnqueuedJob<P, R>[]> {
    this.assertOpen();
    checkTxOnly(options, "enqueueMany", MANY_HINT);
    const tx = options.tx;
    checkItems(items);
    const def = this.resolve(job);
    const prepared: Array<NewJob | Promise<NewJob>> = new Array(items.length);
    let pending = false;
    try {
      for (let i = 0; i < items.length; i++) {
        // The item is its own options: prepareJob reads the option fields only.
        const row = this.prepare(def, items[i].payload, items[i], `item ${i} payload`);
        if (row instanceof Promise) pending = true;
        prepared[i] = row;
      }
    } catch (err) {
      // Items already handed to an async schema: their outcome no longer matters.
      if (pending) for (const row of prepared) if (row instanceof Promise) row.catch(() => {});
      throw err;
    }
    const rows = pending ? await Promise.all(prepared) : (prepared as NewJob[]);
    if (rows.length === 0) return [];
    return this.insert<P, R>(rows, tx);
  }

  /**
   * The store's insert, in an `enqueue` span when an OpenTelemetry SDK is registered (its trace
   * context is stored with each job: tracing/spans.ts); without one, the insert alone.
   */
  private insert<P, R>(rows: NewJob[], tx: TxHandle): Promise<EnqueuedJob<P, R>[]> {
    const span = startEnqueueSpan(rows);
    if (!span) return this.store.insertJobs(rows, tx).then((results) => this.afterInsert<P, R>(results));
    return this.store.insertJobs(rows, tx).then(
      (results) => {
        const jobs = this.afterInsert<P, R>(results);
        span.end(jobs);
        return jobs;
      },
      (err: unknown) => {
        span.fail(err);
        throw err;
      },
    );
  }

  /**
   * Stores a flow — a tree or DAG of jobs whose nodes name each other in `dependsOn` — in one
   * call and one transaction (the caller's, with `tx`; inside a better-sqlite3 transaction,
   * synchronously, as enqueue). A node runs once every node it depends on completed; see
   * `onDependencyFailure` for when one fails. An unknown node, a cycle, more than 10,000 jobs,
   * an invalid payload or a missing stored dependency rejects the whole flow: nothing is stored.
   */
  enqueueFlow<T extends Record<string, unknown>>(
    spec: FlowSpec<T>,
    options: EnqueueFlowOptions = {},
  ): Promise<EnqueuedFlow<keyof T & string>> {
    const sync = inSynchronousTransaction(options.tx);
    try {
      this.assertOpen();
      checkTxOnly(options, "enqueueFlow", "on its node: { job, payload, delay, … }");
      const flow = prepareFlow(
        spec as unknown as FlowSpec,
        (job) => this.resolve(job),
        (def, node, what) => this.prepare(def, node.payload, node, what),
      );
      if (sync) {
        const rows = flow.rows.map((row, i) => prepareNow(flow.names[i], row));
        return Promise.resolve(flowResult(flow.names, this.insertNow(rows, options.tx)));
      }
      return Promise.all(flow.rows).then(async (rows) =>
        flowResult(flow.names, this.afterInsert(await this.store.insertJobs(rows, options.tx))),
      );
    } catch (err) {
      if (sync) throw err;
      return Promise.reject(err);
    }
  }

  /** Inserts into the caller's better-sqlite3 transaction now (the store throws on any error). */
  private insertNow<P, R>(rows: NewJob[], tx: TxHandle): EnqueuedJob<P, R>[] {
    if (!this.store.insertJobsNow) {
      throw new ValidationError(
        `enqueue tx: a better-sqlite3 Database was passed, but this errand's jobs are in ${this.store.kind}: the job cannot join that transaction`,
      );
    }
    const span = startEnqueueSpan(rows);
    try {
      const jobs = this.afterInsert<P, R>(this.store.insertJobsNow(rows, tx));
      span?.end(jobs);
      return jobs;
    } catch (err) {
      span?.fail(err);
      throw err;
    }
  }

  /**
   * The store's records, each with `created` added (the store hands them over: no copy), and
   * the "enqueued" event with the new ones.
   */
  private afterInsert<P, R>(results: InsertResult[]): EnqueuedJob<P, R>[] {
    const jobs = new Array<EnqueuedJob<P, R>>(results.length);
    let fresh = 0;
    for (let i = 0; i < results.length; i++) {
      const job = results[i].job as EnqueuedJob<P, R>;
      job.created = results[i].created;
      job.replaced = results[i].replaced === true;
      if (job.created) fresh++;
      jobs[i] = job;
    }
    if (fresh > 0 && this.listenerCount("enqueued") > 0) {
      this.emit("enqueued", fresh === jobs.length ? jobs.slice() : jobs.filter((j) => j.created));
    }
    return jobs;
  }
}
