/**
 * One chaos run, for any store: N jobs of the chaos fixture (test/fixtures/chaos-jobs.ts),
 * several worker processes, and faults injected at random moments drawn from a seeded PRNG —
 * kill -9 (and a replacement started), SIGSTOP for longer than the lease then SIGCONT, and
 * whatever the store adds (pg_terminate_backend, a server restart). Handler faults are in the
 * job mix: hangs past the timeout, synchronous throws, rejections after the deadline.
 *
 * Scale and reseed: CHAOS_JOBS (default 1500), CHAOS_SEED (default: random, printed),
 * CHAOS_WORKERS (default 4), CHAOS_FAULT_MS (how long faults are injected, default 15000),
 * CHAOS_SETTLE_MS (how long the jobs may take to settle after
 * the last fault, default 180000), CHAOS_REPORT_DIR (writes <label>.json with the figures).
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import type { AnyJobDefinition } from "../../src/job.js";
import type { Store } from "../../src/store/types.js";
import { CHAOS_MODES, type ChaosMode, chaos } from "../fixtures/chaos-jobs.js";
import { checkRun, type EffectRow, type LedgerRow, summaryLine, type Verdict } from "./check.js";
import { allJobs, killAll, prng, readExecutions, scratchDir, signal, stopAll, whenReady } from "./harness.js";
import { workerPool } from "./worker-pool.js";

export type FaultKind = "kill9" | "stop" | "terminate" | "restart" | "blackhole";

export interface ChaosTarget {
  label: string;
  /** What the workers get as CHAOS_URL / CHAOS_SCHEMA. */
  url: string;
  schema?: string;
  /** The test process's own store on the same database (inspection and enqueue). */
  store: Store;
  effects(): Promise<EffectRow[]>;
  ledger(): Promise<LedgerRow[]>;
  /** Fault kinds this store supports, with their weights. */
  faults: Partial<Record<FaultKind, number>>;
  /** Cuts some of the workers' database connections; returns how many. */
  terminate?(pick: () => number): Promise<number>;
  /** Restarts the database server. */
  restart?(): Promise<void>;
  /**
   * Black-holes the workers' open connections (silent, not closed; new ones get through);
   * returns how many. `heal` lets them carry bytes again.
   */
  blackhole?(): number;
  heal?(): void;
}

export interface ChaosResult {
  verdict: Verdict;
  summary: string;
  faults: Record<string, number>;
  seed: number;
  seconds: number;
}

const env = process.env;
const LEASE_MS = 1500;

