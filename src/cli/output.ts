/** How the CLI prints: aligned tables for people, JSON (`--json`) for programs. Both go to stdout. */
import type { AttemptRecord, JobLogLine, JobRecord } from "../job.js";
import type { QueueStats } from "../store/types.js";

export type Align = "left" | "right";

export interface Column<T> {
  header: string;
  value: (row: T) => string;
  align?: Align;
}

/** Renders rows as a table with a header line; columns are padded to their widest cell. */
export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((row) => columns.map((c) => oneLine(c.value(row))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i].align === "right" ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join("\n");
}

export function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}

/**
 * A job as JSON: the contract's fields first, in the contract's order (`id, queue, name, state,
 * priority, attempt, maxAttempts, runAt, payload, key, attempts`), then the rest of the record.
 */
export function jobJson(job: JobRecord): Record<string, unknown> {
  const { id, queue, name, state, priority, attempt, maxAttempts, runAt, payload, key, attempts, ...rest } =
    job;
  const extra = Object.fromEntries(Object.entries(rest).filter(([k]) => k !== "created"));
  return { id, queue, name, state, priority, attempt, maxAttempts, runAt, payload, key, attempts, ...extra };
}

/** `2026-01-31T09:00:00Z`: ISO to the second, for tables. */
export function isoSeconds(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return "-";
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A short human duration: 850ms, 12s, 5m 3s, 2h 10m, 3d 4h. */
export function humanDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m ${s % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}

/** Keeps a table cell on one line and at most `max` characters. */
export function truncate(text: string, max: number): string {
  const flat = oneLine(text);
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ");
}

export const JOB_COLUMNS: Column<JobRecord>[] = [
  { header: "ID", value: (j) => j.id, align: "right" },
  { header: "QUEUE", value: (j) => j.queue },
  { header: "NAME", value: (j) => j.name },
  { header: "STATE", value: (j) => j.state },
  { header: "PRIORITY", value: (j) => String(j.priority), align: "right" },
  { header: "ATTEMPT", value: (j) => `${j.attempt}/${j.maxAttempts}`, align: "right" },
  { header: "RUN AT", value: (j) => isoSeconds(j.runAt) },
  { header: "KEY", value: (j) => (j.key === null ? "-" : truncate(j.key, 32)) },
];

export const DLQ_COLUMNS: Column<JobRecord>[] = [
  { header: "ID", value: (j) => j.id, align: "right" },
  { header: "QUEUE", value: (j) => j.queue },
  { header: "NAME", value: (j) => j.name },
  { header: "ATTEMPTS", value: (j) => `${j.attempt}/${j.maxAttempts}`, align: "right" },
  { header: "FAILED AT", value: (j) => isoSeconds(j.finishedAt) },
  { header: "LAST ERROR", value: (j) => truncate(j.lastError ?? lastAttemptError(j) ?? "-", 60) },
];

function lastAttemptError(job: JobRecord): string | undefined {
  for (let i = job.attempts.length - 1; i >= 0; i--) if (job.attempts[i].error) return job.attempts[i].error;
  return undefined;
}

export const STATS_COLUMNS: Column<QueueStats>[] = [
  { header: "QUEUE", value: (s) => s.queue },
  { header: "PENDING", value: (s) => String(s.pending), align: "right" },
  { header: "DELAYED", value: (s) => String(s.delayed), align: "right" },
  { header: "RUNNING", value: (s) => String(s.running), align: "right" },
  { header: "COMPLETED", value: (s) => String(s.completed), align: "right" },
  { header: "FAILED", value: (s) => String(s.failed), align: "right" },
  { header: "CANCELLED", value: (s) => String(s.cancelled), align: "right" },
  { header: "DONE 1H", value: (s) => String(s.completedLastHour), align: "right" },
  { header: "FAILED 1H", value: (s) => String(s.failedLastHour), align: "right" },
  { header: "OLDEST PENDING", value: (s) => humanDuration(s.oldestPendingMs), align: "right" },
];

/** The detail view of one job: its fields, payload, result and attempt history. */
export function renderJob(job: JobRecord, options: { stacks?: boolean } = {}): string {
  const fields: Array<[string, string]> = [
    ["id", job.id],
    ["queue", job.queue],
    ["name", job.name],
    ["state", job.state + (job.cancelRequested && job.state === "running" ? " (cancel requested)" : "")],
    ["priority", String(job.priority)],
    ["attempt", `${job.attempt} of ${job.maxAttempts}`],
    ["run at", isoSeconds(job.runAt)],
    ["key", job.key ?? "-"],
    ["created", isoSeconds(job.createdAt)],
    ["started", isoSeconds(job.startedAt)],
    ["finished", isoSeconds(job.finishedAt)],
  ];
  if (job.lockedBy) fields.push(["locked by", `${job.lockedBy} until ${isoSeconds(job.lockedUntil)}`]);
  if (job.progress) {
    const pct = `${Math.round(job.progress.fraction * 100)}%`;
    fields.push(["progress", job.progress.message ? `${pct} ${job.progress.message}` : pct]);
  }
  if (job.lastError) fields.push(["last error", job.lastError]);
  const width = Math.max(...fields.map(([k]) => k.length));
  const out = fields.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${v}`);
  out.push("", "payload:", indent(JSON.stringify(job.payload, null, 2)));
  if (job.result !== null && job.result !== undefined)
    out.push("", "result:", indent(JSON.stringify(job.result, null, 2)));
  out.push("", `attempts (${job.attempts.length}):`);
  if (job.attempts.length === 0) out.push("  (none yet)");
  else out.push(indent(renderTable(job.attempts, ATTEMPT_COLUMNS)));
  for (const a of job.attempts) {
    if (!a.logs || a.logs.length === 0) continue;
    out.push("", `log of attempt ${a.attempt} (${a.outcome}):`, indent(a.logs.map(logLine).join("\n")));
  }
  if (options.stacks) {
    for (const a of job.attempts) {
      if (!a.stack && !a.error) continue;
      out.push(
        "",
        `attempt ${a.attempt} (${a.outcome}${a.kind ? `, ${a.kind}` : ""}):`,
        indent(a.stack ?? a.error ?? ""),
      );
    }
  }
  return out.join("\n");
}

/** One job log line: time (UTC, to the millisecond), level, message, fields as JSON; the truncation marker as it is. */
function logLine(line: JobLogLine): string {
  if (line.dropped !== undefined) return `… ${line.msg}`;
  const fields = line.fields ? ` ${JSON.stringify(line.fields)}` : "";
  return `${line.at.slice(11, 23)} ${line.level.toUpperCase().padEnd(5)} ${line.msg}${fields}`;
}

const ATTEMPT_COLUMNS: Column<AttemptRecord>[] = [
  { header: "#", value: (a) => String(a.attempt), align: "right" },
  { header: "OUTCOME", value: (a) => a.outcome },
  { header: "STARTED", value: (a) => isoSeconds(a.startedAt) },
  {
    header: "TOOK",
    value: (a) => humanDuration(new Date(a.finishedAt).getTime() - new Date(a.startedAt).getTime()),
    align: "right",
  },
  { header: "WORKER", value: (a) => a.worker ?? "-" },
  {
    header: "ERROR",
    value: (a) => (a.error ? truncate(`${a.kind ? `[${a.kind}] ` : ""}${a.error}`, 70) : "-"),
  },
];

function indent(text: string, by = "  "): string {
  return text
    .split("\n")
    .map((l) => by + l)
    .join("\n");
}
