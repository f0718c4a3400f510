/**
 * Dependencies and flows, as the facade takes them: `dependsOn` of one enqueue, and a flow — a
 * tree or DAG of jobs enqueued in one call, one transaction — whose nodes refer to each other by
 * a local name. Checked here before anything is stored (names, a size limit, cycles); the
 * stores apply the edges (store/dependency-plan.ts).
 */
import type { Duration } from "./duration.js";
import { ValidationError } from "./errors.js";
import type { DependencyLink, JobDefinition } from "./job.js";
import { knownFields, onlyKnownFields, unknownFieldError } from "./known-fields.js";
import { quoted, storableString } from "./payload.js";
import type { DependencyFailurePolicy, JobLinks, TxHandle } from "./store/types.js";

export type { DependencyFailurePolicy };

/** Most jobs in one flow, and most dependencies of one job. */
export const MAX_FLOW_JOBS = 10_000;

const POLICIES: readonly DependencyFailurePolicy[] = ["fail", "cancel", "run"];

/**
 * The fields of a flow and of its nodes (FlowSpec, FlowNode); `key` is refused on its own below.
 * A node's `debounce` is taken as enqueue takes it (it sets the key and the run time): it worked
 * before nodes were checked, so it stays.
 */
const FLOW_FIELDS = knownFields("jobs", "onDependencyFailure");
const NODE_FIELDS = knownFields(
  "job",
  "payload",
  "dependsOn",
  "priority",
  "delay",
  "runAt",
  "maxAttempts",
  "debounce",
);

/** A node's fields: the known ones, and `key` and `onDependencyFailure` when undefined (refused above otherwise). */
function checkNodeFields(node: object, name: string): void {
  for (const field in node) {
    if (NODE_FIELDS.has(field)) continue;
    if (
      (field === "key" || field === "onDependencyFailure") &&
      (node as Record<string, unknown>)[field] === undefined
    )
      continue;
    throw unknownFieldError(field, NODE_FIELDS, `enqueueFlow: job "${name}"`);
  }
}

/** A stored job a new one depends on: its id, or anything with an `id` (a record enqueue returned). */
export type DependencyRef = string | { id: string };

/** One node of a flow: a job, its payload, its options, and what it depends on. */
export interface FlowNode<P = unknown> {
  job: JobDefinition<P, unknown> | string;
  payload: P;
  /** Nodes of the same flow (by name) or stored jobs (`{ id }`) that must complete first. */
  dependsOn?: ReadonlyArray<string | { id: string }>;
  priority?: number;
  delay?: Duration;
  runAt?: Date | string;
  maxAttempts?: number;
}

export interface FlowSpec<T extends Record<string, unknown> = Record<string, unknown>> {
  /**
   * The nodes by name; a name is local to this flow (shown in the job view,
   * `ctx.dependencies().byName`): 1 to 512 characters, without NUL characters or lone surrogates.
   */
  jobs: { [K in keyof T]: FlowNode<T[K]> };
  /**
   * What happens to a node waiting for a dependency that fails for good or is cancelled: `fail`
   * it (default), `cancel` it, or `run` it anyway once every dependency finished.
   */
  onDependencyFailure?: DependencyFailurePolicy;
}

export interface EnqueueFlowOptions {
  /** The caller's transaction, as for enqueue: the flow exists iff it commits. */
  tx?: TxHandle;
}

/** A link as the job view shows it (API, CLI, dashboard): without the result — a fan-in job may have thousands. */
export type LinkView = Omit<DependencyLink, "result">;

export function viewLinks(links: JobLinks): { dependencies: LinkView[]; dependents: LinkView[] } {
  const view = ({ result: _result, ...rest }: DependencyLink): LinkView => rest;
  return { dependencies: links.dependencies.map(view), dependents: links.dependents.map(view) };
}

export function checkPolicy(value: unknown, what: string): DependencyFailurePolicy {
  if (value === undefined) return "fail";
  if (!POLICIES.includes(value as DependencyFailurePolicy)) {
    throw new ValidationError(
      `${what}: onDependencyFailure must be one of ${POLICIES.map((p) => `"${p}"`).join(", ")}; got ${JSON.stringify(value)}`,
    );
  }
  return value as DependencyFailurePolicy;
}

/** A job id as the stores write them (a positive integer), or the error naming the bad reference. */
function checkId(ref: unknown, what: string): string {
  const id = typeof ref === "object" && ref !== null && "id" in ref ? (ref as { id: unknown }).id : ref;
  const text = typeof id === "number" ? String(id) : id;
  if (typeof text !== "string" || !/^[1-9][0-9]{0,18}$/.test(text)) {
    throw new ValidationError(
      `${what}: a dependency must be a job id or a job record; got ${JSON.stringify(ref)}`,
    );
  }
  return text;
}

/** The stored job ids of enqueue's `dependsOn`, each once. */
export function checkDependsOn(value: unknown, what: string): string[] {
  if (!Array.isArray(value)) throw new ValidationError(`${what}: dependsOn must be an array of job ids`);
  if (value.length > MAX_FLOW_JOBS) {
    throw new ValidationError(`${what}: dependsOn has ${value.length} jobs; at most ${MAX_FLOW_JOBS}`);
  }
  return [...new Set(value.map((ref) => checkId(ref, what)))];
}

