/**
 * Alerts on the dead-letter queue: rules checked periodically against the store, an `onAlert`
 * hook, an error log line and an optional webhook — once per episode, not once per failed job.
 *
 * ```ts
 * const alerts = watchAlerts(errand, [
 *   { queue: "emails", dlqGrowth: { count: 20, window: "10m" } },      // ≥ 20 jobs failed for good within 10 minutes
 *   { failureRate: { above: 0.2, window: "10m", minJobs: 20 } },        // every queue: > 20 % of finished jobs failed
 * ], { onAlert: (a) => pager.page(a.message), webhook: "https://hooks.example.com/errand", interval: "30s" });
 * // …
 * alerts.stop();
 * ```
 *
 * What is measured. Both rules read `store.throughput()` over their window — the jobs that
 * FINISHED within it, from the store, so they see every worker process on the database, not
 * just this one:
 * - `dlqGrowth`: the number of jobs that moved to the dead-letter queue (state `failed`) within
 *   the window is at least `count`.
 * - `failureRate`: failed / (completed + failed) within the window is above `above`, counted
 *   only once at least `minJobs` jobs finished in it (default 10), so three failures out of
 *   four do not page anyone. A retried attempt is not a failure; a job that ends in the DLQ is.
 *
 * Episodes. A rule without `queue` is checked for each queue separately. An alert fires when
 * its condition becomes true, stays silent while it remains true, and resolves (`onResolve`,
 * an info log line, the webhook with status "resolved") when it becomes false; only then can
 * it fire again. State lives in this process: run the watcher in one process (e.g. beside
 * `errand serve`), or every process that runs one sends its own alert.
 *
 * A failing hook or webhook is logged and never stops the watcher; the webhook has a timeout, and
 * a hook is waited for at most `hookTimeout` (test/http/alerts-hooks.test.ts).
 */
import { type Duration, parseDuration, parseTimerDuration } from "./duration.js";
import type { Errand } from "./errand.js";
import { ValidationError } from "./errors.js";
import { NAME_PATTERN } from "./job.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import type { Logger } from "./logger.js";

export interface DlqGrowthRule {
  /** Only this queue; omitted: every queue, each on its own. */
  queue?: string;
  dlqGrowth: { count: number; window: Duration };
}

export interface FailureRateRule {
  queue?: string;
  failureRate: { above: number; window: Duration; minJobs?: number };
}

export type AlertRule = DlqGrowthRule | FailureRateRule;

export interface Alert {
  status: "firing" | "resolved";
  kind: "dlqGrowth" | "failureRate";
  queue: string;
  rule: AlertRule;
  /** The measured value: failed jobs (dlqGrowth) or the failure rate 0..1 (failureRate). */
  value: number;
  threshold: number;
  windowMs: number;
  /** Jobs that finished within the window, and how many of them failed. */
  finished: number;
  failed: number;
  message: string;
  /** When the episode began; for a resolved alert also when it ended. */
  firedAt: Date;
  resolvedAt?: Date;
}

export interface WebhookOptions {
  url: string;
  headers?: Record<string, string>;
  /** Give up on a webhook call after this long. Default 5s. */
  timeout?: Duration;
}

export interface AlertOptions {
  onAlert?: (alert: Alert) => void | Promise<void>;
  onResolve?: (alert: Alert) => void | Promise<void>;
  /** POSTs `{ status, alert }` as JSON on every fire and resolve. */
  webhook?: string | WebhookOptions;
  /**
   * Stop waiting for `onAlert` / `onResolve` after this long (the call is logged and left to
   * finish on its own), so a hook stuck on a silent connection does not stop the watcher.
   * Default 10s.
   */
  hookTimeout?: Duration;
  /** How often rules are checked. Default 30s. */
  interval?: Duration;
  /** Default: the errand's logger. */
  logger?: Logger;
}

export interface AlertWatcher {
  /** Checks every rule now (the timer does this every `interval`); resolves with what fired or resolved. */
  check(): Promise<Alert[]>;
  /** Stops the timer. Idempotent. */
  stop(): void;
}

interface CompiledRule {
  rule: AlertRule;
  kind: Alert["kind"];
  queue?: string;
  windowMs: number;
  threshold: number;
  minJobs: number;
}

const RULE_FIELDS = knownFields("queue", "dlqGrowth", "failureRate");
const GROWTH_FIELDS = knownFields("count", "window");
const RATE_FIELDS = knownFields("above", "window", "minJobs");
const ALERT_FIELDS = knownFields("onAlert", "onResolve", "webhook", "hookTimeout", "interval", "logger");
const WEBHOOK_FIELDS = knownFields("url", "headers", "timeout");

