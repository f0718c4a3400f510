/**
 * Dependencies and flows through the public API, on every store: enqueueFlow with named nodes,
 * workers running a fan-out/fan-in in dependency order, ctx.dependencies() in the fan-in job,
 * `dependsOn` of one enqueue, the job view (links, why it waits), and bad input — a cycle, an
 * unknown node, a flow over the size limit, a missing dependency — refused with nothing stored.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import Database from "better-sqlite3";
import { z } from "zod";
import { MAX_FLOW_JOBS } from "../src/dependencies.js";
import {
  defineJob,
  type Errand,
  type JobEvent,
  openErrand,
  silentLogger,
  ValidationError,
} from "../src/index.js";
import type { PostgresStore } from "../src/store/postgres/index.js";
import { target, targets, withErrand } from "./helpers/targets.js";

const finishedAt = new Map<string, number>();
const startedAfter: Array<{ id: string; deps: string[] }> = [];

const step = defineJob({
  name: "step",
  queue: "flow",
  schema: z.object({ n: z.number() }),
  async run(payload, ctx) {
    const deps = await ctx.dependencies();
    startedAfter.push({ id: ctx.job.id, deps: Object.keys(deps.byId) });
    const sum = Object.values(deps.byId).reduce((a: number, b) => a + (b as number), 0);
    return payload.n + sum;
  },
});

const collect = defineJob({
  name: "collect",
  queue: "flow",
  schema: z.object({}),
  async run(_payload, ctx) {
    const deps = await ctx.dependencies();
    return { byName: deps.byName, count: deps.jobs.length };
  },
});

async function count(errand: Errand): Promise<number> {
  return (await errand.listJobs({ limit: 1000 })).jobs.length;
}

function untilCompleted(errand: Errand, id: string): Promise<JobEvent> {
  return new Promise((resolve) => {
    const on = (event: JobEvent) => {
      finishedAt.set(event.job.id, performance.now());
      if (event.job.id === id) {
        errand.off("completed", on);
        resolve(event);
      }
    };
    errand.on("completed", on);
  });
}

for (const target of targets) {
  describe(`flows on ${target.name}`, { skip: target.skip }, () => {
    test("a flow runs in dependency order; the fan-in job reads every result by node name", () =>
      withErrand(target, async (errand) => {
        errand.register(step, collect);
        const flow = await errand.enqueueFlow({
          jobs: {
            // Given out of order on purpose: the flow is stored in dependency order.
            total: { job: collect, payload: {}, dependsOn: ["a", "b", "c"] },
            root: { job: step, payload: { n: 1 } },
            a: { job: step, payload: { n: 10 }, dependsOn: ["root"] },
            b: { job: step, payload: { n: 20 }, dependsOn: ["root"] },
            c: { job: "step", payload: { n: 30 }, dependsOn: ["a", "b"] },
          },
        });
        assert.deepEqual(Object.keys(flow.ids).sort(), ["a", "b", "c", "root", "total"]);
        assert.equal(flow.jobs.root.state, "pending");
        assert.equal(flow.jobs.total.state, "waiting");
        const waiting = await errand.whyWaiting(flow.ids.total);
        assert.equal(waiting?.[0].kind, "dependencies");
        assert.match(waiting?.[0].message ?? "", /waiting for dependencies: 0 of 3 done/);
        const links = await errand.getJobLinks(flow.ids.root);
        assert.deepEqual(
          links.dependents.map((d) => d.node),
          ["a", "b"],
        );
        startedAfter.length = 0;
        const done = untilCompleted(errand, flow.ids.total);
        const worker = errand.work({ flow: { concurrency: 4 } });
        const event = await done;
        await worker.stop();
        // root 1; a 11, b 21; c = 30 + 11 + 21 = 62.
        assert.deepEqual(event.result, { byName: { a: 11, b: 21, c: 62 }, count: 3 });
        for (const { id, deps } of startedAfter) {
          for (const dep of deps) {
            assert.ok(
              (finishedAt.get(dep) ?? Number.POSITIVE_INFINITY) <= (finishedAt.get(id) ?? 0),
              `job ${id} finished after its dependency ${dep}`,
            );
          }
        }
        assert.equal((await errand.getJob(flow.ids.total))?.state, "completed");
      }));

    test("dependsOn of one enqueue: waiting until the job completes, shown in the job view", () =>
      withErrand(target, async (errand) => {
        const first = await errand.enqueue(step, { n: 1 });
        const second = await errand.enqueue(
          step,
          { n: 2 },
          { dependsOn: [first], onDependencyFailure: "cancel" },
        );
        assert.equal(second.state, "waiting");
        const links = await errand.getJobLinks(second.id);
        assert.deepEqual(
          links.dependencies.map((d) => [d.id, d.state]),
          [[first.id, "pending"]],
        );
        await errand.cancel(first.id);
        const after = await errand.getJob(second.id);
        assert.equal(after?.state, "cancelled");
        assert.equal(after?.lastError, `dependency job ${first.id} was cancelled`);
      }));

    test("bad input: a cycle, an unknown node, a bad policy, a flow over the size limit, a missing dependency — nothing stored", () =>
      withErrand(target, async (errand) => {
        const refused = async (promise: Promise<unknown>, pattern: RegExp) =>
          assert.rejects(promise, (err: Error) => {
            assert.ok(err instanceof ValidationError, `${err}`);
            assert.match(err.message, pattern);
            return true;
          });
        await refused(
          errand.enqueueFlow({
            jobs: {
              a: { job: step, payload: { n: 1 }, dependsOn: ["c"] },
              b: { job: step, payload: { n: 2 }, dependsOn: ["a"] },
              c: { job: step, payload: { n: 3 }, dependsOn: ["b"] },
              d: { job: step, payload: { n: 4 } },
            },
          }),
          /cycle: "a" → "b" → "c" → "a"/,
        );
        await refused(
          errand.enqueueFlow({ jobs: { a: { job: step, payload: { n: 1 }, dependsOn: ["a"] } } }),
          /cycle: "a" → "a"/,
        );
        await refused(
          errand.enqueueFlow({ jobs: { a: { job: step, payload: { n: 1 }, dependsOn: ["nope"] } } }),
          /depends on "nope", which is not a job of this flow/,
        );
        await refused(
          errand.enqueueFlow({
            jobs: { a: { job: step, payload: { n: 1 } } },
            onDependencyFailure: "explode" as never,
          }),
          /onDependencyFailure must be one of "fail", "cancel", "run"/,
        );
        const big: Record<string, { job: typeof step; payload: { n: number } }> = {};
        for (let i = 0; i <= MAX_FLOW_JOBS; i++) big[`n${i}`] = { job: step, payload: { n: i } };
        await refused(errand.enqueueFlow({ jobs: big }), /10001 jobs; at most 10000 per flow/);
        await refused(
          errand.enqueueFlow({
            jobs: {
              a: { job: step, payload: { n: 1 } },
              b: { job: step, payload: { n: 2 }, dependsOn: ["a", { id: "999999" }] },
            },
          }),
          /no job with id 999999/,
        );
        await refused(errand.enqueue(step, { n: 1 }, { dependsOn: ["999998"] }), /no job with id 999998/);
        await refused(
          errand.enqueue(step, { n: 1 }, { dependsOn: ["abc"] }),
          /a dependency must be a job id/,
        );
        await refused(
          errand.enqueueFlow({
            jobs: {
              a: { job: step, payload: { n: 1 } },
              b: { job: step, payload: { n: "two" } as never, dependsOn: ["a"] },
            },
          }),
          /flow job "b" payload does not match the schema/,
        );
        assert.equal(await count(errand), 0, "nothing was stored");
      }));
  });
}

describe("enqueueFlow inside the application's transaction", () => {
  test("SQLite: inside db.transaction, stored synchronously with the transaction, or not at all", async () => {
    const dir = mkdtempSync(join(tmpdir(), "errand-flow-tx-"));
    const db = new Database(join(dir, "app.db"));
    const errand = await openErrand({ db, logger: silentLogger() });
    try {
      const spec = {
        jobs: {
          a: { job: step, payload: { n: 1 } },
          b: { job: step, payload: { n: 2 }, dependsOn: ["a"] },
        },
      };
      assert.throws(() =>
        db.transaction(() => {
          void errand.enqueueFlow(spec, { tx: db });
          throw new Error("rollback");
        })(),
      );
      assert.equal(await count(errand), 0, "rolled back with the application's transaction");
      let flow: Promise<{ ids: Record<string, string> }> | undefined;
      db.transaction(() => {
        flow = errand.enqueueFlow(spec, { tx: db });
      })();
      const { ids } = await (flow as Promise<{ ids: Record<string, string> }>);
      assert.equal((await errand.getJob(ids.b))?.state, "waiting");
      assert.throws(
        () =>
          db.transaction(() => {
            void errand.enqueueFlow(
              { jobs: { x: { job: step, payload: { n: 1 }, dependsOn: [{ id: "424242" }] } } },
              { tx: db },
            );
          })(),
        /no job with id 424242/,
      );
      assert.equal(await count(errand), 2);
    } finally {
      await errand.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(
    "PostgreSQL: with { tx: client }, the flow exists iff the transaction commits",
    { skip: target("postgres").skip },
    () =>
      withErrand(target("postgres"), async (errand) => {
        const client = await (errand.store as PostgresStore).pool.connect();
        try {
          const spec = {
            jobs: {
              a: { job: step, payload: { n: 1 } },
              b: { job: step, payload: { n: 2 }, dependsOn: ["a"] },
            },
          };
          await client.query("BEGIN");
          await errand.enqueueFlow(spec, { tx: client });
          await client.query("ROLLBACK");
          assert.equal(await count(errand), 0);
          await client.query("BEGIN");
          const { ids } = await errand.enqueueFlow(spec, { tx: client });
          await client.query("COMMIT");
          assert.equal((await errand.getJob(ids.b))?.state, "waiting");
          assert.deepEqual(
            (await errand.getJobLinks(ids.b)).dependencies.map((d) => d.node),
            ["a"],
          );
        } finally {
          client.release();
        }
      }),
  );
});
