/**
 * Inclusive shares of a few PostgreSQL functions in `perf script` output with call chains (read
 * from stdin): for each function, the share of samples whose stack contains it. The Debian
 * server binary is stripped of its static functions (exec_bind_message and the like show as
 * [unknown]), but the exported ones below resolve, so the split of a backend's time — executor,
 * row and index writes, statement-level triggers, planning, commit, socket — can be read from
 * them. bench/backend-stacks.sh feeds it.
 *
 *   perf script -i FILE --pid PIDS -F ip,sym | node --import tsx bench/perf-stacks.ts
 */
import { createInterface } from "node:readline";

const FUNCTIONS: [string, string][] = [
  ["PortalRun", "running a statement (executor, triggers, sending rows)"],
  ["standard_ExecutorRun", "the executor"],
  ["ExecScan", "  scans (index probes of the claim, the finish's joins)"],
  ["index_getnext_slot", "  index scans"],
  ["heap_update", "  heap_update (the new row version)"],
  ["ExecInsertIndexTuples", "  index entries of the new row versions"],
  ["heap_index_delete_tuples", "  bottom-up deletion of dead index entries"],
  ["heap_page_prune_opt", "  page pruning"],
  ["heap_lock_tuple", "  row locks (FOR UPDATE)"],
  ["ExecARUpdateTriggers", "  capture of transition tables"],
  ["tuplestore_puttupleslot", "  tuplestore writes (transition tables, CTE results)"],
  ["AfterTriggerEndQuery", "statement-level triggers (count, awaited)"],
  ["pg_plan_queries", "planning"],
  ["GetCachedPlan", "plan cache"],
  ["CommitTransactionCommand", "commit"],
  ["XLogFlush", "  WAL flush"],
  ["secure_write", "socket writes"],
  ["secure_read", "socket reads"],
  ["WaitEventSetWait", "waiting for the client"],
];
const counts = new Map<string, number>(FUNCTIONS.map(([f]) => [f, 0]));
let samples = 0;
let stack = new Set<string>();
const flush = () => {
  if (stack.size === 0) return;
  samples++;
  for (const f of stack) if (counts.has(f)) counts.set(f, (counts.get(f) as number) + 1);
  stack = new Set();
};
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") flush();
  else if (/^\s/.test(line)) {
    const symbol = line.trim().split(/\s+/)[1];
    if (symbol) stack.add(symbol.split("+")[0]);
  }
}
flush();
console.log(`${samples} samples`);
for (const [f, label] of FUNCTIONS) {
  const n = counts.get(f) as number;
  console.log(`${((100 * n) / Math.max(1, samples)).toFixed(1).padStart(5)}%  ${label} (${f.trim()})`);
}
