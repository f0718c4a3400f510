/**
 * The flow under chaos, for any store: one enqueueFlow of 1,000 jobs — 100 fan-out jobs, each
 * fanning out to 9 children (8 for the last: 999 in all), and a final job that depends on all
 * 999 — run by worker processes while faults land at random moments from a seeded PRNG: kill -9
 * (a replacement started), SIGSTOP past the lease then SIGCONT, and the store's own (Postgres:
 * pg_terminate_backend of the workers' connections).
 *
 * What must hold (the returned violations list what did not):
 * - every job completed, and wrote its effect exactly once (ctx.once inside completeInTransaction);
 * - dependency order: no attempt of a job started before each of its dependencies finished
 *   (every attempt in its history, the lost ones included, against the dependencies' finishedAt);
 * - the final job saw all 999 results, each completed, with the expected sum;
 * - nothing stuck: no job left waiting, pending or running.
 *
 * CHAOS_SEED reseeds; CHAOS_FAULT_MS (default 15000) and CHAOS_SETTLE_MS (default 180000).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { isDeepStrictEqual } from "node:util";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import type { JobRecord } from "../../src/job.js";
import type { Store } from "../../src/store/types.js";
import jobs, { flowFinal, flowStep } from "../fixtures/chaos-jobs.js";
import { allJobs, killAll, prng, readExecutions, scratchDir, signal, stopAll, whenReady } from "./harness.js";
import { workerPool } from "./worker-pool.js";

export const FAN_OUT = 100;
export const CHILDREN = 9;
const LEASE_MS = 1500;

export interface FlowChaosTarget {
  label: string;
  url: string;
  schema?: string;
  store: Store;
  /** job id → number of effect rows. */
  effects(): Promise<Map<string, number>>;
  /** Cuts some of the workers' connections (Postgres); how many. */
  terminate?(rand: () => number): Promise<number>;
}

export interface FlowChaosResult {
  violations: string[];
  faults: Record<string, number>;
  jobs: number;
  executions: number;
  finalResult: unknown;
  seed: number;
}

/** The flow's nodes: f<i> fan-out jobs, c<i>_<k> children, and "final". */
function flowSpec(rand: () => number) {
  const nodes: Record<
    string,
    { job: typeof flowStep | typeof flowFinal; payload: object; dependsOn?: string[] }
  > = {};
  const all: string[] = [];
  let n = 0;
  for (let i = 0; i < FAN_OUT; i++) {
    const parent = `f${i}`;
    nodes[parent] = { job: flowStep, payload: { n: ++n, level: 1, ms: Math.floor(rand() * 30) } };
    all.push(parent);
    const children = i === FAN_OUT - 1 ? CHILDREN - 1 : CHILDREN;
    for (let k = 0; k < children; k++) {
      const child = `c${i}_${k}`;
      nodes[child] = {
        job: flowStep,
        payload: { n: ++n, level: 2, ms: Math.floor(rand() * 30) },
        dependsOn: [parent],
      };
      all.push(child);
    }
  }
  nodes.final = { job: flowFinal, payload: {}, dependsOn: all };
  return { nodes, count: n };
}

