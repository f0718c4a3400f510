/**
 * The claim's answer as rows of per-column arrays (CLAIM_JOBS), decoded into claimed jobs.
 *
 * Why not a row per job: node-postgres builds a message, a field array and a row object per
 * row, and on a busy worker they survive young-generation collections (bench/pg-row-decode.ts
 * under `--trace-gc-nvp`: 16-29% of the young generation survives each scavenge with 10-250
 * rows per query, 0% with one row), so a no-op job's claim row cost the worker more than its
 * parsing. Measured (bench/NOTES.md finding 21): `BENCH_CRASH_SCOPE=1 node --import tsx
 * bench/one-worker.ts postgres 50000 10`, alternated with the row-per-job claim three times,
 * 20.8 / 20.3 / 15.6 → 14.7 / 11.4 / 12.7 ms of worker CPU per 1,000 jobs, 11 → 9-10
 * scavenges (three later alternations at load ~3: 14.5-19.9 → 12.7-17.5 ms); `npm run bench -- --only errand-postgres --workload process-c10-p1`, four runs each
 * in ABBA order: 17.7-25.4 → 14.4-18.4 ms per 1,000 jobs, throughput within the noise
 * (21,373-31,246 against 24,461-32,267 jobs/s); the server's side of the claim -0.4 to +1.4 µs
 * per job (`node --import tsx bench/claim-answer-ab.ts OLD_CHECKOUT 1000`, five runs).
 *
 * The arrays come as text (`array_agg(x)::text`), split here: ids, numbers and epoch
 * milliseconds never need quoting, text columns (queue, name, key, trace_context) are parsed as
 * Postgres quotes array elements, and the payloads are joined by U+0001, which jsonb's text never
 * holds (JSON escapes every control character). All aggregates of one row read the same jobs in
 * the same order, so its arrays line up. A claim whose payloads' text passes 8 MB answers in
 * several rows (parts): one row of 1,000 payloads of 1 MB would be more than a Postgres text
 * value (1 GB) or a JavaScript string (~512 MB) can hold. The claim order (priority, run_at, id)
 * comes as each job's place in it (`ord`): the epoch milliseconds sent are floored, so they
 * cannot order jobs due within one millisecond.
 */
import { ClaimedRow } from "../claimed-row.js";
import type { ClaimedJob } from "../types.js";

/** A row of CLAIM_JOBS: every column a text array of the same jobs (payload: their jsonb texts joined by U+0001). */
export interface ClaimArraysRow {
  /** Each job's place in claim order (priority, run_at to the microsecond, id). */
  ord: string;
  id: string;
  queue: string;
  name: string;
  payload: string;
  priority: string;
  attempt: string;
  max_attempts: string;
  key: string;
  run_at: string;
  created_at: string;
  lease_token: string;
  locked_until: string;
  trace_context: string;
}

/** The payloads' separator in CLAIM_JOBS (string_agg): never inside jsonb's text. */
export const PAYLOAD_SEPARATOR = "\u0001";

/**
 * The claimed jobs of CLAIM_JOBS's rows (none when nothing was due), in claim order.
 * `parsePayload`: the jsonb parser the result was read with (db.ts jsonbParser).
 */
export function claimedFromArrays(
  rows: ClaimArraysRow[],
  parsePayload: (text: string) => unknown,
): ClaimedJob[] {
  const jobs: ClaimedJob[] = [];
  const places: number[] = [];
  for (const row of rows) appendPart(row, parsePayload, jobs, places);
  const order = places.map((_, i) => i).sort((a, b) => places[a] - places[b]);
  return order.map((i) => jobs[i]);
}

/** One row's jobs, and each one's place in claim order, appended to `jobs` and `places`. */
function appendPart(
  row: ClaimArraysRow,
  parsePayload: (text: string) => unknown,
  jobs: ClaimedJob[],
  places: number[],
): void {
  const ids = plainElements(row.id);
  const n = ids.length;
  const payloads = row.payload.split(PAYLOAD_SEPARATOR);
  if (payloads.length !== n) throw new Error(`claim answer: ${payloads.length} payloads for ${n} jobs`);
  const ord = numbers(row.ord, n, "ord");
  const queues = textElements(row.queue, n, "queue");
  const names = textElements(row.name, n, "name");
  const priorities = numbers(row.priority, n, "priority");
  const attempts = numbers(row.attempt, n, "attempt");
  const maxAttempts = numbers(row.max_attempts, n, "max_attempts");
  const keys = textElements(row.key, n, "key");
  const runAts = numbers(row.run_at, n, "run_at");
  const createdAts = numbers(row.created_at, n, "created_at");
  const tokens = numbers(row.lease_token, n, "lease_token");
  const lockedUntils = numbers(row.locked_until, n, "locked_until");
  const traces = textElements(row.trace_context, n, "trace_context");
  for (let i = 0; i < n; i++) {
    places.push(ord[i]);
    jobs.push(
      new ClaimedRow(
        ids[i],
        queues[i] as string,
        names[i] as string,
        parsePayload(payloads[i]),
        priorities[i],
        attempts[i],
        maxAttempts[i],
        keys[i],
        tokens[i],
        traces[i],
        runAts[i],
        createdAts[i],
        lockedUntils[i],
      ),
    );
  }
}

/** The elements of an array text whose elements never need quotes (numbers): `{1,2,3}`. */
function plainElements(text: string): string[] {
  return text.length === 2 ? [] : text.slice(1, -1).split(",");
}

function numbers(text: string, n: number, column: string): number[] {
  const out = plainElements(text).map(Number);
  if (out.length !== n) throw new Error(`claim answer: ${out.length} values of ${column} for ${n} jobs`);
  return out;
}

function textElements(text: string, n: number, column: string): (string | null)[] {
  const out = parseTextArray(text);
  if (out.length !== n) throw new Error(`claim answer: ${out.length} values of ${column} for ${n} jobs`);
  return out;
}

/**
 * A one-dimensional text[] as Postgres prints it: `{a,"b,c",NULL,"NULL","",x\"y}` — elements
 * that hold a comma, quote, backslash, brace or white space, the empty string and the word NULL
 * are quoted (with `\` before `"` and `\`); a bare NULL is SQL NULL. Without a quote in the text
 * no element was quoted, so a split is exact (the common case: plain queue and job names).
 */
export function parseTextArray(text: string): (string | null)[] {
  if (text.length < 2 || text[0] !== "{" || text[text.length - 1] !== "}")
    throw new Error(`claim answer: not an array: ${text.slice(0, 40)}`);
  if (text.length === 2) return [];
  if (!text.includes('"')) return text.slice(1, -1).split(",").map(bare);
  const out: (string | null)[] = [];
  let i = 1;
  const end = text.length - 1;
  while (i <= end) {
    if (text[i] === '"') {
      let value = "";
      let from = ++i;
      for (;;) {
        const c = text[i];
        if (c === "\\") {
          value += text.slice(from, i) + text[i + 1];
          i += 2;
          from = i;
        } else if (c === '"') {
          value += text.slice(from, i);
          i++;
          break;
        } else if (i >= end) throw new Error("claim answer: an unterminated quoted array element");
        else i++;
      }
      out.push(value);
    } else {
      let stop = text.indexOf(",", i);
      if (stop < 0 || stop > end) stop = end;
      out.push(bare(text.slice(i, stop)));
      i = stop;
    }
    i++; // the comma, or past the closing brace
  }
  return out;
}

const bare = (element: string): string | null => (element === "NULL" ? null : element);
