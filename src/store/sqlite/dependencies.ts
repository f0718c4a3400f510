/**
 * Dependencies on the SQLite store (store/dependency-plan.ts says what they mean): the edges of
 * a batch written in its inserting transaction, the resolution of dependents in a finishing
 * transaction, and a job's links for the job view and ctx.dependencies.
 */
import type Database from "better-sqlite3";
import type { DependencyLink, JobState } from "../../job.js";
import {
  applyPlanToResults,
  checkDependenciesExist,
  dependencyIds,
  FINISHED_STATES,
  planDependencies,
  resolveDependent,
} from "../dependency-plan.js";
import type { DependencyFailurePolicy, InsertResult, JobLinks, NewJob } from "../types.js";
import * as Q from "./dependency-queries.js";
import { parseId } from "./rows.js";

/** Statements of one handle (errand's connection, or the application's in a transactional enqueue). */
export type Prepare = (sql: string) => Database.Statement;

/** The stored dependencies' states; throws (before any write) when one names no job. */
export function readDependencies(q: Prepare, jobs: NewJob[]): Map<string, JobState> {
  const ids = dependencyIds(jobs);
  const found = new Map<string, JobState>();
  const read = q(Q.DEPENDENCY_STATE);
  for (const id of ids) {
    const n = parseId(id);
    const row = n === null ? undefined : (read.get(n) as { state: JobState } | undefined);
    if (row) found.set(id, row.state);
  }
  checkDependenciesExist(ids, found);
  return found;
}

/** Writes the planned states and edges of a batch just inserted, in its transaction. */
export function writeDependencies(
  q: Prepare,
  jobs: NewJob[],
  results: InsertResult[],
  existing: Map<string, JobState>,
  now: number,
): void {
  const plan = planDependencies(jobs, results, existing);
  const set = q(Q.DEPENDENCY_SET);
  const edge = q(Q.DEPENDENCY_EDGE);
  for (const p of plan.jobs) {
    set.run({
      id: Number(p.id),
      state: p.state,
      left: p.left,
      node: p.node,
      policy: p.policy,
      hasDependents: p.hasDependents ? 1 : 0,
      lastError: p.lastError,
      finishedAt: p.state === "failed" || p.state === "cancelled" ? now : null,
    });
    for (const dep of p.dependsOn) edge.run({ dependsOn: Number(dep), id: Number(p.id) });
  }
  const mark = q(Q.DEPENDENCY_MARK);
  for (const id of plan.marked) mark.run(Number(id));
  applyPlanToResults(plan, results, new Date(now));
}

interface WaitingRow {
  id: number;
  queue: string;
  left: number;
  policy: DependencyFailurePolicy | null;
  has_dependents: number;
}

/**
 * Jobs with dependents just finished (inside the finishing transaction): resolves their waiting
 * dependents, and theirs in turn when a failure fails or cancels them. Answers the queues of
 * the jobs that became pending.
 */
export function resolveDependents(
  q: Prepare,
  finished: Array<{ id: number; state: string }>,
  now: number,
): string[] {
  const woken: string[] = [];
  const waiting = q(Q.DEPENDENTS_WAITING);
  const resolve = q(Q.DEPENDENT_RESOLVE);
  let done = finished.filter((f) => FINISHED_STATES.has(f.state));
  while (done.length > 0) {
    const next: Array<{ id: number; state: string }> = [];
    for (const dep of done) {
      const culprit = dep.state === "completed" ? null : { id: String(dep.id), state: dep.state };
      for (const w of waiting.all(dep.id) as WaitingRow[]) {
        const r = resolveDependent(w, 1, culprit);
        const ended = r.state === "failed" || r.state === "cancelled";
        resolve.run({
          id: w.id,
          state: r.state,
          left: r.left,
          lastError: r.lastError,
          finishedAt: ended ? now : null,
          now,
        });
        if (r.state === "pending") woken.push(w.queue);
        else if (ended && w.has_dependents) next.push({ id: w.id, state: r.state });
      }
    }
    done = next;
  }
  return woken;
}

interface LinkRow {
  id: number;
  node: string | null;
  name: string;
  queue: string;
  state: JobState;
  result?: string | null;
}

export function jobLinks(q: Prepare, id: string): JobLinks {
  const n = parseId(id);
  if (n === null) return { dependencies: [], dependents: [] };
  const link = (r: LinkRow): DependencyLink => ({
    id: String(r.id),
    node: r.node,
    name: r.name,
    queue: r.queue,
    state: r.state,
    result: r.result === undefined || r.result === null ? null : JSON.parse(r.result),
  });
  return {
    dependencies: (q(Q.LINKED_DEPENDENCIES).all(n) as LinkRow[]).map(link),
    dependents: (q(Q.LINKED_DEPENDENTS).all(n) as LinkRow[]).map(link),
  };
}
