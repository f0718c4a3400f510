/**
 * Unknown option fields beyond enqueue, work and defineJob (test/unknown-options.test.ts): the
 * filters and options of operator calls, handlers and watchers. Each is a ValidationError naming
 * the field; none acts on what the typo left out (`retryFailed({ queu })` retried every queue's
 * failed jobs, `createFetchHandler({ dashbordToken })` served without the token meant).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import {
  createFetchHandler,
  createTickHandler,
  defineJob,
  PermanentError,
  runTick,
  runUntilSignal,
  ValidationError,
  watchAlerts,
} from "../src/index.js";
import { sqlTargets, withErrand } from "./helpers/targets.js";

const loose = <T>(value: Record<string, unknown>): T => value as T;

function refusal(...patterns: RegExp[]) {
  return (err: unknown) => {
    assert.ok(err instanceof ValidationError, `expected a ValidationError, got ${String(err)}`);
    for (const pattern of patterns) assert.match(err.message, pattern);
    return true;
  };
}

let effects = 0;
const broken = defineJob({
  name: "broken",
  queue: "work",
  schema: z.object({}),
  run: () => {
    throw new PermanentError("always");
  },
});
const onceTypo = defineJob({
  name: "once-typo",
  queue: "work",
  schema: z.object({}),
  run: (_payload, ctx) =>
    ctx.once(
      "charge",
      () => {
        effects++;
      },
      loose({ scop: "global" }),
    ),
});

for (const t of sqlTargets) {
  describe(`unknown option fields of operations on ${t.name}`, { skip: t.skip }, () => {
    test("listJobs, retryFailed, discardFailed, retryJobs, actOnMatchingJobs and resumeFlow refuse a typo and change nothing", () =>
      withErrand(
        t,
        async (errand) => {
          const job = await errand.enqueue(broken, {});
          assert.equal((await errand.processJobs()).failed, 1);
          assert.throws(
            () => errand.listJobs(loose({ stat: "failed" })),
            refusal(/listJobs filter has an unknown field "stat"; did you mean "state"\?/),
          );
          await assert.rejects(
            errand.retryFailed(loose({ queu: "work" })),
            refusal(/retryFailed filter has an unknown field "queu"; did you mean "queue"\?/),
          );
          await assert.rejects(
            errand.discardFailed(loose({ queu: "work" })),
            refusal(/discardFailed filter has an unknown field "queu"/),
          );
          await assert.rejects(
            errand.retryJobs(loose({ id: [job.id] })),
            refusal(/retryJobs filter has an unknown field "id"; did you mean "ids"\?/),
          );
          await assert.rejects(
            errand.actOnMatchingJobs(loose({ action: "discard", queu: "work" })),
            refusal(/actOnMatchingJobs filter has an unknown field "queu"; did you mean "queue"\?/),
          );
          await assert.rejects(
            errand.resumeFlow("work", loose({ kye: "acme" })),
            refusal(/resumeFlow options has an unknown field "kye"; did you mean "key"\?/),
          );
          assert.equal((await errand.getJob(job.id))?.state, "failed", "neither retried nor discarded");
        },
        { jobs: [broken] },
      ));

    test("ctx.once: an unknown option fails the job before the effect runs", () =>
      withErrand(
        t,
        async (errand) => {
          const job = await errand.enqueue(onceTypo, {});
          await errand.processJobs();
          const record = await errand.getJob(job.id);
          assert.match(
            record?.lastError ?? "",
            /ctx\.once options has an unknown field "scop"; did you mean "scope"\?/,
          );
          assert.equal(effects, 0);
        },
        { jobs: [onceTypo] },
      ));

    test("runTick refuses a typo before any schedule fires or job runs", () =>
      withErrand(
        t,
        async (errand) => {
          const job = await errand.enqueue(broken, {});
          await assert.rejects(
            runTick(errand, loose({ limt: 5 })),
            refusal(/runTick options has an unknown field "limt"; did you mean "limit"\?/),
          );
          assert.equal((await errand.getJob(job.id))?.state, "pending");
        },
        { jobs: [broken] },
      ));
  });
}

test("HTTP handlers, runUntilSignal and watchAlerts refuse unknown options when made", () =>
  withErrand(sqlTargets[0], async (errand) => {
    assert.throws(
      () => createFetchHandler(errand, loose({ dashbordToken: "s3cret-token-of-enough-length" })),
      refusal(
        /createFetchHandler options has an unknown field "dashbordToken"; did you mean "dashboardToken"\?/,
      ),
    );
    assert.throws(
      () => createFetchHandler(errand, loose({ tickLimit: { maximum: 5 } })),
      refusal(/tickLimit has an unknown field "maximum"/),
    );
    assert.throws(
      () => createTickHandler(errand, loose({ cronSecrt: "s3cret" })),
      refusal(/createTickHandler options has an unknown field "cronSecrt"; did you mean "cronSecret"\?/),
    );
    let started = 0;
    await assert.rejects(
      runUntilSignal(
        () => {
          started++;
          return errand.work();
        },
        errand,
        loose({ shutdownTimout: "1s" }),
      ),
      refusal(
        /runUntilSignal options has an unknown field "shutdownTimout"; did you mean "shutdownTimeout"\?/,
      ),
    );
    assert.equal(started, 0, "no worker was started");
    assert.throws(
      () => watchAlerts(errand, [{ dlqGrowth: { count: 1, window: "1m" } }], loose({ intervall: "1m" })),
      refusal(/watchAlerts options has an unknown field "intervall"; did you mean "interval"\?/),
    );
    assert.throws(
      () => watchAlerts(errand, [loose({ failureRate: { above: 0.5, window: "5m", minjobs: 3 } })]),
      refusal(/alert rule 0: failureRate has an unknown field "minjobs"; did you mean "minJobs"\?/),
    );
    assert.throws(
      () => watchAlerts(errand, [loose({ dlqGrowth: { count: 1, window: "1m" }, queues: "q" })]),
      refusal(/alert rule 0 has an unknown field "queues"; did you mean "queue"\?/),
    );
  }));
