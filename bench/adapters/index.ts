/** Every benchmarked system, in report order. */
import { bullmq } from "./bullmq.js";
import { errandPostgres, errandSqlite } from "./errand.js";
import { graphileBest, graphileDefaults } from "./graphile-worker.js";
import { pgBoss } from "./pg-boss.js";
import { sidequest } from "./sidequest.js";
import type { SystemDef } from "./types.js";

export const SYSTEMS: SystemDef[] = [
  errandPostgres,
  errandSqlite,
  graphileBest,
  graphileDefaults,
  pgBoss,
  sidequest,
  bullmq,
];

export function findSystem(name: string): SystemDef {
  const system = SYSTEMS.find((s) => s.name === name);
  if (!system) throw new Error(`unknown system "${name}"; known: ${SYSTEMS.map((s) => s.name).join(", ")}`);
  return system;
}
