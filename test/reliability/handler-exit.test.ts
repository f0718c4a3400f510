/**
 * A handler that calls `process.exit(0)` ends `errand worker` in the middle of its work: the
 * running jobs are abandoned (they come back when their leases expire). A supervisor that
 * restarts only failed processes (systemd's Restart=on-failure, a container's on-failure policy)
 * must see a failure, so the worker's exit code is 1 whatever code the handler asked for, and
 * stderr says why.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { exitOf, inspect, PROCESS_JOBS, scratch, start, waitFor } from "../cli/helpers.js";
import { neighbour, quitter } from "../fixtures/process-jobs.js";

const s = scratch("errand-handler-exit-");
after(() => s.cleanup());

test("process.exit(0) from a handler ends the worker with exit code 1 and says so", async () => {
  const errand = await inspect(s.db, [quitter, neighbour]);
  try {
    const other = await errand.enqueue(neighbour, { ms: 60_000 });
    const proc = start(
      ["worker", "--jobs", PROCESS_JOBS, "--url", s.db, "--concurrency", "2", "--poll-interval", "100ms"],
      { ERRAND_FIXTURE_DIR: s.dir },
    );
    await waitFor("the neighbour to run", async () => (await errand.getJob(other.id))?.state === "running");
    await errand.enqueue(quitter, {});
    const result = await exitOf(proc, 30_000);
    assert.equal(result.code, 1, `exit code ${result.code}; stderr: ${result.stderr}`);
    assert.match(result.stderr, /the process exited while the worker ran 2 job\(s\)/);
    // The neighbour was abandoned, not finished: it waits for its lease to run out.
    assert.equal((await errand.getJob(other.id))?.state, "running");
  } finally {
    await errand.close();
  }
});
