/** The worker's own types: its dependencies, what a stop reports, and its test signals. */
import type { EventEmitter } from "node:events";
import type { AnyJobDefinition } from "../job.js";
import type { Logger } from "../logger.js";
import type { FlowLimits, RescuedJob, Store } from "../store/types.js";

/**
 * Test signals (River's testsignal): moments a test can await instead of sleeping. Internal, not
 * part of the promise of the public API; emitting with no listener costs next to nothing.
 */
export interface WorkerSignals {
  /** A queue's producer found fewer jobs than it asked for and waits for a wake-up, a due time or the poll. */
  idle: [queue: string];
  /** A heartbeat extended this worker's leases (or found none to extend). */
  heartbeat: [];
  /** A rescue pass ended; the jobs it returned to pending (often none). */
  rescued: [jobs: RescuedJob[]];
}

export interface StopResult {
  /** false when the hard timeout was reached and jobs were released. */
  clean: boolean;
  released: number;
  /** The store did not answer by the stop's deadline: outcomes were left unwritten. */
  abandoned?: boolean;
}

export interface Deps {
  store: Store;
  log: Logger;
  events: EventEmitter;
  logPayloads: boolean;
  /** Largest result or ctx.once value in bytes (JSON). Default DEFAULT_PAYLOAD_LIMIT (1 MiB). */
  payloadLimit?: number;
  findJob(name: string): AnyJobDefinition | undefined;
  knownJobNames(): string[];
  /**
   * The flow limits a queue is claimed with (from its job definitions), or null for none; a
   * ValidationError when its definitions disagree. Absent: no flow control.
   */
  flowLimits?(queue: string): FlowLimits | null;
  /** Called on every maintenance tick (schedules); errors are logged. */
  maintenance?: () => Promise<void>;
}