export async function chaosRun(target: ChaosTarget): Promise<ChaosResult> {
  const seed = env.CHAOS_SEED ? Number(env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
  const total = Number(env.CHAOS_JOBS ?? 1500);
  const workerCount = Number(env.CHAOS_WORKERS ?? 4);
  const settleMs = Number(env.CHAOS_SETTLE_MS ?? 180_000);
  console.log(
    `# chaos ${target.label}: seed ${seed} (reproduce with CHAOS_SEED=${seed} CHAOS_JOBS=${total})`,
  );
  const rand = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)];
  const dir = scratchDir(`errand-chaos-${target.label}-`);
  const { procs, everyProc, stopped, launch } = workerPool({
    url: target.url,
    dir,
    queues: "chaos",
    leaseMs: LEASE_MS,
    schema: target.schema,
  });
  const timers = new Set<NodeJS.Timeout>();
  const faults: Record<string, number> = { kill9: 0, stop: 0 };
  for (const kind of Object.keys(target.faults)) faults[kind] = 0;
  let errand: Errand | undefined;
  let keep = Boolean(env.CHAOS_KEEP);
  const started = Date.now();

  try {
    // The jobs and their handler faults, all from the seed.
    const modes: Record<ChaosMode, number> = { normal: 0, hang: 0, throw: 0, late: 0, poison: 0 };
    const items = Array.from({ length: total }, (_, n) => {
      const r = rand();
      const mode: ChaosMode =
        r < 0.03 ? "hang" : r < 0.06 ? "throw" : r < 0.09 ? "late" : r < 0.12 ? "poison" : "normal";
      modes[mode]++;
      return { payload: { n, mode, ms: Math.floor(rand() * 100) }, key: `chaos-${n}` };
    });
    for (const m of CHAOS_MODES) if (m !== "normal") faults[m] = modes[m];

    errand = await openErrand({
      store: target.store,
      jobs: [chaos] as unknown as AnyJobDefinition[],
      logger: silentLogger(),
    });
    const workers = Array.from({ length: workerCount }, launch);
    await Promise.all(workers.map((w) => whenReady(w)));
    const t0 = Date.now();

    // Enqueue in waves over ~12 s, so that faults land while jobs are being claimed and run.
    // Keys make a retried batch (its connection cut by a fault) create nothing twice.
    const ids = new Array<string>(total);
    const waves = 60;
    const enqueuing = (async () => {
      for (let w = 0; w < waves; w++) {
        const from = Math.floor((w * total) / waves);
        const to = Math.floor(((w + 1) * total) / waves);
        for (let tries = 0; ; tries++) {
          try {
            const jobs = await errand!.enqueueMany(chaos, items.slice(from, to));
            jobs.forEach((j, i) => {
              ids[from + i] = j.id;
            });
            break;
          } catch (err) {
            if (tries > 200) throw err;
            await sleep(100);
          }
        }
        await sleep(200);
      }
    })();

    const unsettled = async (): Promise<number | null> => {
      try {
        const stats = await target.store.stats();
        const s = stats.find((q) => q.queue === "chaos");
        if (!s) return null;
        return s.pending + s.delayed + s.running;
      } catch {
        return null; // the server may be restarting
      }
    };

    // Faults at random moments for CHAOS_FAULT_MS (default 15 s, while the jobs are enqueued and
    // run), or until at most 5% of the jobs are left once all are enqueued.
    const faultMs = Number(env.CHAOS_FAULT_MS ?? 15_000);
    const kinds = Object.entries({ kill9: 3, stop: 3, ...target.faults }).filter(
      ([k]) => k !== "restart",
    ) as [FaultKind, number][];
    const weight = kinds.reduce((s, [, w]) => s + w, 0);
    let restarted = !target.restart;
    const restartAfter = 4000 + rand() * 6000;
    // The first fault is a black hole where the store has them (a run can end after few faults).
    let blackholed = !target.blackhole;
    let enqueued = false;
    enqueuing.then(
      () => {
        enqueued = true;
      },
      () => {},
    );
    for (;;) {
      await sleep(500 + rand() * 1000);
      if (Date.now() - t0 > faultMs) break;
      const left = await unsettled();
      if (enqueued && left !== null && left <= total * 0.05) break;
      if (!restarted && Date.now() - t0 > restartAfter) {
        restarted = true;
        faults.restart++;
        await target.restart!();
        continue;
      }
      let r = rand() * weight;
      const [kind] = !blackholed
        ? (["blackhole"] as const)
        : (kinds.find(([, w]) => {
            r -= w;
            return r < 0;
          }) ?? kinds[0]);
      const running = [...procs].filter((p) => !stopped.has(p));
      if (kind === "kill9") {
        if (running.length === 0) continue;
        const victim = pick(running);
        signal(victim, "SIGKILL");
        faults.kill9++;
        launch();
      } else if (kind === "stop") {
        if (running.length === 0) continue;
        const victim = pick(running);
        signal(victim, "SIGSTOP");
        stopped.add(victim);
        faults.stop++;
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            stopped.delete(victim);
            signal(victim, "SIGCONT");
          },
          LEASE_MS * (1.2 + rand() * 1.8),
        );
        timers.add(timer);
      } else if (kind === "blackhole" && target.blackhole) {
        faults.blackhole++;
        blackholed = true;
        faults.connectionsBlackholed = (faults.connectionsBlackholed ?? 0) + target.blackhole();
        // Silent for 2-4 leases: past the query timeout (about a lease), so the workers must
        // notice and reconnect; then what is left of them carries bytes again.
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            target.heal?.();
          },
          LEASE_MS * (2 + rand() * 2),
        );
        timers.add(timer);
      } else if (kind === "terminate" && target.terminate) {
        faults.terminate++;
        faults.connectionsCut = (faults.connectionsCut ?? 0) + (await target.terminate(rand).catch(() => 0));
      }
    }
    await enqueuing;
    for (const timer of timers) clearTimeout(timer);
    target.heal?.();
    for (const p of stopped) signal(p, "SIGCONT");
    stopped.clear();
    if (procs.size === 0) launch();

    // Settle: every job must reach a terminal state.
    const deadline = Date.now() + settleMs;
    for (;;) {
      const left = await unsettled();
      if (left === 0) break;
      if (Date.now() > deadline) break; // the checks below say what is left
      await sleep(250);
    }
    await stopAll(procs, 15_000);

    const [jobs, effects, ledger] = [
      await allJobs(target.store),
      await target.effects(),
      await target.ledger(),
    ];
    const executions = readExecutions(dir);
    const verdict = checkRun({
      expectedIds: ids,
      jobs,
      effects,
      ledger,
      executions,
      effectKey: (id) => `effect:${id}`,
    });
    const running = jobs.filter((j) => j.state === "running");
    if (running.length > 0) {
      verdict.violations.push(
        `no job is left running once every worker stopped: ${running.length} running (e.g. ${running[0].id})`,
      );
    }
    const seconds = (Date.now() - started) / 1000;
    const summary = summaryLine(target.label, { seed, workers: workerCount, seconds }, faults, verdict.stats);
    console.log(summary);
    if (env.CHAOS_REPORT_DIR) {
      mkdirSync(env.CHAOS_REPORT_DIR, { recursive: true });
      writeFileSync(
        join(env.CHAOS_REPORT_DIR, `${target.label}.json`),
        JSON.stringify(
          {
            label: target.label,
            seed,
            seconds,
            workers: workerCount,
            processes: everyProc.length,
            faults,
            stats: verdict.stats,
            violations: verdict.violations,
          },
          null,
          2,
        ),
      );
    }
    if (verdict.violations.length > 0) {
      keep = true;
      const crashed = everyProc.filter((p) => p.done && p.stderr().includes('"level":60')).length;
      console.log(
        `# ${verdict.violations.length} rule(s) broken; ${crashed} worker(s) logged a fatal error; traces kept in ${dir}`,
      );
    }
    return { verdict, summary, faults, seed, seconds };
  } finally {
    for (const timer of timers) clearTimeout(timer);
    await killAll(everyProc);
    if (errand) await errand.close();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
