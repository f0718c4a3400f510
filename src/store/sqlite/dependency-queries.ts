/** The SQLite store's statements for dependencies (dependencies.ts; migration 9). */

/** A stored dependency's state, read in the inserting transaction (which holds the write lock). */
export const DEPENDENCY_STATE = "SELECT state FROM errand_jobs WHERE id = ?";

/** A new job's planned state, counter, name, policy and flag (store/dependency-plan.ts). */
export const DEPENDENCY_SET = `
UPDATE errand_jobs
SET state = @state, dependencies_left = @left, node = @node, on_dependency_failure = @policy,
    has_dependents = @hasDependents, last_error = @lastError, finished_at = @finishedAt
WHERE id = @id`;

export const DEPENDENCY_EDGE =
  "INSERT OR IGNORE INTO errand_job_dependencies (depends_on, job_id) VALUES (@dependsOn, @id)";

/** A stored job that now has a dependent waiting for it. */
export const DEPENDENCY_MARK = "UPDATE errand_jobs SET has_dependents = 1 WHERE id = ?";

/** The waiting dependents of a job that just finished, in id order. */
export const DEPENDENTS_WAITING = `
SELECT j.id, j.queue, j.dependencies_left AS "left", j.on_dependency_failure AS policy, j.has_dependents
FROM errand_job_dependencies e JOIN errand_jobs j ON j.id = e.job_id
WHERE e.depends_on = ? AND j.state = 'waiting'
ORDER BY j.id`;

/** A waiting job resolved (dependency-plan.ts resolveDependent); due now at the earliest when it becomes pending. */
export const DEPENDENT_RESOLVE = `
UPDATE errand_jobs
SET state = @state, dependencies_left = @left, last_error = coalesce(@lastError, last_error),
    finished_at = @finishedAt, run_at = CASE WHEN @state = 'pending' THEN max(run_at, @now) ELSE run_at END
WHERE id = @id AND state = 'waiting'`;

/** A job's dependencies, with their results. */
export const LINKED_DEPENDENCIES = `
SELECT j.id, j.node, j.name, j.queue, j.state, j.result
FROM errand_job_dependencies e JOIN errand_jobs j ON j.id = e.depends_on
WHERE e.job_id = ?
ORDER BY j.id`;

/** A job's dependents. */
export const LINKED_DEPENDENTS = `
SELECT j.id, j.node, j.name, j.queue, j.state
FROM errand_job_dependencies e JOIN errand_jobs j ON j.id = e.job_id
WHERE e.depends_on = ?
ORDER BY j.id`;
