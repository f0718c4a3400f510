/**
 * The ledger of ctx.once: a value recorded per key. Inside completeInTransaction (leases.ts)
 * reads and writes join its transaction, so an entry commits or rolls back with the effect it
 * records and the completion (as on SQLite).
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import type pg from "pg";
import type { Db } from "./db.js";
import { serialize } from "./json.js";

export async function ledgerGet(
  db: Db,
  txClient: AsyncLocalStorage<pg.PoolClient>,
  key: string,
): Promise<{ found: boolean; value?: unknown }> {
  const { rows } = await db.run("LEDGER_GET", [key], txClient.getStore() ?? db.pool);
  if (rows.length === 0) return { found: false };
  return { found: true, value: rows[0].is_undefined ? undefined : rows[0].value };
}

export async function ledgerPut(
  db: Db,
  txClient: AsyncLocalStorage<pg.PoolClient>,
  key: string,
  jobId: string,
  value: unknown,
): Promise<void> {
  const text = value === undefined ? null : serialize(value, `ledger value for ${JSON.stringify(key)}`);
  await db.run("LEDGER_PUT", [key, String(jobId), text], txClient.getStore() ?? db.pool);
}
