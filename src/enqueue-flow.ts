/**
 * enqueueFlow's preparation: every node of a flow checked and turned into a row, in dependency
 * order, with its edges — before anything is stored. The rows then go to the store in one
 * insertJobs call: one transaction (the caller's, with `tx`).
 */
import { checkPolicy, type FlowNode, type FlowSpec, planFlow } from "./dependencies.js";
import type { EnqueuedJob } from "./errand-types.js";
import type { JobDefinition } from "./job.js";
import type { NewJob } from "./store/types.js";

export interface PreparedFlow {
  names: string[];
  rows: Array<NewJob | Promise<NewJob>>;
}

/** The flow's rows, in dependency order; `prepare` checks one node's payload and options. */
export function prepareFlow(
  spec: FlowSpec,
  resolve: (job: FlowNode["job"]) => JobDefinition<unknown, unknown>,
  prepare: (def: JobDefinition<unknown, unknown>, node: FlowNode, what: string) => NewJob | Promise<NewJob>,
): PreparedFlow {
  const plan = planFlow(spec);
  const onFailure = checkPolicy(spec.onDependencyFailure, "enqueueFlow");
  const rows: Array<NewJob | Promise<NewJob>> = [];
  try {
    for (let i = 0; i < plan.nodes.length; i++) {
      const node = plan.nodes[i];
      const name = plan.names[i];
      // The node is its own options (priority, delay, …); dependsOn is the flow's, set below.
      const options = { ...node, dependsOn: undefined, onDependencyFailure: undefined };
      const row = prepare(resolve(node.job), options, `flow job "${name}" payload`);
      const edges = plan.rows[i].length + plan.ids[i].length > 0;
      const withEdges = (r: NewJob): NewJob => {
        r.node = name;
        if (edges) r.dependencies = { ids: plan.ids[i], rows: plan.rows[i], onFailure };
        return r;
      };
      rows.push(row instanceof Promise ? row.then(withEdges) : withEdges(row));
    }
  } catch (err) {
    // Nodes already handed to an async schema: their outcome no longer matters.
    for (const row of rows) if (row instanceof Promise) row.catch(() => {});
    throw err;
  }
  return { names: plan.names, rows };
}

/** What enqueueFlow answers: each node's id and record by its name. */
export interface EnqueuedFlow<K extends string = string> {
  ids: Record<K, string>;
  jobs: Record<K, EnqueuedJob<unknown>>;
}

export function flowResult<K extends string>(names: string[], jobs: EnqueuedJob<unknown>[]): EnqueuedFlow<K> {
  const ids = {} as Record<K, string>;
  const byName = {} as Record<K, EnqueuedJob<unknown>>;
  names.forEach((name, i) => {
    ids[name as K] = jobs[i].id;
    byName[name as K] = jobs[i];
  });
  return { ids, jobs: byName };
}
