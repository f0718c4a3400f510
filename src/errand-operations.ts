/**
 * The operator actions of the facade: everything the CLI and the HTTP layer do goes through
 * these (never through `store`). Errand inherits them; they need only its store, its scheduler
 * and the names of its queues.
 */
import { EventEmitter } from "node:events";
import {
  actOnMatching,
  type BulkFilter,
  countMatching,
  type QueueTimings,
  queueTimings,
} from "./bulk-actions.js";
import type { ErrandEvents } from "./errand-types.js";
import type { JobRecord } from "./job.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { pauseQueue, queueOverview, type ResumeFlowOptions, resumeFlow, resumeQueue } from "./queue-pause.js";
import type { ScheduleByHand, Scheduler } from "./schedule/scheduler.js";
import type { FlowLimits, Store } from "./store/types.js";
import { type WaitReason, whyWaiting } from "./waiting.js";

const PICK_FIELDS = knownFields("ids", "queue");
const BULK_FIELDS = knownFields("action", "queue", "search");

export abstract class ErrandOperations extends EventEmitter<ErrandEvents> {
  abstract readonly store: Store;
  abstract readonly scheduler: Scheduler;
  /** The queues of the registered job definitions. */
  abstract get queueNames(): string[];
  /** A job's flow key and its queue's limits, from its registered definition; null without limits. */
  protected abstract flowOf(job: JobRecord): { key: string; limits: FlowLimits } | null;

  /** The backend this errand runs on: "memory", "sqlite" or "postgres". */
  get storeKind(): Store["kind"] {
    return this.store.kind;
  }

  /** The store's clock: the one due times, leases and ages are measured against. */
  now(): Promise<Date> {
    return this.store.now();
  }

  /** Completed and failed counts per queue per `bucketMs` bucket over the last `sinceMs`. */
  throughput(sinceMs: number, bucketMs: number): ReturnType<Store["throughput"]> {
    return this.store.throughput(sinceMs, bucketMs);
  }

  /** Retries the jobs picked by id (failed or cancelled), or every failed job of a queue or of all. Returns how many. */
  async retryJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    // `{ id: [...] }` would retry every failed job: a misspelt filter is refused, never widened.
    onlyKnownFields(filter, PICK_FIELDS, "retryJobs filter");
    return this.store.retryJobs(filter);
  }

  /** Deletes failed jobs picked by id, or every failed job of a queue or of all. Returns how many. */
  async discardJobs(filter: { ids?: string[]; queue?: string }): Promise<number> {
    onlyKnownFields(filter, PICK_FIELDS, "discardJobs filter");
    return this.store.discardJobs(filter);
  }

  /** How many jobs a bulk action by filter would take now (counted up to `cap`). */
  async countMatchingJobs(filter: BulkFilter, cap?: number): Promise<number> {
    onlyKnownFields(filter, BULK_FIELDS, "countMatchingJobs filter");
    return countMatching(this.store, filter, cap);
  }

  /** Retries or discards failed jobs, or cancels pending ones, matching a filter, in bounded batches, up to `max`. Returns how many. */
  async actOnMatchingJobs(filter: BulkFilter, max?: number): Promise<number> {
    onlyKnownFields(filter, BULK_FIELDS, "actOnMatchingJobs filter");
    return actOnMatching(this.store, filter, max);
  }

  /** The dead-letter queue (of one queue, or all) grouped by error message, most first. */
  deadLetterGroups(queue?: string): ReturnType<Store["deadLetterGroups"]> {
    return this.store.deadLetterGroups(queue);
  }

  /** Runtime and wait percentiles per queue over the newest `limit` jobs finished within `windowMs`. */
  queueTimings(windowMs: number, limit: number): Promise<QueueTimings[]> {
    return queueTimings(this.store, windowMs, limit);
  }

  /** Every schedule in the store: those defined in code and those added by hand. */
  listSchedules(): ReturnType<Store["listSchedules"]> {
    return this.scheduler.list();
  }

  /** Adds (or replaces) a schedule by hand, kept until removed (`errand schedule add`). Answers the stored row. */
  addSchedule(input: ScheduleByHand): ReturnType<Scheduler["addByHand"]> {
    return this.scheduler.addByHand(input);
  }

  /** Removes a schedule from the store; answers the removed row, or null when there was none. */
  removeSchedule(name: string): ReturnType<Scheduler["remove"]> {
    return this.scheduler.remove(name);
  }

  /** Pauses a queue on every worker; resolves once none of its handlers can start anywhere (queue-pause.ts). */
  pauseQueue(queue: string): ReturnType<Store["pauseQueue"]> {
    return pauseQueue(this.store, queue);
  }

  /** Lifts a queue's pause; its workers claim at once. False when it was not paused. */
  resumeQueue(queue: string): Promise<boolean> {
    return resumeQueue(this.store, queue);
  }

  /**
   * Lifts the adaptive flow control pauses (a 429's Retry-After) of a queue still in effect: every
   * flow key's and the queue-wide one, or `{ key }` one key's, `{ key: null }` the queue-wide one.
   * Its workers claim at once. Returns how many were in effect. (resumeQueue lifts pauseQueue.)
   */
  resumeFlow(queue: string, options?: ResumeFlowOptions): Promise<number> {
    return resumeFlow(this.store, queue, options);
  }

  /** The paused queues, by name, each with the time it was paused. */
  pausedQueues(): ReturnType<Store["listPausedQueues"]> {
    return this.store.listPausedQueues();
  }

  /** Every queue (with jobs, paused, or registered here): counts, pause, live workers serving it. */
  queues(): ReturnType<typeof queueOverview> {
    return queueOverview(this.store, this.queueNames);
  }

  /** Pauses (true) or resumes (false) a schedule; an unknown name is a ValidationError. Answers the row. */
  setSchedulePaused(name: string, paused: boolean): ReturnType<Scheduler["setPaused"]> {
    return this.scheduler.setPaused(name, paused);
  }

  /** Enqueues a schedule's job now without moving its next slot (scheduler.ts runNow). */
  runScheduleNow(name: string): ReturnType<Scheduler["runNow"]> {
    return this.scheduler.runNow(name);
  }

  /** Why a pending job waits (waiting.ts): [] when nothing holds it back or it is not pending; null: no such job. */
  async whyWaiting(id: string): Promise<WaitReason[] | null> {
    const job = await this.store.getJob(String(id));
    return job && whyWaiting(this.store, job, this.flowOf(job));
  }

  /**
   * A job's dependencies (with their states and results) and its dependents, in id order: empty
   * lists when it has none (also when there is no such job).
   */
  getJobLinks(id: string): ReturnType<Store["getJobLinks"]> {
    return this.store.getJobLinks(String(id));
  }

  /** Workers with a heartbeat within `staleMs` (the dashboard's live list). */
  listWorkers(staleMs: number): ReturnType<Store["listWorkers"]> {
    return this.store.listWorkers(staleMs);
  }
}
