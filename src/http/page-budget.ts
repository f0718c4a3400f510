/**
 * A page of the JSON API's job list within a size budget. A page of 1,000 jobs whose payloads
 * are near the 1 MiB limit is a gigabyte: `GET /api/jobs?limit=1000` answered 500 (V8's longest
 * string) after the server had grown by 1.8 GB (a helper's find). The page is read in chunks
 * whose size follows the bytes per job seen so far, and ends once the budget is spent; its
 * `nextCursor` goes on from there, so a client that follows the cursors still sees every job.
 */
import type { Errand } from "../errand.js";
import type { JobFilter, JobPage } from "../store/types.js";

/** A page's JSON stops growing past this (one chunk may go over it). */
export const PAGE_BUDGET_BYTES = 16 * 1024 * 1024;
const FIRST_CHUNK = 20;

export async function listJobsWithin(
  errand: Errand,
  filter: JobFilter & { limit: number },
  budget = PAGE_BUDGET_BYTES,
): Promise<JobPage> {
  const jobs: JobPage["jobs"] = [];
  let cursor = filter.cursor;
  let bytes = 0;
  let chunk = Math.min(FIRST_CHUNK, filter.limit);
  for (;;) {
    const page = await errand.listJobs({ ...filter, cursor, limit: chunk });
    jobs.push(...page.jobs);
    for (const job of page.jobs) bytes += JSON.stringify(job).length;
    const left = filter.limit - jobs.length;
    if (page.nextCursor === null || left <= 0) return { jobs, nextCursor: page.nextCursor };
    const perJob = bytes / jobs.length;
    chunk = Math.min(left, Math.floor((budget - bytes) / perJob));
    if (chunk < 1) return { jobs, nextCursor: page.nextCursor };
    cursor = page.nextCursor;
  }
}
