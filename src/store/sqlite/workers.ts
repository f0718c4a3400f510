/** The registry of running workers on the SQLite store: register, heartbeat, unregister, list (the dashboard's view). */
import type { WorkerInfo } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./queries.js";
import { type WorkerRow, workerFromRow } from "./rows.js";

export function registerWorker(c: Connection, info: Omit<WorkerInfo, "startedAt" | "lastHeartbeatAt">): void {
  c.q(Q.WORKER_REGISTER).run({
    id: info.id,
    host: info.host,
    pid: info.pid,
    queues: JSON.stringify(info.queues ?? {}),
    running: info.running,
    processed: info.processed,
  });
}

export function heartbeatWorker(c: Connection, id: string, running: number, processed: number): void {
  c.q(Q.WORKER_HEARTBEAT).run(running, processed, id);
}

export function unregisterWorker(c: Connection, id: string): void {
  c.q(Q.WORKER_DELETE).run(id);
}

export function listWorkers(c: Connection, staleMs: number): WorkerInfo[] {
  return (c.q(Q.WORKER_LIST).all(staleMs) as WorkerRow[]).map(workerFromRow);
}
