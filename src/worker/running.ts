import type { EventEmitter } from "node:events";
import type { AnyJobDefinition } from "../job.js";
import type { Logger } from "../logger.js";
import type { ClaimedJob } from "../store/types.js";
import { startAttemptSpan } from "../tracing/spans.js";
import { JobAbort } from "./abort.js";
import type { Completer } from "./completer.js";
import { crashedOutcome, inJobScope } from "./crash.js";
import { ActiveJob, executeJob } from "./executor.js";
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

  /** Executes a claimed job and records its outcome; resolves when the slot is free. */
  async run(claimed: ClaimedJob, producer: Producer): Promise<void> {
    const { events, log } = this.deps;
    const active = new ActiveJob(claimed, producer.executor);
    this.active.set(claimed.id, active);
    let released = false;
    this.deps.started(claimed);
    try {
      emitStarted(events, log, active);
      // In the job's async scope: a crash its code causes later is charged to it (crash.ts).
      // Traced (an OpenTelemetry SDK registered): in the attempt's span, which the handler's own
      // spans are children of. Untraced: no span, no closure (tracing/spans.ts).
      const span = startAttemptSpan(claimed, producer.executor.workerId);
      const execution = span
        ? await span.run(() => inJobScope(claimed.id, executeJob, active, producer.executor))
        : await inJobScope(claimed.id, executeJob, active, producer.executor);
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
      if (!execution.outcome || active.leaseLost) return;
      const applied = await this.deps.completer.finish(execution.outcome, claimed.attempt);
      if (!applied) {
        log.warn(
          { jobId: claimed.id, job: claimed.name, queue: claimed.queue, attempt: claimed.attempt },
          "outcome rejected: the lease was lost (the job was rescued or taken over)",
        );
        return;
      }
      const event = EVENT_OF[execution.outcome.kind];
      emitOutcome(events, log, event, active, execution.result, execution.error, execution.outcome.delayMs);
    } finally {
      this.active.delete(claimed.id);
      if (!released) producer.release(); // whatever went wrong, the slot is freed
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