function compileRule(rule: AlertRule, index: number): CompiledRule {
  const what = `alert rule ${index}`;
  if (!rule || typeof rule !== "object") throw new ValidationError(`${what}: expected an object`);
  const hasGrowth = "dlqGrowth" in rule && rule.dlqGrowth !== undefined;
  const hasRate = "failureRate" in rule && rule.failureRate !== undefined;
  if (hasGrowth === hasRate)
    throw new ValidationError(`${what}: give exactly one of dlqGrowth or failureRate`);
  onlyKnownFields(rule, RULE_FIELDS, what);
  if (rule.queue !== undefined && (typeof rule.queue !== "string" || !NAME_PATTERN.test(rule.queue))) {
    throw new ValidationError(`${what}: queue must be a queue name; got ${JSON.stringify(rule.queue)}`);
  }
  const windowOf = (w: Duration) => {
    let ms: number;
    try {
      ms = parseDuration(w, "window");
    } catch (err) {
      throw new ValidationError(`${what}: ${(err as Error).message}`);
    }
    if (ms < 1000) throw new ValidationError(`${what}: window must be at least 1s`);
    return ms;
  };
  if (hasGrowth) {
    const growth = (rule as DlqGrowthRule).dlqGrowth;
    onlyKnownFields(growth, GROWTH_FIELDS, `${what}: dlqGrowth`);
    const { count, window } = growth;
    if (!Number.isInteger(count) || count < 1)
      throw new ValidationError(`${what}: dlqGrowth.count must be a positive integer`);
    return {
      rule,
      kind: "dlqGrowth",
      queue: rule.queue,
      windowMs: windowOf(window),
      threshold: count,
      minJobs: 0,
    };
  }
  const rate = (rule as FailureRateRule).failureRate;
  onlyKnownFields(rate, RATE_FIELDS, `${what}: failureRate`);
  const { above, window, minJobs = 10 } = rate;
  if (typeof above !== "number" || !(above >= 0 && above < 1)) {
    throw new ValidationError(`${what}: failureRate.above must be a fraction from 0 to 1 (0.2 = 20 %)`);
  }
  if (!Number.isInteger(minJobs) || minJobs < 1)
    throw new ValidationError(`${what}: failureRate.minJobs must be a positive integer`);
  return {
    rule,
    kind: "failureRate",
    queue: rule.queue,
    windowMs: windowOf(window),
    threshold: above,
    minJobs,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;
const windowText = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);

/**
 * Watches `rules` every `interval` and reports each episode once. Returns `{ check, stop }`;
 * the timer is unref'd, so it never keeps a process alive.
 */
export function watchAlerts(
  errand: Errand,
  rules: readonly AlertRule[],
  options: AlertOptions = {},
): AlertWatcher {
  if (!Array.isArray(rules)) throw new ValidationError("watchAlerts takes an array of rules");
  onlyKnownFields(options, ALERT_FIELDS, "watchAlerts options");
  const compiled = rules.map(compileRule);
  const log = options.logger ?? errand.log;
  const intervalMs = parseTimerDuration(options.interval ?? "30s", "interval");
  if (intervalMs < 100) throw new ValidationError("interval must be at least 100ms");
  const webhook: WebhookOptions | null =
    options.webhook === undefined
      ? null
      : typeof options.webhook === "string"
        ? { url: options.webhook }
        : options.webhook;
  if (webhook) {
    onlyKnownFields(webhook, WEBHOOK_FIELDS, "webhook");
    try {
      const url = new URL(webhook.url);
      if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error();
    } catch {
      throw new ValidationError(`webhook must be an http(s) URL; got ${JSON.stringify(webhook.url)}`);
    }
  }
  const webhookTimeout = parseTimerDuration(webhook?.timeout ?? "5s", "webhook.timeout");
  const hookTimeout = parseTimerDuration(options.hookTimeout ?? "10s", "hookTimeout");
  if (hookTimeout <= 0)
    throw new ValidationError(`hookTimeout must be a positive duration; got ${hookTimeout} ms`);
  /** Open episodes: `${rule index}\0${queue}` → the alert that fired. */
  const firing = new Map<string, Alert>();
  let running: Promise<Alert[]> | null = null;
  let queued: Promise<Alert[]> | null = null;
  let stopped = false;

  async function evaluate(): Promise<Alert[]> {
    const changes: Alert[] = [];
    const windows = [...new Set(compiled.map((r) => r.windowMs))];
    const totals = new Map<number, Map<string, { completed: number; failed: number }>>();
    for (const windowMs of windows) {
      const perQueue = new Map<string, { completed: number; failed: number }>();
      for (const b of await errand.throughput(windowMs, windowMs)) {
        const t = perQueue.get(b.queue) ?? { completed: 0, failed: 0 };
        t.completed += b.completed;
        t.failed += b.failed;
        perQueue.set(b.queue, t);
      }
      totals.set(windowMs, perQueue);
    }
    const now = new Date();
    for (const [index, r] of compiled.entries()) {
      const perQueue = totals.get(r.windowMs)!;
      const queues = new Set<string>(r.queue ? [r.queue] : [...perQueue.keys()]);
      // Open episodes of queues with nothing left in the window must get their chance to resolve.
      for (const key of firing.keys())
        if (key.startsWith(`${index}\u0000`)) queues.add(key.slice(key.indexOf("\u0000") + 1));
      for (const queue of queues) {
        const { completed, failed } = perQueue.get(queue) ?? { completed: 0, failed: 0 };
        const finished = completed + failed;
        const value = r.kind === "dlqGrowth" ? failed : finished > 0 ? failed / finished : 0;
        const active =
          r.kind === "dlqGrowth" ? failed >= r.threshold : finished >= r.minJobs && value > r.threshold;
        const key = `${index}\u0000${queue}`;
        const open = firing.get(key);
        if (active && !open) {
          const message =
            r.kind === "dlqGrowth"
              ? `queue "${queue}": ${failed} jobs moved to the dead-letter queue within ${windowText(r.windowMs)} (threshold ${r.threshold})`
              : `queue "${queue}": ${pct(value)} of jobs failed within ${windowText(r.windowMs)} (${failed} of ${finished}; threshold ${pct(r.threshold)})`;
          const alert: Alert = {
            status: "firing",
            kind: r.kind,
            queue,
            rule: r.rule,
            value,
            threshold: r.threshold,
            windowMs: r.windowMs,
            finished,
            failed,
            message,
            firedAt: now,
          };
          firing.set(key, alert);
          changes.push(alert);
        } else if (!active && open) {
          firing.delete(key);
          changes.push({
            ...open,
            status: "resolved",
            value,
            finished,
            failed,
            resolvedAt: now,
            message: `resolved: ${open.message}`,
          });
        }
      }
    }
    for (const alert of changes) await report(alert);
    return changes;
  }

  async function report(alert: Alert): Promise<void> {
    const { rule: _rule, ...fields } = alert;
    if (alert.status === "firing") log.error({ alert: fields }, `errand alert: ${alert.message}`);
    else log.info({ alert: fields }, `errand alert ${alert.message}`);
    const hook = alert.status === "firing" ? options.onAlert : options.onResolve;
    if (hook) {
      const name = alert.status === "firing" ? "onAlert" : "onResolve";
      let timer: NodeJS.Timeout | undefined;
      try {
        // Checks run one at a time: a hook that never settles would stop every later check.
        const gaveUp = new Promise<"gave up">((resolve) => {
          timer = setTimeout(() => resolve("gave up"), hookTimeout);
        });
        const call = Promise.resolve().then(() => hook(alert));
        call.catch((err) => log.error({ err }, `the ${name} hook threw`));
        if (
          (await Promise.race([
            call.then(
              () => "done",
              () => "done",
            ),
            gaveUp,
          ])) === "gave up"
        )
          log.error(
            { queue: alert.queue, kind: alert.kind },
            `the ${name} hook did not settle within ${hookTimeout} ms; the watcher goes on without it`,
          );
      } finally {
        clearTimeout(timer);
      }
    }
    if (webhook) await postWebhook(alert);
  }

  async function postWebhook(alert: Alert): Promise<void> {
    try {
      const response = await fetch(webhook!.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...webhook!.headers },
        body: JSON.stringify({ status: alert.status, alert }),
        signal: AbortSignal.timeout(webhookTimeout),
      });
      await response.body?.cancel().catch(() => {});
      if (!response.ok)
        log.error({ status: response.status }, `alert webhook answered HTTP ${response.status}`);
    } catch (err) {
      log.error({ err }, "alert webhook failed");
    }
  }

  function check(): Promise<Alert[]> {
    // One evaluation at a time, and at most one queued behind it: a slow store or webhook never
    // stacks up checks, and a caller always gets an evaluation that started after its call.
    if (!running) {
      running = evaluate().finally(() => {
        running = null;
      });
      return running;
    }
    if (!queued) {
      queued = running
        .catch(() => {})
        .then(() => {
          queued = null;
          return check();
        });
    }
    return queued;
  }

  const timer = setInterval(() => {
    if (stopped) return;
    check().catch((err) => log.warn({ err }, "checking alert rules failed; will try again"));
  }, intervalMs);
  timer.unref();

  return {
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
