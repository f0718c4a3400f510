/**
 * The ledger of ctx.once: a value recorded per key and scope (the job's id, or '' for global). Inside completeInTransaction (leases.ts)
 * reads and writes join its transaction, so an entry commits or rolls back with the effect it
 * records and the completion (as on SQLite).
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import type pg from "pg";
import type { LedgerEntryKey } from "../types.js";
import type { Db } from "./db.js";
import { serialize } from "./json.js";

export async function ledgerGet(
  db: Db,
  txClient: AsyncLocalStorage<pg.PoolClient>,
  { key, jobId, global }: LedgerEntryKey,
): Promise<{ found: boolean; value?: unknown }> {
  const params = [key, global ? "" : String(jobId), global ? null : String(jobId)];
  const { rows } = await db.run("LEDGER_GET", params, txClient.getStore() ?? db.pool);
  if (rows.length === 0) return { found: false };
  return { found: true, value: rows[0].is_undefined ? undefined : rows[0].value };
}

export async function ledgerPut(
  db: Db,
  txClient: AsyncLocalStorage<pg.PoolClient>,
  { key, jobId, global }: LedgerEntryKey,
  value: unknown,
): Promise<void> {
  const text = value === undefined ? null : serialize(value, `ledger value for ${JSON.stringify(key)}`);
  const params = [key, global ? "" : String(jobId), String(jobId), text];
  await db.run("LEDGER_PUT", params, txClient.getStore() ?? db.pool);
}
