/** The registry of running workers: register, heartbeat, unregister, list (the dashboard's view). */
import type { WorkerInfo } from "../types.js";
import type { Db } from "./db.js";
import { serialize } from "./json.js";
import { toWorker } from "./rows.js";

export async function registerWorker(
  db: Db,
  info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">,
): Promise<void> {
  await db.run("REGISTER_WORKER", [
    info.id,
    info.host,
    info.pid,
    serialize(info.queues, "worker queues"),
    info.running,
    info.processed,
  ]);
}

export async function heartbeatWorker(db: Db, id: string, running: number, processed: number): Promise<void> {
  await db.run("HEARTBEAT_WORKER", [id, running, processed]);
}

export async function unregisterWorker(db: Db, id: string): Promise<void> {
  await db.run("UNREGISTER_WORKER", [id]);
}

export async function listWorkers(db: Db, staleMs: number): Promise<WorkerInfo[]> {
  const { rows } = await db.run("LIST_WORKERS", [staleMs]);
  return rows.map(toWorker);
}
