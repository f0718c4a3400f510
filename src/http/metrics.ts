/**
 * GET /metrics in the Prometheus text format (prom-client, on a Registry of errand's own —
 * never prom-client's global one, so it neither collides with nor leaks into an app's metrics).
 *
 * Two kinds of numbers, and they mean different things:
 *
 * - Gauges read from the store at scrape time (`errand.stats()`, `listWorkers`, `pausedQueues`):
 *   jobs by queue and state, DLQ depth, oldest pending age, paused queues, live workers. They describe the whole database,
 *   so every process scraping the same store reports the same values (aggregate with max(), not sum()).
 * - Counters and histograms fed by this process's worker events (`completed`, `retrying`,
 *   `failed`, `lost`): they count only what the workers of THIS process did since it started
 *   (and since this handler was created). Sum them across processes; they reset on restart,
 *   which Prometheus' rate()/increase() handle.
 *
 * Requires the dashboard token (Bearer or the dashboard cookie) unless `metricsPublic: true`.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Errand, FlowPause, FlowThrottle, JobEvent } from "../errand.js";
import type { RescuedJob } from "../store/types.js";
import { WORKER_STALE_MS } from "./api.js";
import { guard, jsonResponse } from "./security.js";
import type { RouteContext } from "./types.js";

const STATES = ["waiting", "pending", "delayed", "running", "completed", "failed", "cancelled"] as const;

/** errand's metrics for one Errand instance: a Registry and the instruments on it. */
export interface ErrandMetrics {
  registry: Registry;
  /** Refreshes the store-backed gauges and renders every metric as Prometheus text. */
  scrape(): Promise<string>;
}

const byErrand = new WeakMap<Errand, ErrandMetrics>();

/**
 * The metrics of an Errand instance, created on first use (the HTTP handler calls this when
 * it is created, so counters start counting then). One Registry per Errand: several handlers
 * over one Errand share it, so no job is counted twice.
 */
export function errandMetrics(errand: Errand): ErrandMetrics {
  let metrics = byErrand.get(errand);
  if (!metrics) {
    metrics = createMetrics(errand);
    byErrand.set(errand, metrics);
  }
  return metrics;
}

