/**
 * The memory store's dependency edges (store/dependency-plan.ts says what they mean): each job's
 * dependencies and dependents by id, and the resolution of dependents when a job finishes.
 */
import type { DependencyLink, JobRecord } from "../../job.js";
import {
  applyPlanToResults,
  checkDependenciesExist,
  dependencyIds,
  FINISHED_STATES,
  planDependencies,
  resolveDependent,
} from "../dependency-plan.js";
import type { DependencyFailurePolicy, InsertResult, JobLinks, NewJob } from "../types.js";
import { clone } from "./registry.js";

/** The dependency fields of a memory row. */
export interface LinkedRow extends JobRecord {
  left: number;
  policy: DependencyFailurePolicy | null;
  node: string | null;
  hasDependents: boolean;
}

/** A memory row's job record: without the store's own fields (not a copy). */
export function recordOf(
  row: LinkedRow & { seq: number; leaseToken: number; flowKey: string | null; traceContext: string | null },
): JobRecord {
  const {
    seq: _s,
    leaseToken: _t,
    flowKey: _f,
    traceContext: _tc,
    left: _l,
    policy: _p,
    node: _n,
    hasDependents: _h,
    ...job
  } = row;
  return job;
}

/** The dependency fields of a row inserted without any. */
export const unlinked = () => ({ left: 0, policy: null, node: null, hasDependents: false });

export class MemoryLinks {
  private readonly dependsOn = new Map<string, string[]>();
  private readonly dependents = new Map<string, string[]>();

  /** Throws (before anything is stored) when a dependency id names no job. */
  check(jobs: NewJob[], rows: ReadonlyMap<string, LinkedRow>): void {
    const ids = dependencyIds(jobs);
    const found = new Map<string, LinkedRow["state"]>();
    for (const id of ids) {
      const row = rows.get(id);
      if (row) found.set(id, row.state);
    }
    checkDependenciesExist(ids, found);
  }

  /** Writes the planned states, counters and edges of a batch just inserted. */
  apply(jobs: NewJob[], results: InsertResult[], rows: ReadonlyMap<string, LinkedRow>, now: number): void {
    const existing = new Map<string, LinkedRow["state"]>();
    for (const id of dependencyIds(jobs)) existing.set(id, (rows.get(id) as LinkedRow).state);
    const plan = planDependencies(jobs, results, existing);
    for (const p of plan.jobs) {
      const row = rows.get(p.id) as LinkedRow;
      row.state = p.state;
      row.left = p.left;
      row.node = p.node;
      row.policy = p.policy;
      row.hasDependents = p.hasDependents;
      row.lastError = p.lastError;
      if (p.state === "failed" || p.state === "cancelled") row.finishedAt = new Date(now);
      this.dependsOn.set(p.id, p.dependsOn);
      for (const dep of p.dependsOn) {
        const list = this.dependents.get(dep);
        if (list) list.push(p.id);
        else this.dependents.set(dep, [p.id]);
      }
    }
    for (const id of plan.marked) (rows.get(id) as LinkedRow).hasDependents = true;
    applyPlanToResults(plan, results, new Date(now));
  }

  /**
   * `row` just finished (completed, failed, cancelled): resolves its dependents, and theirs when
   * a failure fails or cancels them. `wake` gets the queues of jobs that became pending.
   */
  finished(
    row: LinkedRow,
    rows: ReadonlyMap<string, LinkedRow>,
    now: number,
    wake: (queue: string) => void,
  ): void {
    let done: LinkedRow[] = row.hasDependents && FINISHED_STATES.has(row.state) ? [row] : [];
    while (done.length > 0) {
      const next: LinkedRow[] = [];
      for (const dep of done) {
        const culprit = dep.state === "completed" ? null : { id: dep.id, state: dep.state };
        for (const id of this.dependents.get(dep.id) ?? []) {
          const waiting = rows.get(id);
          if (waiting?.state !== "waiting") continue;
          const r = resolveDependent(waiting, 1, culprit);
          waiting.left = r.left;
          waiting.state = r.state;
          if (r.lastError) waiting.lastError = r.lastError;
          if (r.state === "pending") {
            if (waiting.runAt.getTime() < now) waiting.runAt = new Date(now);
            wake(waiting.queue);
          } else if (r.state !== "waiting") {
            waiting.finishedAt = new Date(now);
            if (waiting.hasDependents) next.push(waiting);
          }
        }
      }
      done = next;
    }
  }

  links(id: string, rows: ReadonlyMap<string, LinkedRow>): JobLinks {
    const link = (other: string, withResult: boolean): DependencyLink[] => {
      const row = rows.get(other);
      return row
        ? [
            {
              id: row.id,
              node: row.node,
              name: row.name,
              queue: row.queue,
              state: row.state,
              result: withResult ? clone(row.result) : null,
            },
          ]
        : [];
    };
    const byId = (a: DependencyLink, b: DependencyLink) => Number(a.id) - Number(b.id);
    return {
      dependencies: (this.dependsOn.get(id) ?? []).flatMap((d) => link(d, true)).sort(byId),
      dependents: (this.dependents.get(id) ?? []).flatMap((d) => link(d, false)).sort(byId),
    };
  }

  /** Forgets a deleted job's edges to its dependencies (its dependents keep theirs: the job view shows what is left). */
  deleted(id: string): void {
    for (const dep of this.dependsOn.get(id) ?? []) {
      const list = this.dependents.get(dep);
      if (!list) continue;
      const rest = list.filter((d) => d !== id);
      if (rest.length > 0) this.dependents.set(dep, rest);
      else this.dependents.delete(dep);
    }
    this.dependsOn.delete(id);
  }
}
