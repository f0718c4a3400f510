/**
 * The end-of-run checks of a chaos run, as one pure function over what the run left behind:
 * the job records (state and history), the effect rows, the ledger, and the execution traces.
 *
 * Definitions used below:
 * - A *claim* is one history entry of a job (every claim ends with exactly one entry:
 *   completed, failed, retried, interrupted or lost). Its *valid-lease interval* is
 *   [startedAt, finishedAt] of that entry, both from the database clock: from the claim
 *   until the store recorded its end (a rescue records "lost" at the moment the lease was
 *   taken away). A worker holds a valid lease for a job exactly during that interval.
 * - An *execution* is one run of a handler, from its S to its E trace line (no E line: the
 *   process died; it is taken to run forever). It belongs to the claim of the same worker
 *   process and attempt number.
 * - Two executions *overlap under valid leases* when some instant lies in both executions
 *   and in both of their claims' valid-lease intervals. That must never happen. Executions
 *   that overlap in time while one of them had already lost its lease (a frozen worker
 *   coming back) are allowed — at-least-once — and counted as zombie overlaps.
 */
import type { AttemptRecord, JobRecord } from "../../src/job.js";
import { type Execution, pidOfWorker } from "./harness.js";

export interface EffectRow {
  jobId: string;
  pid: number;
}

export interface LedgerRow {
  key: string;
  jobId: string;
}

export interface RunInput {
  /** Ids enqueue returned. */
  expectedIds: string[];
  jobs: JobRecord[];
  effects: EffectRow[];
  ledger: LedgerRow[];
  executions: Execution[];
  /** Ledger key of a job's effect. */
  effectKey(jobId: string): string;
  /** Tolerance between the database clock and the workers' clocks (same host), ms. */
  slackMs?: number;
}

export interface RunStats {
  jobs: number;
  completed: number;
  failed: number;
  /** Jobs missing or not in a terminal state. */
  lost: number;
  executions: number;
  claims: number;
  /** Jobs claimed more than once. */
  rerun: number;
  reasons: Record<string, number>;
  effects: number;
  duplicateEffects: number;
  missingEffects: number;
  zombieOverlaps: number;
  /** Executions whose lease was taken away (rescued as lost) while they ran or before they began. */
  staleExecutions: number;
}

export interface Verdict {
  stats: RunStats;
  /** Human-readable violations, grouped by rule; empty when the run is sound. */
  violations: string[];
}

const TERMINAL = new Set(["completed", "failed"]);
const RETRY_REASONS = new Set(["lost", "retried", "interrupted"]);

interface Claim {
  entry: AttemptRecord;
  start: number;
  end: number;
  pid: number | null;
}

