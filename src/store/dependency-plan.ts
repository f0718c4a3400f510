/**
 * Dependencies, as every store applies them (the memory store in JavaScript, SQLite with these
 * helpers, Postgres in SQL that mirrors them; test/conformance/dependencies.test.ts holds all
 * three to it).
 *
 * A job with dependencies is stored `waiting` with a counter of the dependencies that have not
 * finished. It is not in the claimable state at all, so a claim never looks at it. A job that
 * has dependents carries a flag (has_dependents); finishing it — completed, failed for good,
 * cancelled, in the finishing transaction — resolves them: each dependent's counter goes down,
 * and at zero it becomes `pending` (due now, or at its own later run_at). A dependency that
 * failed or was cancelled resolves its dependent by the dependent's policy: `fail` or `cancel`
 * it at once (and so on down the graph), or `run` it anyway once every dependency finished.
 * A job without dependents skips all of it.
 */
import { ValidationError } from "../errors.js";
import type { JobState } from "../job.js";
import type { DependencyFailurePolicy, InsertResult, NewJob } from "./types.js";

export const FINISHED_STATES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);

/** What a new job with dependencies (or a name, or dependents) becomes at insert. */
export interface PlannedJob {
  index: number;
  id: string;
  state: "waiting" | "pending" | "failed" | "cancelled";
  /** Dependencies not finished yet: the counter each of their finishes decrements. */
  left: number;
  node: string | null;
  policy: DependencyFailurePolicy | null;
  hasDependents: boolean;
  lastError: string | null;
  /** The ids it depends on (one edge each). */
  dependsOn: string[];
}

export interface DependencyPlan {
  jobs: PlannedJob[];
  /** Jobs stored before this call (or matched by key) that now have an unfinished dependent. */
  marked: string[];
}

/** Whether a batch needs the dependency work at all (most do not: the insert stays as it was). */
export function needsDependencyPlan(jobs: readonly NewJob[]): boolean {
  for (const job of jobs) if (job.dependencies || job.node) return true;
  return false;
}

/** The stored jobs a batch depends on, by id, each once, in id order (rows are locked in that order). */
export function dependencyIds(jobs: readonly NewJob[]): string[] {
  const ids = new Set<string>();
  for (const job of jobs) for (const id of job.dependencies?.ids ?? []) ids.add(id);
  return [...ids].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
}

/** Throws the ValidationError naming the dependency ids that match no job. */
export function checkDependenciesExist(ids: readonly string[], found: ReadonlyMap<string, JobState>): void {
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length === 0) return;
  const shown = missing.slice(0, 10).join(", ");
  throw new ValidationError(
    `dependsOn: no job with id ${shown}${missing.length > 10 ? ` (and ${missing.length - 10} more)` : ""}; nothing was stored`,
  );
}

/** The last error of a job a dependency's failure resolved. */
export function dependencyError(id: string, state: string): string {
  return `dependency job ${id} ${state === "cancelled" ? "was cancelled" : "failed"}`;
}

/**
 * Each created job's state and counter from its dependencies' states: `existing` holds the
 * states of the stored jobs named by id (read under lock in the inserting transaction), and
 * rows of the same call are planned in order (a flow comes in topological order).
 */
export function planDependencies(
  jobs: readonly NewJob[],
  results: readonly InsertResult[],
  existing: ReadonlyMap<string, JobState>,
): DependencyPlan {
  const planned = new Array<PlannedJob | undefined>(jobs.length);
  const marked = new Set<string>();
  const stateOf = (id: string, state: JobState) => {
    if (!FINISHED_STATES.has(state)) marked.add(id);
    return state;
  };
  for (let i = 0; i < jobs.length; i++) {
    const input = jobs[i];
    const result = results[i];
    if (!result.created || (!input.dependencies && !input.node)) continue;
    const deps: Array<{ id: string; state: JobState }> = [];
    for (const id of input.dependencies?.ids ?? []) deps.push({ id, state: existing.get(id) as JobState });
    for (const r of input.dependencies?.rows ?? []) {
      const id = results[r].job.id;
      const state = planned[r]?.state ?? results[r].job.state;
      deps.push({ id, state });
      const p = planned[r];
      if (p && !FINISHED_STATES.has(state)) p.hasDependents = true;
    }
    let left = 0;
    let culprit: { id: string; state: JobState } | null = null;
    for (const dep of deps) {
      if (dep.state === "failed" || dep.state === "cancelled") culprit ??= dep;
      else if (dep.state !== "completed") left++;
    }
    const policy = input.dependencies?.onFailure ?? null;
    let state: PlannedJob["state"] = left > 0 ? "waiting" : "pending";
    let lastError: string | null = null;
    if (culprit && (policy === "fail" || policy === "cancel")) {
      state = policy === "fail" ? "failed" : "cancelled";
      lastError = dependencyError(culprit.id, culprit.state);
    }
    if (state === "waiting" || state === "pending") {
      // Only an unfinished dependency needs to know it has a dependent waiting for it.
      for (const dep of deps) stateOf(dep.id, dep.state);
    }
    planned[i] = {
      index: i,
      id: result.job.id,
      state,
      left,
      node: input.node ?? null,
      policy,
      hasDependents: false,
      lastError,
      dependsOn: deps.map((d) => d.id),
    };
  }
  const list = planned.filter((p): p is PlannedJob => p !== undefined);
  // The flags of this call's own jobs are written with their rows; `marked` is for the others.
  for (const p of list) marked.delete(p.id);
  return { jobs: list, marked: [...marked] };
}

/** Sets the planned state on the records insertJobs returns. */
export function applyPlanToResults(plan: DependencyPlan, results: InsertResult[], now: Date): void {
  for (const p of plan.jobs) {
    const job = results[p.index].job;
    job.state = p.state;
    job.lastError = p.lastError;
    if (p.state === "failed" || p.state === "cancelled") job.finishedAt = new Date(now);
  }
}

/** A waiting job, as resolving its dependencies needs it. */
export interface WaitingJob {
  left: number;
  policy: DependencyFailurePolicy | null;
}

/** What a waiting job becomes when `resolved` of its dependencies finished, `culprit` the first that did not complete. */
export interface Resolution {
  state: "waiting" | "pending" | "failed" | "cancelled";
  left: number;
  lastError: string | null;
}

export function resolveDependent(
  job: WaitingJob,
  resolved: number,
  culprit: { id: string; state: string } | null,
): Resolution {
  const left = Math.max(0, job.left - resolved);
  if (culprit && (job.policy === "fail" || job.policy === null)) {
    return { state: "failed", left, lastError: dependencyError(culprit.id, culprit.state) };
  }
  if (culprit && job.policy === "cancel") {
    return { state: "cancelled", left, lastError: dependencyError(culprit.id, culprit.state) };
  }
  return { state: left === 0 ? "pending" : "waiting", left, lastError: null };
}
