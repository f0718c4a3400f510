/**
 * A job with a scoped key (NewJob.unique) on PostgreSQL, inside the enqueue's transaction: insert
 * it unless a job holds the key (the unique index jobs_key_held_idx decides, whoever enqueues at
 * the same moment: ON CONFLICT waits for a concurrent insert of the key to commit or roll back);
 * if one does, lock it and let store/unique.ts decide — a duplicate, a pending one to replace, or
 * one that gives the key up so the insert is tried again.
 *
 * The holder's row lock, held to the end of the transaction, makes the decision stick: a claim
 * skips the job (SKIP LOCKED) and a finish waits, so a "pending" holder is still pending when it
 * is replaced; two enqueues that both judge a holder out of scope serialise on it, and the second
 * finds the key released (its FOR UPDATE re-reads the row) and meets the first one's new job.
 */
import type { InsertResult, NewJob } from "../types.js";
import { holderAction, replacementRunAt } from "../unique.js";
import type { Queryable } from "./connection.js";
import type { Db } from "./db.js";
import { type Row, toJob } from "./rows.js";

/** Rounds before giving up: each round means a holder gave the key up or vanished meanwhile. */
const ROUNDS = 5;

/**
 * `insert` tries the INSERT … ON CONFLICT DO NOTHING of this one job and answers its result, or
 * null on a conflict. `on` must be a transaction's client (the holder's lock lasts until COMMIT).
 */
export async function insertScoped(
  db: Db,
  on: Queryable,
  job: NewJob,
  payload: string,
  insert: () => Promise<InsertResult | null>,
): Promise<InsertResult> {
  const rule = job.unique as NonNullable<NewJob["unique"]>;
  for (let round = 0; round < ROUNDS; round++) {
    const inserted = await insert();
    if (inserted) return inserted;
    const { rows } = await db.run("LOCK_KEY_HOLDER", [job.queue, job.key], on, false);
    if (rows.length === 0) continue; // given up or deleted since the insert met it
    const holder = toJob(rows[0] as Row);
    const now = Number((rows[0] as Row).now_ms);
    const action = holderAction(rule, holder, now);
    if (action === "match") return { job: holder, created: false };
    if (action === "replace") {
      const runAt = replacementRunAt(rule, job, holder.createdAt, now);
      const replaced = await db.run(
        "REPLACE_KEY_HOLDER",
        [holder.id, payload, runAt, job.priority, job.flowKey ?? null],
        on,
        false,
      );
      return { job: toJob(replaced.rows[0] as Row), created: false, replaced: true };
    }
    await db.run("RELEASE_KEY", [holder.id], on, false);
  }
  throw new Error(
    `could not insert or find the job holding key "${job.key}" of queue "${job.queue}"; try again`,
  );
}
