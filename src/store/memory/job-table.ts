/**
 * The memory store's job table: the rows and the key index, inserting into them (keys, unique
 * rules, dependencies: store/unique.ts, ./dependencies.ts), and the two ways a row leaves play
 * (settled, deleted). MemoryLeases (./leases.ts) and MemoryStore (./index.ts) build on it.
 */
import type { JobRecord } from "../../job.js";
import { newJobRecord } from "../common.js";
import { needsDependencyPlan } from "../dependency-plan.js";
import type { InsertResult, NewJob } from "../types.js";
import { holderAction, replacementRunAt } from "../unique.js";
import { type LinkedRow, MemoryLinks, recordOf, unlinked } from "./dependencies.js";
import { clone, MemoryRegistry } from "./registry.js";

export interface Row extends LinkedRow {
  seq: number;
  leaseToken: number;
  flowKey: string | null;
  traceContext: string | null;
}

/** The ledger, schedules and worker registry are inherited from MemoryRegistry (./registry.ts). */
export abstract class MemoryJobTable extends MemoryRegistry {
  protected readonly jobs = new Map<string, Row>();
  private readonly byKey = new Map<string, string>();
  private seq = 0;
  protected readonly links = new MemoryLinks();

  protected publicJob(row: Row): JobRecord {
    return clone(recordOf(row));
  }

  async insertJobs(jobs: NewJob[]): Promise<InsertResult[]> {
    const now = this.clock();
    const results: InsertResult[] = [];
    const createdQueues = new Set<string>();
    const linked = needsDependencyPlan(jobs);
    if (linked) this.links.check(jobs, this.jobs);
    for (const input of jobs) {
      const keyId = input.key ? this.byKey.get(`${input.queue}\u0000${input.key}`) : undefined;
      const existing = keyId ? this.jobs.get(keyId) : undefined;
      // The key's holder: a duplicate, one to replace, or one that gives the key up (unique.ts).
      const action = existing ? (input.unique ? holderAction(input.unique, existing, now) : "match") : null;
      if (existing && action !== "release") {
        if (action === "replace") this.replaceRow(existing, input, now);
        if (action === "replace") createdQueues.add(existing.queue); // it may be due sooner
        const job = this.publicJob(existing);
        // As the SQL stores answer: `replaced` only when it was.
        results.push(
          action === "replace" ? { job, created: false, replaced: true } : { job, created: false },
        );
        continue;
      }
      const seq = ++this.seq;
      const runAt = input.runAt ? new Date(input.runAt) : new Date(now + (input.delayMs ?? 0));
      // The stored copy is private; the caller's record gets its own (with payloadJson, the
      // payload the caller handed over).
      const stored = input.payloadJson === undefined ? clone(input.payload) : JSON.parse(input.payloadJson);
      const record = newJobRecord(String(seq), input, stored, runAt, new Date(now));
      const row: Row = {
        ...record,
        seq,
        leaseToken: 0,
        flowKey: input.flowKey ?? null,
        traceContext: input.traceContext ?? null,
        ...unlinked(),
      };
      this.jobs.set(row.id, row);
      if (row.key) this.byKey.set(`${row.queue}\u0000${row.key}`, row.id);
      createdQueues.add(row.queue);
      const job =
        input.payloadJson === undefined
          ? this.publicJob(row)
          : newJobRecord(row.id, input, input.payload, new Date(runAt), new Date(now));
      results.push({ job, created: true });
    }
    if (linked) this.links.apply(jobs, results, this.jobs, now);
    for (const queue of createdQueues) this.notify(queue);
    return results;
  }

  /** A pending job holding a key takes a new enqueue's payload, run time, priority and flow key. */
  private replaceRow(row: Row, input: NewJob, now: number): void {
    row.payload = input.payloadJson === undefined ? clone(input.payload) : JSON.parse(input.payloadJson);
    row.runAt = new Date(
      replacementRunAt(input.unique as NonNullable<NewJob["unique"]>, input, row.createdAt, now),
    );
    row.priority = input.priority;
    row.flowKey = input.flowKey ?? null;
  }

  /** A finished job wakes its waiters (waitFor) and resolves its dependents (dependencies.ts); most have none. */
  protected settled(row: Row, now: number): void {
    this.finished(row.id);
    if (row.hasDependents) this.links.finished(row, this.jobs, now, (queue) => this.notify(queue));
  }

  protected deleteRow(row: Row): void {
    this.jobs.delete(row.id);
    this.forgetLedgerOf(row.id);
    this.finished(row.id);
    this.links.deleted(row.id);
    // Only the job holding the key frees it: one that gave it up shares it with its holder.
    const key = `${row.queue}\u0000${row.key}`;
    if (row.key && this.byKey.get(key) === row.id) this.byKey.delete(key);
  }
}
