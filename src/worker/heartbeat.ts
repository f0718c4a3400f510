import type { ClaimedJob, Store } from "../store/types.js";
import { JobAbort } from "./abort.js";
import type { ActiveJob } from "./executor.js";
import type { Producer } from "./producer.js";

/**
 * One heartbeat for all of a worker's leases: the running jobs' and the read-ahead buffers'.
 * A running job whose lease was lost (rescued, taken over) or that was cancelled is aborted; a
 * buffered one is dropped unstarted (given back to the queue when it was only cancelled).
 */
export class Heartbeat {
  constructor(
    private readonly store: Store,
    private readonly workerId: string,
    private readonly leaseMs: number,
    private readonly active: ReadonlyMap<string, ActiveJob>,
    private readonly producers: readonly Producer[],
  ) {}

  /**
   * Extends every lease the worker holds and records it as alive (with `processed` so far). The
   * leases come first and do not wait on the worker's row: when only that write failed (its
   * table locked past a timeout), stopping there let every lease run out, and rescuers ran the
   * jobs a second time (test/reliability/heartbeat-worker-row.test.ts). Its error is thrown
   * after the leases are extended, for the caller to log.
   */
  async beat(processed: number): Promise<void> {
    const alive = this.store.heartbeatWorker(this.workerId, this.active.size, processed).then(
      () => undefined,
      (err: unknown) => err,
    );
    await this.extendLeases();
    const failed = await alive;
    if (failed !== undefined) throw failed;
  }

  private async extendLeases(): Promise<void> {
    const { store } = this;
    const held = [...this.active.values()].filter((a) => !a.leaseLost).map((a) => a.claimed);
    const buffered = this.producers.flatMap((r) => r.buffered);
    if (held.length + buffered.length === 0) return;
    const statuses = await store.extendLeases(
      [...held, ...buffered].map((c) => ({ id: c.id, leaseToken: c.leaseToken })),
      this.leaseMs,
    );
    const giveBack: ClaimedJob[] = [];
    for (const status of statuses) {
      const waiting = status.held && !status.cancelRequested ? undefined : this.takeBuffered(status.id);
      if (waiting) {
        // Not started yet: a lost lease means someone else has it; a cancelled one is never run.
        if (status.held) giveBack.push(waiting);
        continue;
      }
      const job = this.active.get(status.id);
      if (!job) continue;
      if (!status.held) {
        job.leaseLost = true;
        job.abort(new JobAbort("lease-lost", "lease lost: the job was rescued or taken over"));
      } else if (status.cancelRequested) {
        job.abort(new JobAbort("cancelled", "job cancelled"));
      }
    }
    if (giveBack.length > 0) await store.returnJobs(giveBack);
  }

  /** Removes a claimed-but-unstarted job from its queue's read-ahead buffer. */
  private takeBuffered(id: string): ClaimedJob | undefined {
    for (const producer of this.producers) {
      const job = producer.take(id);
      if (job) return job;
    }
    return undefined;
  }
}
