/**
 * waitFor on Postgres: the jobs this store's process waits for, recorded in `awaited` so that
 * their move to a final state sends a NOTIFY (migrations.ts 8), and the batched lookup the
 * waiters share (result-waiters.ts). Each store is one waiter: its id tells its rows apart from
 * other processes' waiting for the same jobs.
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { JobRecord } from "../../job.js";
import type { Db } from "./db.js";
import { isJobId, toJob } from "./rows.js";

/** Reads under lock of jobs a worker was writing, before giving up on them (the recheck covers those). */
const LOCK_ROUNDS = 20;

export const newWaiterId = (): string => randomUUID();

export async function getJobs(db: Db, ids: readonly string[]): Promise<JobRecord[]> {
  const valid = ids.filter(isJobId);
  if (valid.length === 0) return [];
  const { rows } = await db.run("SELECT_JOBS_BY_IDS", [valid]);
  return rows.map(toJob);
}

/**
 * Records the jobs as awaited and reads each under a share lock (sql/awaited.ts): a job a
 * worker is writing at that moment is skipped and read again after a pause of a few ms, until
 * every job was read under the lock or the rounds run out (then it is read plainly: a finish
 * in that gap is found by the recheck). Jobs that do not exist are left out.
 */
export async function awaitJobs(db: Db, waiter: string, ids: readonly string[]): Promise<JobRecord[]> {
  const valid = [...new Set(ids.filter(isJobId))];
  if (valid.length === 0) return [];
  const jobs: JobRecord[] = [];
  let rows = (await db.run("AWAIT_JOBS", [valid, waiter])).rows;
  let rest = valid;
  for (let round = 1; ; round++) {
    const read = new Set<string>();
    for (const row of rows) {
      const job = toJob(row);
      read.add(job.id);
      jobs.push(job);
    }
    rest = rest.filter((id) => !read.has(id));
    if (rest.length === 0) return jobs;
    if (round >= LOCK_ROUNDS) break;
    await sleep(Math.min(20, round * 2));
    rows = (await db.run("LOCK_JOBS_BY_IDS", [rest])).rows;
    // Skipped and absent look the same: stop reading ids that have no job.
    if (rows.length < rest.length) {
      const existing = new Set((await getJobs(db, rest)).map((j) => j.id));
      rest = rest.filter((id) => existing.has(id));
    }
  }
  return jobs.concat(await getJobs(db, rest));
}

export async function unawaitJobs(db: Db, waiter: string, ids: readonly string[]): Promise<void> {
  const valid = ids.filter(isJobId);
  if (valid.length === 0) return;
  await db.run("UNAWAIT_JOBS", [valid, waiter]);
}
