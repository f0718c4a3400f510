/**
 * The INSERT statements of a batch of jobs (index.ts `insertJobs`): which jobs go in which
 * statement, and each statement's parameters.
 */
import type { NewJob } from "../types.js";

/**
 * Rows per INSERT statement. 5,000 rows keep a statement well under a second; on the 2-core VM
 * 2,000 and 10,000 rows per statement were no faster (100,000 jobs, bench/enqueue.ts).
 */
export const INSERT_CHUNK = 5_000;
/** Payload text per INSERT statement, past its first row (UTF-16 length × 3, an upper bound of the bytes). */
export const INSERT_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * The input positions of each INSERT statement: at most INSERT_CHUNK rows and, past the first
 * row, at most INSERT_CHUNK_BYTES of payload text (a jsonb value cannot exceed 255 MB; 5,000
 * payloads of 1 MiB could).
 */
export function insertChunks(payloads: string[], positions?: number[]): number[][] {
  const chunks: number[][] = [];
  let chunk: number[] = [];
  let bytes = 0;
  const count = positions ? positions.length : payloads.length;
  for (let k = 0; k < count; k++) {
    const i = positions ? positions[k] : k;
    // UTF-16 length: a byte count would cost a pass over every payload; 3× covers any text.
    const size = payloads[i].length * 3;
    if (chunk.length === INSERT_CHUNK || (chunk.length > 0 && bytes + size > INSERT_CHUNK_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(i);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * The parameters of INSERT_NEW_JOBS / INSERT_JOBS for one chunk, as array literals built here:
 * node-postgres's own array encoding (a type check and a regex escape per element) cost more
 * than the rest of the insert's JavaScript.
 */
export function insertValues(jobs: NewJob[], payloads: string[], chunk: number[], keyed: boolean): string[] {
  const n = chunk.length;
  const queues = new Array<string>(n);
  const names = new Array<string>(n);
  const json = new Array<string>(n);
  const priorities = new Array<number>(n);
  const attempts = new Array<number>(n);
  const runAts = new Array<number | string>(n);
  const delays = new Array<number>(n);
  const keys = keyed ? new Array<string>(n) : null;
  const quote = literalQuoter();
  for (let r = 0; r < n; r++) {
    const i = chunk[r];
    const job = jobs[i];
    queues[r] = quote(job.queue);
    names[r] = quote(job.name);
    json[r] = payloads[i];
    priorities[r] = job.priority;
    attempts[r] = job.maxAttempts;
    runAts[r] = job.runAt ? new Date(job.runAt).getTime() : "NULL";
    delays[r] = job.delayMs ?? 0;
    if (keys) keys[r] = job.key === undefined || job.key === null ? "NULL" : quote(job.key);
  }
  const values = [
    `{${queues.join(",")}}`,
    `{${names.join(",")}}`,
    `[${json.join(",")}]`,
    `{${priorities.join(",")}}`,
    `{${attempts.join(",")}}`,
    `{${runAts.join(",")}}`,
    `{${delays.join(",")}}`,
  ];
  if (keys) values.push(`{${keys.join(",")}}`);
  return values;
}

/** Quotes a text for a Postgres array literal; remembers the last one (a batch repeats its queue and name). */
function literalQuoter(): (text: string) => string {
  let lastText: string | undefined;
  let lastQuoted = "";
  return (text) => {
    if (text !== lastText) {
      lastText = text;
      lastQuoted = `"${text.replace(/["\\]/g, "\\$&")}"`;
    }
    return lastQuoted;
  };
}
