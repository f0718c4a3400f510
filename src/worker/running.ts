import type { EventEmitter } from "node:events";
import type { AnyJobDefinition } from "../job.js";
import type { Logger } from "../logger.js";
import type { ClaimedJob, Outcome } from "../store/types.js";
import { type AttemptSpan, startAttemptSpan } from "../tracing/spans.js";
import { JobAbort } from "./abort.js";
import type { Completer } from "./completer.js";
import { crashedOutcome, inJobScope } from "./crash.js";
import { ActiveJob, type Execution, executeJob } from "./executor.js";
import { EVENT_OF, emitOutcome, emitStarted } from "./outcome-events.js";
import type { Producer } from "./producer.js";

export interface RunningJobsDeps {
  completer: Completer;
  events: EventEmitter;
  log: Logger;
  findJob(name: string): AnyJobDefinition | undefined;
  /** A job started (the event-loop watchdog tracks it). */
  started(claimed: ClaimedJob): void;
}

/**
 * The jobs a worker runs now: each executed in a slot of its queue's producer, its outcome handed
 * to the completer and announced as an event; aborted all at once by a hard stop or a crash.
 */
export class RunningJobs {
  readonly active = new Map<string, ActiveJob>();
  /** Jobs run to an end so far (reported by the heartbeat and the stop line). */
  processed = 0;
  /** Jobs a crash charges (crash.ts), with the crash. */
  private readonly crashCharged = new Map<string, Error>();

  constructor(private readonly deps: RunningJobsDeps) {}

  /**
   * Executes a claimed job in a slot of `producer` and records its outcome. The producer counted
   * the job in (Producer.dispatch); it is told when the slot is free (release) and when the job
   * has ended (jobEnded: its outcome written, refused or dropped).
   *
   * No async function and no promise per job when the handler returns synchronously: the
   * execution is taken as a value, and the completer calls back when the outcome is written. As
   * an async function awaiting the execution and a promise of the completer, this was a third of
   * what the worker allocated per no-op job (heap sampling of bench/one-worker.ts postgres,
   * bench/NOTES.md finding 17).
   */
  run(claimed: ClaimedJob, producer: Producer): void {
    const active = new ActiveJob(claimed, producer.executor);
    this.active.set(claimed.id, active);
    let span: AttemptSpan | null = null;
    let executing: Execution | Promise<Execution>;
    try {
      this.deps.started(claimed);
      emitStarted(this.deps.events, this.deps.log, active);
      // In the job's async scope: a crash its code causes later is charged to it (crash.ts).
      // Traced (an OpenTelemetry SDK registered): in the attempt's span, which the handler's own
      // spans are children of. Untraced: no span, no closure (tracing/spans.ts).
      span = startAttemptSpan(claimed, producer.executor.workerId);
      executing = span
        ? span.run(() => inJobScope(claimed.id, executeJob, active, producer.executor))
        : inJobScope(claimed.id, executeJob, active, producer.executor);
    } catch (err) {
      this.end(active, producer, false, err);
      return;
    }
    if (executing instanceof Promise) {
      const attemptSpan = span;
      executing.then(
        (execution) => this.record(active, producer, execution, attemptSpan),
        (err: unknown) => this.end(active, producer, false, err),
      );
    } else this.record(active, producer, executing, span);
  }

  /** The handler has ended: frees the slot and hands the outcome to the completer. */
  private record(
    active: ActiveJob,
    producer: Producer,
    execution: Execution,
    span: AttemptSpan | null,
  ): void {
    const { claimed } = active;
    const { events, log } = this.deps;
    let released = false;
    try {
      const crash = this.crashCharged.get(claimed.id);
      if (crash && execution.outcome?.kind === "released") {
        execution.outcome = crashedOutcome(
          execution.outcome,
          claimed,
          this.deps.findJob(claimed.name),
          crash,
        );
      }
      // The handler's ctx.log lines go with its attempt's history entry (job-log.ts).
      const logs = execution.outcome ? active.logLines() : undefined;
      if (logs && execution.outcome) execution.outcome.logs = logs;
      span?.end(execution.outcome, active.completedInTransaction, execution.error);
      active.finishedAt = Date.now();
      released = true;
      producer.release();
      this.processed++;
      if (active.completedInTransaction) emitOutcome(events, log, "completed", active, execution.result);
      if (!execution.outcome || active.leaseLost) {
        this.end(active, producer, true);
        return;
      }
      this.deps.completer.finish(execution.outcome, claimed.attempt, (applied) =>
        this.written(active, producer, execution, applied),
      );
    } catch (err) {
      this.end(active, producer, released, err);
    }
  }

  /** The completer wrote the outcome (applied) or the store refused it (the lease was lost). */
  private written(active: ActiveJob, producer: Producer, execution: Execution, applied: boolean): void {
    const { claimed } = active;
    const { events, log } = this.deps;
    try {
      if (!applied) {
        log.warn(
          { jobId: claimed.id, job: claimed.name, queue: claimed.queue, attempt: claimed.attempt },
          "outcome rejected: the lease was lost (the job was rescued or taken over)",
        );
      } else {
        const outcome = execution.outcome as Outcome;
        const event = EVENT_OF[outcome.kind];
        emitOutcome(events, log, event, active, execution.result, execution.error, outcome.delayMs);
      }
    } catch (err) {
      this.end(active, producer, true, err);
      return;
    }
    this.end(active, producer, true);
  }

  /** The job is over: off the running set, its slot freed (whatever went wrong), the producer told. */
  private end(active: ActiveJob, producer: Producer, released: boolean, err?: unknown): void {
    this.active.delete(active.claimed.id);
    try {
      if (!released) producer.release();
    } finally {
      producer.jobEnded();
      if (err !== undefined) {
        try {
          this.deps.log.error({ err }, "unexpected error running a job");
        } catch {
          // the logger could not write this line: the job is over either way
        }
      }
    }
  }

  /**
   * A crash: the job at fault is charged for it if it still runs (none is, when its handler had
   * already ended); when no job's code caused it, every running job is.
   */
  chargeCrash(culprit: string | undefined, error: Error): void {
    const charged = culprit && this.active.has(culprit) ? [culprit] : culprit ? [] : [...this.active.keys()];
    for (const id of charged) if (!this.crashCharged.has(id)) this.crashCharged.set(id, error);
  }

  /** Aborts every running job's signal with the shutdown reason; returns how many were aborted. */
  abortAll(): number {
    let count = 0;
    for (const job of this.active.values()) {
      if (job.abortReason) continue;
      job.abort(new JobAbort("shutdown", "worker shut down"));
      count++;
    }
    return count;
  }
}
