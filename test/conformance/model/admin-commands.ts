/**
 * The model test's commands for what an operator does: cancel a job, retry, discard and prune
 * finished ones, by ids or a whole queue.
 */
import assert from "node:assert/strict";
import type { JobState } from "../../../src/job.js";
import { Cmd, HOUR, type MJob, type Model, pick, type Queue, type Real } from "./reference.js";

/** A command that picks among the jobs inserted so far (there must be one). */
abstract class JobsCmd extends Cmd {
  check(m: Readonly<Model>): boolean {
    return m.jobs.length > 0;
  }
}

/** Cancels a running job when `running` and there is one (a cancel request), else any job. */
export class CancelCmd extends JobsCmd {
  constructor(
    readonly running: boolean,
    readonly job: number,
  ) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const running = m.jobs.filter((j) => !j.deleted && j.state === "running");
    const job = this.running && running.length > 0 ? pick(running, this.job) : pick(m.jobs, this.job);
    const rec = await r.store.cancelJob(r.ids[job.seq]);
    if (job.deleted) {
      assert.equal(rec, null, `${this}: a deleted job`);
      return;
    }
    if (job.state === "pending") job.state = "cancelled";
    else if (job.state === "running") job.cancelRequested = true;
    assert.ok(rec, `${this}: the job`);
    assert.deepEqual(
      { state: rec.state, cancelRequested: rec.cancelRequested },
      { state: job.state, cancelRequested: job.cancelRequested },
      `${this}: job #${job.seq} after cancel`,
    );
  }
  toString(): string {
    return `cancel(${this.running ? "running" : "any"} job ${this.job})`;
  }
}

export type Selection = { queue: Queue } | { jobs: number[] };

function select(
  m: Model,
  r: Real,
  sel: Selection,
  states: JobState[],
): { filter: { ids?: string[]; queue?: string }; hit: MJob[] } {
  if ("queue" in sel) {
    return {
      filter: { queue: sel.queue },
      hit: m.jobs.filter((j) => !j.deleted && j.queue === sel.queue && states.includes(j.state)),
    };
  }
  const chosen = [...new Set(sel.jobs.map((i) => pick(m.jobs, i)))];
  return {
    filter: { ids: chosen.map((j) => r.ids[j.seq]) },
    hit: chosen.filter((j) => !j.deleted && states.includes(j.state)),
  };
}

/** A command on the jobs a selection names: some of them by id, or a whole queue. */
abstract class SelectionCmd extends JobsCmd {
  constructor(readonly sel: Selection) {
    super();
  }
}

const selString = (sel: Selection) => ("queue" in sel ? `queue ${sel.queue}` : `jobs ${sel.jobs.join(",")}`);

export class RetryJobsCmd extends SelectionCmd {
  protected async step(m: Model, r: Real): Promise<void> {
    // By ids: failed or cancelled; a whole queue: its dead-letter queue, failed only.
    const states: JobState[] = "queue" in this.sel ? ["failed"] : ["failed", "cancelled"];
    const { filter, hit } = select(m, r, this.sel, states);
    const t0 = (await r.store.now()).getTime();
    const n = await r.store.retryJobs(filter);
    const t1 = (await r.store.now()).getTime();
    assert.equal(n, hit.length, `${this}: retried (model seqs ${hit.map((j) => j.seq).join(",") || "none"})`);
    for (const job of hit) {
      job.state = "pending";
      job.attempt = 0;
      job.due = true;
      job.runAtWindow = [t0, t1];
    }
  }
  toString(): string {
    return `retryJobs(${selString(this.sel)})`;
  }
}

export class DiscardCmd extends SelectionCmd {
  protected async step(m: Model, r: Real): Promise<void> {
    const { filter, hit } = select(m, r, this.sel, ["failed"]);
    const n = await r.store.discardJobs(filter);
    assert.equal(
      n,
      hit.length,
      `${this}: discarded (model seqs ${hit.map((j) => j.seq).join(",") || "none"})`,
    );
    for (const job of hit) job.deleted = true;
  }
  toString(): string {
    return `discardJobs(${selString(this.sel)})`;
  }
}

export class PruneCmd extends Cmd {
  constructor(readonly failedToo: boolean) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    r.clock.advance(5); // everything finished so far is now older than 1 ms
    const n = await r.store.pruneFinished({ completedAgeMs: 1, failedAgeMs: this.failedToo ? 1 : HOUR });
    const gone = m.jobs.filter(
      (j) =>
        !j.deleted &&
        (j.state === "completed" || j.state === "cancelled" || (this.failedToo && j.state === "failed")),
    );
    assert.equal(
      n,
      gone.length,
      `${this}: pruned (model seqs ${gone.map((j) => j.seq).join(",") || "none"})`,
    );
    for (const job of gone) job.deleted = true;
  }
  toString(): string {
    return `prune(${this.failedToo ? "completed, cancelled and failed" : "completed and cancelled"})`;
  }
}
