/**
 * Every benchmarked system, in report order. Each loads lazily, so a worker process imports
 * only its own system's library (and its memory figure carries no other library).
 */
import type { SystemDef } from "./types.js";

const LOADERS: Record<string, () => Promise<SystemDef>> = {
  "errand-postgres": async () => (await import("./errand.js")).errandPostgres,
  "errand-sqlite": async () => (await import("./errand.js")).errandSqlite,
  "graphile-worker-best": async () => (await import("./graphile-worker.js")).graphileBest,
  "graphile-worker": async () => (await import("./graphile-worker.js")).graphileDefaults,
  "pg-boss": async () => (await import("./pg-boss.js")).pgBoss,
  sidequest: async () => (await import("./sidequest.js")).sidequest,
  bullmq: async () => (await import("./bullmq.js")).bullmq,
};

export const SYSTEM_NAMES: readonly string[] = Object.keys(LOADERS);

export function loadSystem(name: string): Promise<SystemDef> {
  const load = LOADERS[name];
  if (!load) throw new Error(`unknown system "${name}"; known: ${SYSTEM_NAMES.join(", ")}`);
  return load();
}
