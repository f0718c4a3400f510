/**
 * `errand worker` started before its database: it does not exit, it logs that it waits and
 * retries; once the database answers (here: a proxy to the shared server starts listening on
 * the port the worker was given) it migrates and works. The CLI runs from src/ through tsx.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { type Errand, openErrand, silentLogger } from "../../src/index.js";
import { freePort, TcpProxy } from "../chaos/proxy.js";
import { echo } from "../fixtures/jobs.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { exitOf, FIXTURE_JOBS_TS, type Running, scratch, start, waitFor } from "./helpers.js";

const skip = await skipUnlessPostgres();

describe("errand worker waits for its database", { skip }, () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test("started while nothing listens: waits, logs, then works once the database answers", async () => {
    const target = new URL(postgresUrl());
    const schema = freshSchema("errand_wait");
    cleanups.push(schema.drop);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    cleanups.push(() => proxy.close());
    const port = await freePort();
    const url = new URL(postgresUrl());
    url.hostname = "127.0.0.1";
    url.port = String(port);
    const s = scratch("errand-wait-");
    cleanups.push(s.cleanup);

    const proc: Running = start(
      [
        "worker",
        "--jobs",
        FIXTURE_JOBS_TS,
        "--url",
        url.toString(),
        "--schema",
        schema.schema,
        "--queue",
        "fast",
      ],
      { ERRAND_FIXTURE_DIR: s.dir, ERRAND_LOG_LEVEL: "info" },
      { source: true },
    );
    cleanups.push(() => {
      proc.child.kill("SIGKILL");
    });
    const waits = () => proc.stderr().match(/not reachable; waiting for it/g)?.length ?? 0;
    await waitFor(
      "the worker to log that it waits, twice",
      () => waits() >= 2 || proc.child.exitCode !== null,
      60_000,
    );
    assert.equal(proc.child.exitCode, null, `the worker exited instead of waiting:\n${proc.stderr()}`);
    assert.ok(waits() >= 2, proc.stderr());

    await proxy.listen(port);
    const admin: Errand = await openErrand({
      url: postgresUrl(),
      schema: schema.schema,
      logger: silentLogger(),
    });
    cleanups.push(() => admin.close());
    const job = await admin.enqueue(echo, { text: "after the wait" });
    await waitFor(
      "the job to be completed by the worker that waited",
      async () => (await admin.getJob(job.id))?.state === "completed" || proc.child.exitCode !== null,
      60_000,
    );
    assert.equal((await admin.getJob(job.id))?.state, "completed", proc.stderr());
    assert.match(proc.stderr(), /is reachable now/);

    proc.child.kill("SIGTERM");
    const result = await exitOf(proc, 60_000);
    assert.equal(result.code, 0, result.stderr);
  });
});