function createMetrics(errand: Errand): ErrandMetrics {
  const registry = new Registry();
  const registers = [registry];
  const jobs = new Gauge({
    name: "errand_jobs",
    help: "Jobs in the store by queue and state (waiting = for dependencies, pending = due now, delayed = pending with a future run_at)",
    labelNames: ["queue", "state"] as const,
    registers,
  });
  const dlq = new Gauge({
    name: "errand_dlq_depth",
    help: "Jobs in the dead-letter queue (state failed) by queue",
    labelNames: ["queue"] as const,
    registers,
  });
  const oldest = new Gauge({
    name: "errand_oldest_pending_age_seconds",
    help: "Age of the oldest due pending job by queue (0 when none is waiting)",
    labelNames: ["queue"] as const,
    registers,
  });
  const paused = new Gauge({
    name: "errand_queue_paused",
    help: "1 while the queue is paused (errand queue pause), else 0",
    labelNames: ["queue"] as const,
    registers,
  });
  const workers = new Gauge({
    name: "errand_workers",
    help: `Workers that heartbeat within the last ${WORKER_STALE_MS / 1000}s`,
    registers,
  });
  const labelNames = ["queue", "name"] as const;
  const completed = new Counter({
    name: "errand_jobs_completed_total",
    help: "Jobs completed by this process's workers",
    labelNames,
    registers,
  });
  const retried = new Counter({
    name: "errand_jobs_retried_total",
    help: "Failed attempts that will be retried, by this process's workers",
    labelNames,
    registers,
  });
  const failed = new Counter({
    name: "errand_jobs_failed_total",
    help: "Jobs moved to the dead-letter queue by this process's workers",
    labelNames,
    registers,
  });
  const lost = new Counter({
    name: "errand_jobs_lost_total",
    help: "Jobs whose lease expired, rescued by this process's workers",
    labelNames: ["queue", "name"] as const,
    registers,
  });
  const runTime = new Histogram({
    name: "errand_job_run_seconds",
    help: "Run time of an attempt (handler start to outcome), by this process's workers",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600],
    registers,
  });
  const wait = new Histogram({
    name: "errand_job_wait_seconds",
    help: "Enqueue-to-start: from when the job was due (its enqueue, or run_at for delayed jobs and retries) to the start of the attempt",
    labelNames,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
    registers,
  });

  const throttled = new Counter({
    name: "errand_flow_throttled_claims_total",
    help: "Claims of this process's workers that flow control held due jobs back from (a limit was reached), by queue",
    labelNames: ["queue"] as const,
    registers,
  });
  const held = new Counter({
    name: "errand_flow_held_jobs_total",
    help: "Due jobs flow control held back from this process's claims (limit waits), summed over claims, by queue",
    labelNames: ["queue"] as const,
    registers,
  });
  const flowPauses = new Counter({
    name: "errand_flow_pauses_total",
    help: "Flow budgets paused by a rate-limited answer (429, rateLimited) in this process's workers, by queue",
    labelNames: ["queue"] as const,
    registers,
  });

  const observe = (counter: Counter<"queue" | "name">) => (event: JobEvent) => {
    const labels = { queue: event.job.queue, name: event.job.name };
    counter.inc(labels);
    if (typeof event.durationMs === "number") runTime.observe(labels, event.durationMs / 1000);
    const due = event.job.runAt ? new Date(event.job.runAt).getTime() : Number.NaN;
    const started = event.startedAt ? new Date(event.startedAt).getTime() : Number.NaN;
    // The due time comes from the store's clock and the start from the worker's: clamp small skews.
    if (Number.isFinite(due) && Number.isFinite(started))
      wait.observe(labels, Math.max(0, started - due) / 1000);
  };
  errand.on("completed", observe(completed));
  errand.on("retrying", observe(retried));
  errand.on("failed", observe(failed));
  errand.on("lost", (job: RescuedJob) => lost.inc({ queue: job.queue, name: job.name }));
  errand.on("throttled", (t: FlowThrottle) => {
    throttled.inc({ queue: t.queue });
    held.inc({ queue: t.queue }, t.held);
  });
  errand.on("flowPaused", (p: FlowPause) => flowPauses.inc({ queue: p.queue }));

  let lock: Promise<unknown> = Promise.resolve();
  async function refresh(): Promise<void> {
    const [stats, live, pauses] = await Promise.all([
      errand.stats(),
      errand.listWorkers(WORKER_STALE_MS),
      errand.pausedQueues(),
    ]);
    jobs.reset();
    dlq.reset();
    oldest.reset();
    paused.reset();
    const queues = new Set([
      ...errand.queueNames,
      ...stats.map((s) => s.queue),
      ...pauses.map((p) => p.queue),
    ]);
    for (const queue of queues) {
      paused.set({ queue }, pauses.some((p) => p.queue === queue) ? 1 : 0);
      const s = stats.find((x) => x.queue === queue);
      for (const state of STATES) jobs.set({ queue, state }, s ? s[state] : 0);
      dlq.set({ queue }, s ? s.failed : 0);
      oldest.set({ queue }, s?.oldestPendingMs ? s.oldestPendingMs / 1000 : 0);
    }
    workers.set(live.length);
  }
  return {
    registry,
    // Scrapes are serialized so one scrape's reset() never blanks another's half-rendered gauges.
    scrape() {
      const render = () => refresh().then(() => registry.metrics());
      const next = lock.then(render, render);
      lock = next.catch(() => {});
      return next;
    },
  };
}

export async function handleMetrics(request: Request, ctx: RouteContext): Promise<Response | null> {
  if (ctx.path !== "/metrics") return null;
  if (!ctx.options.metricsPublic) {
    const gate = guard(request, ctx.options, false);
    if (!gate.ok) return gate.response;
  }
  if (request.method !== "GET" && request.method !== "HEAD") {
    return jsonResponse(405, { error: "use GET /metrics" }, { allow: "GET" });
  }
  const metrics = errandMetrics(ctx.errand);
  const text = await metrics.scrape();
  return new Response(request.method === "HEAD" ? null : text, {
    status: 200,
    headers: {
      "content-type": metrics.registry.contentType,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}
