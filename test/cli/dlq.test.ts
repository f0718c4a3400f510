/**
 * The `errand` CLI's dead-letter queue commands: list, show, retry and discard (one, or --all with
 * --yes). Real processes on a temporary SQLite file.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { echo, fail } from "../fixtures/jobs.js";
import { inspect, run, runAll, scratch, waitFor } from "./helpers.js";

describe("dead-letter queue commands", () => {
  const s = scratch();
  const url = ["--url", s.db];
  after(() => s.cleanup());

  test("list, show, retry and discard (one or --all, which needs --yes)", async () => {
    const errand = await inspect(s.db, [echo, fail]);
    const failed: string[] = [];
    try {
      for (const reason of ["bad address", "blocked", "quota"])
        failed.push((await errand.enqueue(fail, { reason })).id);
      const ok = await errand.enqueue(echo, { text: "fine" });
      const worker = errand.work({ fast: { concurrency: 4 } });
      await waitFor("three failed jobs and one completed", async () => {
        const [st] = await errand.stats();
        return st && st.failed === 3 && st.completed === 1;
      });
      await worker.stop();
      const cancelled = await errand.enqueue(echo, { text: "cancel me" });
      await errand.cancel(cancelled.id);

      const [list, table, show, showJson] = await runAll([
        ["dlq", "list", ...url, "--json"],
        ["dlq", "list", ...url],
        ["dlq", "show", failed[0], ...url],
        ["dlq", "show", failed[0], ...url, "--json"],
      ]);
      const page = JSON.parse(list.stdout);
      assert.deepEqual(page.jobs.map((j: { id: string }) => j.id).sort(), [...failed].sort());
      for (const job of page.jobs) {
        assert.equal(job.state, "failed");
        assert.equal(job.attempts.length, 1);
        assert.equal(job.attempts[0].outcome, "failed");
        assert.equal(job.attempts[0].kind, "permanent");
      }
      assert.match(table.stdout, /^\s*ID\s+QUEUE\s+NAME\s+ATTEMPTS\s+FAILED AT\s+LAST ERROR/m);
      assert.match(table.stdout, /quota/);
      assert.match(show.stdout, /\[permanent\] bad address/);
      assert.match(
        show.stdout,
        /PermanentError: bad address\n\s+at /,
        "dlq show prints each attempt's stack",
      );
      assert.equal(JSON.parse(showJson.stdout).attempts[0].error, "bad address");

      const [notFailed, missing, both, neither] = await runAll([
        ["dlq", "retry", ok.id, ...url],
        ["dlq", "discard", "99999", ...url],
        ["dlq", "retry", failed[0], "--all", ...url],
        ["dlq", "discard", ...url],
      ]);
      assert.equal(notFailed.code, 1);
      assert.match(notFailed.stderr, /job \d+ is completed: only failed or cancelled jobs can be retried/);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /no job with id 99999/);
      assert.equal(both.code, 2);
      assert.match(both.stderr, /give job ids or --all, not both/);
      assert.equal(neither.code, 2);
      assert.match(neither.stderr, /give the ids of the jobs to discard, or --all/);

      const retried = await run(["dlq", "retry", failed[0], ...url, "--json"]);
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(JSON.parse(retried.stdout).retried[0].state, "pending");
      assert.equal((await errand.getJob(failed[0]))?.state, "pending");
      assert.equal((await errand.getJob(failed[0]))?.attempts.length, 1, "the history is kept");

      const [dryRetry, dryDiscard] = await runAll([
        ["dlq", "retry", "--all", ...url],
        ["dlq", "discard", "--all", "--queue", "fast", ...url],
      ]);
      assert.equal(dryRetry.code, 2);
      assert.match(dryRetry.stderr, /--all would retry 2 failed jobs in all queues; add --yes to do it/);
      assert.equal(dryDiscard.code, 2);
      assert.match(dryDiscard.stderr, /--all would discard 2 failed jobs in queue fast; add --yes/);
      assert.equal((await errand.listJobs({ state: "failed" })).jobs.length, 2, "a dry run changes nothing");

      const discarded = await run(["dlq", "discard", failed[1], ...url]);
      assert.equal(discarded.code, 0, discarded.stderr);
      assert.equal(await errand.getJob(failed[1]), null);

      const all = await run(["dlq", "retry", "--all", "--yes", "--queue", "fast", ...url]);
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /retried 1 failed job in queue fast/);
      assert.equal((await errand.getJob(failed[2]))?.state, "pending");
      assert.equal(
        (await errand.getJob(cancelled.id))?.state,
        "cancelled",
        "retry --all leaves cancelled jobs alone",
      );
      const none = await run(["dlq", "discard", "--all", "--yes", ...url]);
      assert.match(none.stdout, /discarded 0 failed jobs in all queues/);
    } finally {
      await errand.close();
    }
  });
});