export async function flowChaosRun(target: FlowChaosTarget): Promise<FlowChaosResult> {
  const env = process.env;
  const seed = env.CHAOS_SEED ? Number(env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`# flow chaos ${target.label}: seed ${seed} (reproduce with CHAOS_SEED=${seed})`);
  const rand = prng(seed);
  const dir = scratchDir(`errand-flow-chaos-${target.label}-`);
  const { procs, everyProc, stopped, launch } = workerPool({
    url: target.url,
    dir,
    queues: "chaos-flow",
    leaseMs: LEASE_MS,
    schema: target.schema,
  });
  const faults: Record<string, number> = { kill9: 0, stop: 0, terminate: 0 };
  let errand: Errand | undefined;
  try {
    errand = await openErrand({ store: target.store, jobs, logger: silentLogger() });
    const workers = Array.from({ length: 4 }, launch);
    await Promise.all(workers.map((w) => whenReady(w)));
    const { nodes, count } = flowSpec(rand);
    const flow = await errand.enqueueFlow({ jobs: nodes });
    const finalId = flow.ids.final;

    const t0 = Date.now();
    const faultMs = Number(env.CHAOS_FAULT_MS ?? 15_000);
    while (Date.now() - t0 < faultMs) {
      await sleep(400 + rand() * 800);
      const running = [...procs].filter((p) => !stopped.has(p));
      const r = rand() * (target.terminate ? 9 : 6);
      if (r < 3) {
        if (running.length === 0) continue;
        signal(running[Math.floor(rand() * running.length)], "SIGKILL");
        faults.kill9++;
        launch();
      } else if (r < 6) {
        if (running.length === 0) continue;
        const victim = running[Math.floor(rand() * running.length)];
        signal(victim, "SIGSTOP");
        stopped.add(victim);
        faults.stop++;
        setTimeout(
          () => {
            stopped.delete(victim);
            signal(victim, "SIGCONT");
          },
          LEASE_MS * (1.2 + rand() * 1.8),
        );
      } else if (target.terminate) {
        faults.terminate++;
        faults.connectionsCut = (faults.connectionsCut ?? 0) + (await target.terminate(rand).catch(() => 0));
      }
    }
    await sleep(LEASE_MS * 3.1); // every SIGSTOP has ended
    for (const p of stopped) signal(p, "SIGCONT");
    if (procs.size === 0) launch();

    const deadline = Date.now() + Number(env.CHAOS_SETTLE_MS ?? 180_000);
    for (;;) {
      const final = await target.store.getJob(finalId).catch(() => null);
      if (final && (final.state === "completed" || final.state === "failed" || final.state === "cancelled"))
        break;
      if (Date.now() > deadline) break;
      await sleep(250);
    }
    await stopAll(procs, 15_000);

    const stored = await allJobs(target.store);
    const effects = await target.effects();
    const links = new Map<string, string[]>();
    for (const j of stored) {
      links.set(
        j.id,
        (await target.store.getJobLinks(j.id)).dependencies.map((d) => d.id),
      );
    }
    const violations = checkFlow(stored, links, Object.values(flow.ids), finalId, effects, count);
    const final = stored.find((j) => j.id === finalId);
    const executions = readExecutions(dir).length;
    console.log(
      `# flow chaos ${target.label}: ${stored.length} jobs, ${executions} executions, faults ${JSON.stringify(faults)}, final ${JSON.stringify(final?.result)}`,
    );
    return { violations, faults, jobs: stored.length, executions, finalResult: final?.result, seed };
  } finally {
    await killAll(everyProc);
    if (errand) await errand.close();
  }
}

function checkFlow(
  stored: JobRecord[],
  links: Map<string, string[]>,
  ids: string[],
  finalId: string,
  effects: Map<string, number>,
  count: number,
): string[] {
  const violations: string[] = [];
  const byId = new Map(stored.map((j) => [j.id, j]));
  const missing = ids.filter((id) => !byId.has(id));
  if (missing.length > 0) violations.push(`${missing.length} job(s) lost, e.g. ${missing[0]}`);
  const unfinished = stored.filter((j) => j.state !== "completed");
  if (unfinished.length > 0) {
    violations.push(
      `${unfinished.length} job(s) not completed, e.g. ${unfinished[0].id} ${unfinished[0].state}: ${unfinished[0].lastError}`,
    );
  }
  for (const id of ids) {
    const n = effects.get(id) ?? 0;
    if (n !== 1) violations.push(`job ${id} wrote its effect ${n} times`);
  }
  // Dependency order, from the store's own clock: each job against the dependencies the store
  // lists for it (getJobLinks), every attempt of its history included.
  const finishedAt = (id: string) => byId.get(id)?.finishedAt?.getTime() ?? Number.POSITIVE_INFINITY;
  for (const [id, deps] of links) {
    const j = byId.get(id);
    for (const dep of deps) {
      if (j?.attempts.some((a) => new Date(a.startedAt).getTime() < finishedAt(dep))) {
        violations.push(`job ${id} started before its dependency ${dep} finished`);
      }
    }
  }
  const final = byId.get(finalId);
  if ((links.get(finalId)?.length ?? 0) !== count)
    violations.push(`the final job has ${links.get(finalId)?.length} dependencies`);
  if (final) {
    const expected = { count, completed: count, sum: (count * (count + 1)) / 2, distinct: count };
    // Deep equality: jsonb stores an object's keys in its own order.
    if (!isDeepStrictEqual(final.result, expected)) {
      violations.push(
        `the final job saw ${JSON.stringify(final.result)}; expected ${JSON.stringify(expected)}`,
      );
    }
  }
  return violations;
}