/** A flow's nodes in dependency order, each with its in-flow dependencies (positions) and stored ones (ids). */
export interface FlowPlan {
  names: string[];
  nodes: FlowNode[];
  rows: number[][];
  ids: string[][];
}

/**
 * Orders the nodes so that each comes after what it depends on (Kahn's algorithm, stable in
 * the order given), or throws a ValidationError naming an unknown node, the size limit or a cycle.
 */
export function planFlow(spec: FlowSpec): FlowPlan {
  if (!spec || typeof spec !== "object" || !spec.jobs || typeof spec.jobs !== "object") {
    throw new ValidationError(
      "enqueueFlow takes { jobs: { name: { job, payload, dependsOn? } }, onDependencyFailure? }",
    );
  }
  onlyKnownFields(spec, FLOW_FIELDS, "enqueueFlow: the flow");
  const given = Object.keys(spec.jobs);
  if (given.length === 0) throw new ValidationError("enqueueFlow: the flow has no jobs");
  if (given.length > MAX_FLOW_JOBS) {
    throw new ValidationError(
      `enqueueFlow: the flow has ${given.length} jobs; at most ${MAX_FLOW_JOBS} per flow`,
    );
  }
  const position = new Map(given.map((name, i) => [name, i]));
  const localDeps: number[][] = [];
  const storedDeps: string[][] = [];
  for (const name of given) {
    // Stored with the job (its `node`): a name no store can hold is refused, not changed.
    storableString(name, `enqueueFlow: the flow job name ${quoted(name)}`);
    const node = (spec.jobs as Record<string, FlowNode>)[name];
    if (!node || typeof node !== "object" || !("job" in node)) {
      throw new ValidationError(`enqueueFlow: job "${name}" must be { job, payload, dependsOn? }`);
    }
    if ("key" in node && (node as { key?: unknown }).key !== undefined) {
      throw new ValidationError(`enqueueFlow: job "${name}": key is not supported inside a flow`);
    }
    if ((node as { onDependencyFailure?: unknown }).onDependencyFailure !== undefined) {
      // Each job's own would be overruled by the flow's without a word: refused instead.
      throw new ValidationError(
        `enqueueFlow: job "${name}": onDependencyFailure is the whole flow's, given next to jobs: { jobs, onDependencyFailure }`,
      );
    }
    checkNodeFields(node, name);
    const local = new Set<number>();
    const stored = new Set<string>();
    const deps = node.dependsOn ?? [];
    if (!Array.isArray(deps))
      throw new ValidationError(`enqueueFlow: job "${name}": dependsOn must be an array`);
    for (const dep of deps) {
      if (typeof dep === "string") {
        const at = position.get(dep);
        if (at === undefined) {
          throw new ValidationError(
            `enqueueFlow: job "${name}" depends on ${quoted(dep)}, which is not a job of this flow (a stored job is given as { id })`,
          );
        }
        local.add(at);
      } else stored.add(checkId(dep, `enqueueFlow: job "${name}"`));
    }
    localDeps.push([...local]);
    storedDeps.push([...stored]);
  }
  const order = topologicalOrder(given, localDeps);
  const newPosition = new Map(order.map((old, i) => [old, i]));
  return {
    names: order.map((i) => given[i]),
    nodes: order.map((i) => (spec.jobs as Record<string, FlowNode>)[given[i]]),
    rows: order.map((i) => localDeps[i].map((d) => newPosition.get(d) as number)),
    ids: order.map((i) => storedDeps[i]),
  };
}

function topologicalOrder(names: string[], deps: number[][]): number[] {
  const waitingFor = deps.map((d) => d.length);
  const dependents: number[][] = names.map(() => []);
  deps.forEach((d, i) => {
    for (const dep of d) dependents[dep].push(i);
  });
  const order: number[] = [];
  const ready = names.map((_, i) => i).filter((i) => waitingFor[i] === 0);
  for (let k = 0; k < ready.length; k++) {
    const i = ready[k];
    order.push(i);
    for (const next of dependents[i]) if (--waitingFor[next] === 0) ready.push(next);
  }
  if (order.length === names.length) return order;
  throw new ValidationError(
    `enqueueFlow: the flow has a cycle: ${describeCycle(names, deps, waitingFor)}; nothing was stored`,
  );
}

/** One cycle among the nodes left unordered, as "a → b → a". */
function describeCycle(names: string[], deps: number[][], waitingFor: number[]): string {
  let at = waitingFor.findIndex((n) => n > 0);
  const seen = new Map<number, number>();
  const path: number[] = [];
  while (!seen.has(at)) {
    seen.set(at, path.length);
    path.push(at);
    at = deps[at].find((d) => waitingFor[d] > 0) as number;
  }
  // Edges point to dependencies: reverse the walk to read in run order.
  const reversed = path.slice(seen.get(at)).reverse();
  // Starting from the node given first reads like the flow as written.
  const first = reversed.indexOf(Math.min(...reversed));
  const cycle = [...reversed.slice(first), ...reversed.slice(0, first)];
  return [...cycle, cycle[0]].map((i) => JSON.stringify(names[i])).join(" → ");
}
