export type {
  Alert,
  AlertOptions,
  AlertRule,
  AlertWatcher,
  DlqGrowthRule,
  FailureRateRule,
  WebhookOptions,
} from "./alerts.js";
export { watchAlerts } from "./alerts.js";
export type { Backoff } from "./backoff.js";
export type {
  DependencyFailurePolicy,
  DependencyRef,
  EnqueueFlowOptions,
  FlowNode,
  FlowSpec,
  LinkView,
} from "./dependencies.js";
export { MAX_FLOW_JOBS } from "./dependencies.js";
export type { Duration } from "./duration.js";
export { parseDuration } from "./duration.js";
export type { EnqueuedFlow } from "./enqueue-flow.js";
export type {
  EnqueuedJob,
  EnqueueManyItem,
  EnqueueOptions,
  ErrandEvents,
  FlowPause,
  FlowThrottle,
  JobEvent,
  OpenErrandOptions,
} from "./errand.js";
export { Errand } from "./errand.js";
export type { JobEventName, JobHandle, WaitOptions } from "./errand-results.js";
export type { Classification, ErrorKind } from "./errors.js";
export { ErrandError, JobTimeoutError, PermanentError, RetryableError, ValidationError } from "./errors.js";
export type { FlowKeyFn, FlowOptions } from "./flow.js";
export type { FetchHandler, HttpOptions } from "./http/app.js";
export { createFetchHandler } from "./http/app.js";
export type { FastifyScope } from "./http/fastify.js";
export { toFastifyPlugin } from "./http/fastify.js";
export type { HonoContextLike } from "./http/hono.js";
export { toHonoHandler } from "./http/hono.js";
export { toNodeHandler } from "./http/node.js";
export { assertServeSafety } from "./http/security.js";
export type { TickHandlerOptions } from "./http/tick.js";
export { createTickHandler } from "./http/tick.js";
export type {
  AttemptOutcome,
  AttemptRecord,
  DependencyLink,
  DependencyResults,
  JobContext,
  JobDefinition,
  JobLogLevel,
  JobLogLine,
  JobRecord,
  JobState,
  OnceOptions,
} from "./job.js";
export { defineJob, JOB_STATES } from "./job.js";
export type { Logger } from "./logger.js";
export { createLogger, silentLogger } from "./logger.js";
export { openErrand } from "./open-errand.js";
export { fromDrizzle } from "./orm/drizzle.js";
export { fromKnex } from "./orm/knex.js";
export { fromKysely } from "./orm/kysely.js";
export { fromPrisma } from "./orm/prisma.js";
export type { QueueOverview, ResumeFlowOptions } from "./queue-pause.js";
export type { FiredSlot, FireResult, ScheduleByHand, ScheduleOptions } from "./schedule/scheduler.js";
export type { TickOptions, TickResult } from "./schedule/tick.js";
export { runTick } from "./schedule/tick.js";
export { MemoryStore } from "./store/memory/index.js";
// `Store` (the backend interface) is not exported: a custom backend cannot be trusted without the
// conformance suite every shipped store passes (test/conformance/), and that suite is not part of
// the package yet. Until it is, the backends are the three errand ships (by URL), and
// `openErrand({ store })` is for a MemoryStore in tests.
export type {
  JobFilter,
  JobLinks,
  JobPage,
  QueuePause,
  QueueStats,
  ScheduleRecord,
  ThroughputBucket,
  WorkerInfo,
} from "./store/types.js";
export type { DebounceOptions, OnConflict, UniqueOptions, UniqueWhile } from "./unique.js";
export type { WaitForReason } from "./wait-error.js";
export { WaitForError } from "./wait-error.js";
export type { WaitReason } from "./waiting.js";
export type { ProcessJobsOptions, ProcessJobsResult } from "./worker/drain.js";
export type { RunUntilSignalOptions, ShutdownReport } from "./worker/process.js";
export { runUntilSignal } from "./worker/process.js";
export type { ThreadJobInfo } from "./worker/thread.js";
export { runInThread } from "./worker/thread.js";
// The Worker's type only: workers are made by `errand.work()`; the constructor is internal.
export type { QueueOptions, StopResult, Worker, WorkerOptions } from "./worker/worker.js";
