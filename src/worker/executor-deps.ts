/** What the executor needs to run one queue's jobs, made from a worker's own deps once per queue. */
import type { Classification } from "../errors.js";
import { DEFAULT_PAYLOAD_LIMIT } from "../payload.js";
import type { ExecutorDeps } from "./active-job.js";
import { emitSafely } from "./outcome-events.js";
import type { Deps } from "./types.js";

export function executorDeps(
  deps: Deps,
  workerId: string,
  classify?: (err: unknown) => Classification | undefined,
): ExecutorDeps {
  return {
    store: deps.store,
    workerId,
    log: deps.log,
    logPayloads: deps.logPayloads,
    payloadLimit: deps.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT,
    findJob: deps.findJob,
    knownJobNames: deps.knownJobNames,
    classify,
    onFlowPaused: (pause) => emitSafely(deps.events, deps.log, "flowPaused", pause),
  };
}