export function checkRun(input: RunInput): Verdict {
  const slack = input.slackMs ?? 5;
  const problems = new Map<string, string[]>();
  const fail = (rule: string, detail: string) => {
    const list = problems.get(rule) ?? [];
    list.push(detail);
    problems.set(rule, list);
  };
  const byId = new Map(input.jobs.map((j) => [j.id, j]));
  const effectsOf = new Map<string, EffectRow[]>();
  for (const e of input.effects) effectsOf.set(e.jobId, [...(effectsOf.get(e.jobId) ?? []), e]);
  const ledgerOf = new Map<string, LedgerRow>();
  for (const row of input.ledger) ledgerOf.set(row.key, row);
  const execsOf = new Map<string, Execution[]>();
  for (const x of input.executions) execsOf.set(x.jobId, [...(execsOf.get(x.jobId) ?? []), x]);

  const stats: RunStats = {
    jobs: input.expectedIds.length,
    completed: 0,
    failed: 0,
    lost: 0,
    executions: input.executions.length,
    claims: 0,
    rerun: 0,
    reasons: {},
    effects: input.effects.length,
    duplicateEffects: 0,
    missingEffects: 0,
    zombieOverlaps: 0,
    staleExecutions: 0,
  };

  for (const id of new Set(input.expectedIds)) {
    const job = byId.get(id);
    if (!job) {
      stats.lost++;
      fail("every enqueued job exists", `job ${id} is missing`);
      continue;
    }
    if (!TERMINAL.has(job.state)) {
      stats.lost++;
      fail(
        "every job reached a terminal state",
        `job ${id} is ${job.state} (lockedUntil ${job.lockedUntil?.toISOString() ?? "null"})`,
      );
      continue;
    }
    if (job.state === "completed") stats.completed++;
    else stats.failed++;

    // Effects: the completed job's one effect, made by the worker whose completion was accepted.
    const effects = effectsOf.get(id) ?? [];
    const ledger = ledgerOf.get(input.effectKey(id));
    const last = job.attempts[job.attempts.length - 1];
    if (effects.length > 1) {
      stats.duplicateEffects += effects.length - 1;
      fail(
        "no effect happened twice",
        `job ${id}: ${effects.length} effects (pids ${effects.map((e) => e.pid).join(", ")})`,
      );
    }
    if (job.state === "completed") {
      if (effects.length === 0) {
        stats.missingEffects++;
        fail(
          "a completed job has its effect",
          `job ${id} completed without its effect (ledger ${ledger ? "has" : "lacks"} the key)`,
        );
      } else if (effects.length === 1 && effects[0].pid !== pidOfWorker(last?.worker)) {
        fail(
          "the effect is the accepted execution's",
          `job ${id}: effect by pid ${effects[0].pid}, completion accepted from ${last?.worker}`,
        );
      }
      if (!ledger || ledger.jobId !== id)
        fail(
          "the ledger records the effect",
          `job ${id}: ledger entry ${ledger ? `of job ${ledger.jobId}` : "missing"}`,
        );
    } else {
      if (effects.length > 0)
        fail("a failed job has no effect", `job ${id} failed but has ${effects.length} effect(s)`);
      if (ledger)
        fail("a failed job has no ledger entry", `job ${id} failed but its effect key is in the ledger`);
    }

    // History: one entry per claim, in order, non-overlapping; the last one is the final state,
    // every earlier one names why the job ran again.
    const claims: Claim[] = job.attempts.map((entry) => ({
      entry,
      start: Date.parse(entry.startedAt),
      end: Date.parse(entry.finishedAt),
      pid: pidOfWorker(entry.worker),
    }));
    stats.claims += claims.length;
    if (claims.length === 0) fail("history", `job ${id} is ${job.state} with no history`);
    if (claims.length > 1) stats.rerun++;
    for (const [k, c] of claims.entries()) {
      stats.reasons[c.entry.outcome] = (stats.reasons[c.entry.outcome] ?? 0) + 1;
      if (!(c.start <= c.end + 1)) fail("history", `job ${id} entry ${k}: finished before it started`);
      const next = claims[k + 1];
      if (next && !(c.end <= next.start + 1)) {
        fail(
          "claims never overlap",
          `job ${id}: claim ${k + 1} (${next.entry.worker}) started at ${next.entry.startedAt}, before claim ${k} ended at ${c.entry.finishedAt}`,
        );
      }
      if (k < claims.length - 1 && !RETRY_REASONS.has(c.entry.outcome)) {
        fail(
          "every re-run has its reason in the history",
          `job ${id} entry ${k}: outcome ${c.entry.outcome} was followed by another claim`,
        );
      }
    }
    if (last && last.outcome !== job.state)
      fail("history", `job ${id} is ${job.state} but its last entry says ${last.outcome}`);

    // Executions: each belongs to one claim of its own; none overlaps another under valid leases.
    const execs = execsOf.get(id) ?? [];
    if (execs.length > claims.length) {
      fail("every execution is a claim", `job ${id}: ${execs.length} executions but ${claims.length} claims`);
    }
    const claimOf = new Map<Execution, Claim>();
    const used = new Map<Claim, Execution>();
    for (const x of execs) {
      const candidates = claims.filter(
        (c) => c.pid === x.pid && c.entry.attempt === x.attempt && c.start <= x.start + slack,
      );
      const claim = candidates[candidates.length - 1];
      if (!claim) {
        fail(
          "every execution is a claim",
          `job ${id}: execution by pid ${x.pid}, attempt ${x.attempt} at ${x.start} matches no claim`,
        );
        continue;
      }
      if (used.has(claim)) {
        fail(
          "a claim runs once",
          `job ${id}: two executions of the claim of ${claim.entry.worker}, attempt ${x.attempt}`,
        );
        continue;
      }
      used.set(claim, x);
      claimOf.set(x, claim);
      if (claim.entry.outcome === "lost") stats.staleExecutions++;
    }
    for (let i = 0; i < execs.length; i++) {
      for (let j = i + 1; j < execs.length; j++) {
        const [x, y] = [execs[i], execs[j]];
        const xe = x.end ?? Number.POSITIVE_INFINITY;
        const ye = y.end ?? Number.POSITIVE_INFINITY;
        if (Math.max(x.start, y.start) < Math.min(xe, ye)) stats.zombieOverlaps++;
        const cx = claimOf.get(x);
        const cy = claimOf.get(y);
        if (!cx || !cy) continue;
        const lo = Math.max(x.start, y.start, cx.start, cy.start);
        const hi = Math.min(xe, ye, cx.end, cy.end);
        if (hi - lo > slack) {
          fail(
            "no two executions overlap under valid leases",
            `job ${id}: pid ${x.pid} (attempt ${x.attempt}) and pid ${y.pid} (attempt ${y.attempt}) both ran with valid leases for ${hi - lo} ms`,
          );
        }
      }
    }
  }

  const violations = [...problems].map(
    ([rule, details]) =>
      `${rule}: ${details.length} violation(s), e.g.\n    ${details.slice(0, 5).join("\n    ")}`,
  );
  return { stats, violations };
}

/** The one-line summary a chaos run prints. */
export function summaryLine(
  label: string,
  meta: { seed: number; workers: number; seconds: number },
  faults: Record<string, number>,
  stats: RunStats,
): string {
  const f = Object.entries(faults)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  const r = Object.entries(stats.reasons)
    .sort()
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  return (
    `chaos ${label}: seed ${meta.seed}, ${stats.jobs} jobs, ${meta.workers} workers, ${meta.seconds.toFixed(1)} s | ` +
    `faults: ${f} | ${stats.executions} executions, ${stats.claims} claims (${r}), ${stats.rerun} jobs ran again, ` +
    `${stats.zombieOverlaps} zombie overlaps | completed ${stats.completed}, failed ${stats.failed}, ` +
    `lost ${stats.lost}, duplicate effects ${stats.duplicateEffects}, missing effects ${stats.missingEffects}`
  );
}
