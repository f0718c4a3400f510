/**
 * Outgrowing one primary: groups of queues on different databases, one errand per URL.
 * Two instances on two Postgres databases (test and postgres) never see each other's jobs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import pg from "pg";
import { z } from "zod";
import { defineJob, openErrand, silentLogger } from "../src/index.js";
import { postgresUrl, skipUnlessPostgres } from "./helpers/postgres.js";
import { waitFor } from "./helpers/wait.js";

const url = postgresUrl();
const skip = await skipUnlessPostgres();

test("two errand instances on two databases each run only their own queues", { skip }, async () => {
  const otherUrl = url.replace(/\/[^/?]+(\?|$)/, "/postgres$1");
  const schema = `errand_twodb_${process.pid}`;
  const ran: string[] = [];
  const email = defineJob({
    name: "email",
    queue: "emails",
    schema: z.object({ n: z.number() }),
    run: (p) => void ran.push(`email ${p.n}`),
  });
  const report = defineJob({
    name: "report",
    queue: "reports",
    schema: z.object({ n: z.number() }),
    run: (p) => void ran.push(`report ${p.n}`),
  });
  const mail = await openErrand({ url, schema, jobs: [email], logger: silentLogger() });
  const reports = await openErrand({ url: otherUrl, schema, jobs: [report], logger: silentLogger() });
  try {
    await mail.enqueueMany(email, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    await reports.enqueue(report, { n: 1 });
    assert.deepEqual(
      (await mail.stats()).map((s) => s.queue),
      ["emails"],
    );
    assert.deepEqual(
      (await reports.stats()).map((s) => s.queue),
      ["reports"],
    );
    const workers = [mail.work({ emails: {} }), reports.work({ reports: {} })];
    await waitFor(() => ran.length === 3, "all three jobs to run");
    await Promise.all(workers.map((w) => w.stop()));
    assert.deepEqual(ran.sort(), ["email 1", "email 2", "report 1"]);
    assert.equal((await mail.stats())[0].completed, 2);
    assert.equal((await reports.stats())[0].completed, 1);
  } finally {
    await mail.close();
    await reports.close();
    for (const target of [url, otherUrl]) {
      const client = new pg.Client({ connectionString: target });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
});
