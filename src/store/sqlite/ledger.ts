/** The idempotency ledger (ctx.once) on the SQLite store: one stored value per key and scope. */
import type { LedgerEntryKey } from "../types.js";
import type { Connection } from "./connection.js";
import * as Q from "./queries.js";

export function ledgerGet(
  c: Connection,
  { key, jobId, global }: LedgerEntryKey,
): { found: boolean; value?: unknown } {
  const own = global ? null : String(jobId);
  const row = c.q(Q.LEDGER_GET).get(key, own ?? "", own) as { value: string | null } | undefined;
  if (!row) return { found: false };
  return { found: true, value: row.value === null ? undefined : JSON.parse(row.value) };
}

export function ledgerPut(c: Connection, { key, jobId, global }: LedgerEntryKey, value: unknown): void {
  // NULL stands for undefined; anything else is JSON (null included).
  const text = value === undefined ? null : (JSON.stringify(value) ?? null);
  c.q(Q.LEDGER_PUT).run(key, global ? "" : String(jobId), String(jobId), text);
}
