/**
 * Dependencies on the Postgres store (store/dependency-plan.ts says what they mean): the edges
 * of a batch written in its inserting transaction, the resolution of dependents in a finishing
 * transaction, and a job's links for the job view and ctx.dependencies.
 */
import type { DependencyLink, JobState } from "../../job.js";
import {
  applyPlanToResults,
  checkDependenciesExist,
  dependencyIds,
  FINISHED_STATES,
  planDependencies,
} from "../dependency-plan.js";
import type { InsertResult, JobLinks, NewJob } from "../types.js";
import type { Queryable } from "./connection.js";
import type { Db } from "./db.js";
import { isJobId, type Row } from "./rows.js";

/** The stored dependencies' states, locked; throws (before any write) when one names no job. */
export async function lockDependencies(
  db: Db,
  on: Queryable,
  jobs: NewJob[],
): Promise<Map<string, JobState>> {
  const ids = dependencyIds(jobs);
  const found = new Map<string, JobState>();
  const valid = ids.filter(isJobId);
  if (valid.length > 0) {
    const { rows } = await db.run("LOCK_DEPENDENCIES", [valid], on);
    for (const r of rows as Row[]) found.set(String(r.id), r.state as JobState);
  }
  checkDependenciesExist(ids, found);
  return found;
}

/** Writes the planned states and edges of a batch just inserted, in its transaction. */
export async function writeDependencies(
  db: Db,
  on: Queryable,
  jobs: NewJob[],
  results: InsertResult[],
  existing: Map<string, JobState>,
): Promise<void> {
  const plan = planDependencies(jobs, results, existing);
  if (plan.jobs.length > 0) {
    await db.run(
      "SET_DEPENDENCIES",
      [
        plan.jobs.map((p) => p.id),
        plan.jobs.map((p) => p.state),
        plan.jobs.map((p) => p.left),
        plan.jobs.map((p) => p.node),
        plan.jobs.map((p) => p.policy),
        plan.jobs.map((p) => p.hasDependents),
        plan.jobs.map((p) => p.lastError),
      ],
      on,
    );
    const from: string[] = [];
    const to: string[] = [];
    for (const p of plan.jobs) {
      for (const dep of p.dependsOn) {
        from.push(dep);
        to.push(p.id);
      }
    }
    if (from.length > 0) await db.run("INSERT_DEPENDENCY_EDGES", [from, to], on);
  }
  if (plan.marked.length > 0) await db.run("MARK_DEPENDENCIES", [plan.marked], on);
  applyPlanToResults(plan, results, new Date(Number(results[0]?.job.createdAt.getTime() ?? Date.now())));
}

/**
 * Jobs that just finished (inside the finishing transaction, on its client): resolves their
 * waiting dependents, and theirs in turn when a failure fails or cancels them.
 */
export async function resolveDependents(
  db: Db,
  on: Queryable,
  finished: Array<{ id: string; state: string }>,
): Promise<void> {
  let done = finished.filter((f) => FINISHED_STATES.has(f.state));
  while (done.length > 0) {
    const { rows } = await db.run(
      "RESOLVE_DEPENDENTS",
      [done.map((d) => d.id), done.map((d) => d.state)],
      on,
    );
    done = (rows as Row[])
      .filter((r) => r.has_dependents && (r.state === "failed" || r.state === "cancelled"))
      .map((r) => ({ id: String(r.id), state: r.state as string }));
  }
}

export async function jobLinks(db: Db, id: string): Promise<JobLinks> {
  if (!isJobId(id)) return { dependencies: [], dependents: [] };
  const [deps, dependents] = await Promise.all([
    db.run("LINKED_DEPENDENCIES", [id]),
    db.run("LINKED_DEPENDENTS", [id]),
  ]);
  const link = (r: Row): DependencyLink => ({
    id: String(r.id),
    node: (r.node as string | null) ?? null,
    name: r.name as string,
    queue: r.queue as string,
    state: r.state as JobState,
    result: r.result === undefined ? null : (r.result ?? null),
  });
  return { dependencies: deps.rows.map(link), dependents: dependents.rows.map(link) };
}
