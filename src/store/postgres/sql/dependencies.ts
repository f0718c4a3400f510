/** Dependencies (dependencies.ts; migrations.ts version 9). */
import { JOBS, NOW, notifyQueues } from "./fragments.js";

const EDGES = "{{schema}}.job_dependencies";

/**
 * The stored dependencies $1 of a batch being inserted, locked in id order: a concurrent finish
 * of one of them waits for the insert's commit (and then sees its has_dependents flag), or the
 * insert waits for the finish and reads the finished state.
 */
export const LOCK_DEPENDENCIES = `
SELECT id, state FROM ${JOBS} WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`;

/**
 * The planned state of the new jobs (store/dependency-plan.ts): $1 id, $2 state, $3 dependencies
 * left, $4 node, $5 policy, $6 has dependents, $7 last error.
 */
export const SET_DEPENDENCIES = `
UPDATE ${JOBS} j
SET state = u.state, dependencies_left = u.dependencies_left, node = u.node,
    on_dependency_failure = u.policy, has_dependents = u.has_dependents, last_error = u.last_error,
    finished_at = CASE WHEN u.state IN ('failed', 'cancelled') THEN ${NOW} END
FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::text[], $6::boolean[], $7::text[])
  AS u(id, state, dependencies_left, node, policy, has_dependents, last_error)
WHERE j.id = u.id`;

/** Edges: $1 dependencies, $2 dependents. */
export const INSERT_DEPENDENCY_EDGES = `
INSERT INTO ${EDGES} (depends_on, job_id)
SELECT * FROM unnest($1::bigint[], $2::bigint[]) ON CONFLICT DO NOTHING`;

/** Stored jobs $1 that now have a dependent waiting for them (locked by LOCK_DEPENDENCIES). */
export const MARK_DEPENDENCIES = `
UPDATE ${JOBS} SET has_dependents = true WHERE id = ANY($1::bigint[]) AND has_dependents IS NOT TRUE`;

/**
 * Jobs $1 that just finished in states $2, in the finishing transaction: their waiting dependents
 * count them off (dependency-plan.ts resolveDependent, in SQL). The dependents are locked in id
 * order first (two finishes sharing a fan-in job cannot deadlock on it), and every new value is
 * computed in SET from the row version the UPDATE locked, so concurrent finishes of two
 * dependencies of one job both count: neither reads a counter the other is changing.
 * Returns the resolved rows: the caller goes on with those that failed or were cancelled and
 * have dependents of their own.
 */
export const RESOLVE_DEPENDENTS = `
WITH f AS (
  SELECT * FROM unnest($1::bigint[], $2::text[]) AS f(id, state)
), d AS (
  SELECT e.job_id AS id, count(*)::int AS n,
         (array_agg(f.id ORDER BY f.id) FILTER (WHERE f.state <> 'completed'))[1] AS culprit,
         (array_agg(f.state ORDER BY f.id) FILTER (WHERE f.state <> 'completed'))[1] AS culprit_state
  FROM f JOIN ${EDGES} e ON e.depends_on = f.id
  GROUP BY e.job_id
), locked AS (
  SELECT j.id FROM ${JOBS} j WHERE j.id IN (SELECT id FROM d) AND j.state = 'waiting' ORDER BY j.id FOR UPDATE
), resolved AS (
  UPDATE ${JOBS} j
  SET (state, dependencies_left, last_error, finished_at, run_at) = (
    SELECT v.state, v.left_after,
           CASE WHEN v.state IN ('failed', 'cancelled')
                THEN 'dependency job ' || d.culprit || CASE WHEN d.culprit_state = 'cancelled' THEN ' was cancelled' ELSE ' failed' END
                ELSE j.last_error END,
           CASE WHEN v.state IN ('failed', 'cancelled') THEN ${NOW} ELSE j.finished_at END,
           CASE WHEN v.state = 'pending' THEN greatest(j.run_at, ${NOW}) ELSE j.run_at END
    FROM (
      SELECT CASE WHEN d.culprit IS NOT NULL AND coalesce(j.on_dependency_failure, 'fail') = 'fail' THEN 'failed'
                  WHEN d.culprit IS NOT NULL AND j.on_dependency_failure = 'cancel' THEN 'cancelled'
                  WHEN coalesce(j.dependencies_left, 0) - d.n <= 0 THEN 'pending'
                  ELSE 'waiting' END AS state,
             greatest(coalesce(j.dependencies_left, 0) - d.n, 0) AS left_after
    ) v
  )
  FROM d
  WHERE j.id = d.id AND j.id IN (SELECT id FROM locked) AND j.state = 'waiting'
  RETURNING j.id, j.queue, j.state, j.has_dependents
)
SELECT r.id, r.queue, r.state, r.has_dependents, ${notifyQueues("resolved WHERE state = 'pending'")} AS notified
FROM resolved r`;

/** A job's dependencies ($1), with their results. */
export const LINKED_DEPENDENCIES = `
SELECT j.id, j.node, j.name, j.queue, j.state, j.result
FROM ${EDGES} e JOIN ${JOBS} j ON j.id = e.depends_on
WHERE e.job_id = $1
ORDER BY j.id`;

/** A job's dependents ($1). */
export const LINKED_DEPENDENTS = `
SELECT j.id, j.node, j.name, j.queue, j.state
FROM ${EDGES} e JOIN ${JOBS} j ON j.id = e.job_id
WHERE e.depends_on = $1
ORDER BY j.id`;
