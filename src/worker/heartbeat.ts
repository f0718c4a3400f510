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

  /** Records the worker as alive (with `processed` so far) and extends every lease it holds. */
  async beat(processed: number): Promise<void> {
    const { store } = this;
    const held = [...this.active.values()].filter((a) => !a.leaseLost).map((a) => a.claimed);
    const buffered = this.producers.flatMap((r) => r.buffered);
    await store.heartbeatWorker(this.workerId, this.active.size, processed);
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
