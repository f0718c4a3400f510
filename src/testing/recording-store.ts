/**
 * The test errand's store: the memory store on the fake clock, keeping a copy of every job it
 * creates — by enqueue, by a handler, by a schedule — in the order created, for expectEnqueued.
 * Kept at the store, not from the errand's events, so no path of enqueueing is missed.
 */
import type { JobRecord } from "../job.js";
import { MemoryStore } from "../store/memory/index.js";
import type { InsertResult, NewJob } from "../store/types.js";

export class RecordingMemoryStore extends MemoryStore {
  /** Copies of the created jobs as they were enqueued (a later state change does not touch them). */
  readonly created: JobRecord[] = [];

  override async insertJobs(jobs: NewJob[]): Promise<InsertResult[]> {
    const results = await super.insertJobs(jobs);
    for (const r of results) if (r.created) this.created.push(structuredClone(r.job));
    return results;
  }
}
