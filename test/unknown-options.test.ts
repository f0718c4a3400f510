/**
 * Option objects take only the fields errand knows: a typo (`runat`, `dealy`, `maxAttemps`) or a
 * field in the wrong place (enqueueMany's options meant for every item) is a ValidationError
 * naming it, with the known field it is close to — never ignored, which ran the job now, with
 * the default attempts, without the limit. Nothing is stored. TypeScript catches such fields only
 * in object literals; these calls go through variables, as JavaScript callers and spreads do.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type Database from "better-sqlite3";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger, ValidationError } from "../src/index.js";
import { closestField } from "../src/known-fields.js";
import { createTestErrand } from "../src/testing/index.js";
import { target, targets, withErrand } from "./helpers/targets.js";

const email = defineJob({
  name: "send-email",
  queue: "emails",
  schema: z.object({ to: z.string() }),
  run: () => {},
});

/** Options as JavaScript (or a variable) hands them over: no excess-property check. */
const loose = <T>(value: Record<string, unknown>): T => value as T;

/** A ValidationError whose message matches every pattern. */
function refusal(...patterns: RegExp[]) {
  return (err: unknown) => {
    assert.ok(err instanceof ValidationError, `expected a ValidationError, got ${String(err)}`);
    for (const pattern of patterns) assert.match(err.message, pattern);
    return true;
  };
}

async function jobCount(errand: Errand): Promise<number> {
  return (await errand.listJobs({ limit: 1000 })).jobs.length;
}

test("the closest known field: case, a swap, a missing or extra letter; nothing for a stranger", () => {
  const known = ["priority", "delay", "runAt", "maxAttempts", "key", "tx"];
  assert.equal(closestField("runat", known), "runAt");
  assert.equal(closestField("dealy", known), "delay");
  assert.equal(closestField("maxAttemps", known), "maxAttempts");
  assert.equal(closestField("priorty", known), "priority");
  assert.equal(closestField("kye", known), "key");
  assert.equal(closestField("color", known), undefined);
  // Short names: one edit at most, or every short word would be "close".
  assert.equal(closestField("id", known), undefined);
});

for (const t of targets) {
  describe(`unknown option fields on ${t.name}`, { skip: t.skip }, () => {
    test("enqueue: a typo is refused with the field and the suggestion; nothing is stored", () =>
      withErrand(t, async (errand) => {
        const tomorrow = new Date(Date.now() + 86_400_000);
        await assert.rejects(
          errand.enqueue(email, { to: "a@b.c" }, loose({ runat: tomorrow })),
          refusal(/enqueue options has an unknown field "runat"; did you mean "runAt"\?/, /known: priority,/),
        );
        await assert.rejects(
          errand.enqueue(email, { to: "a@b.c" }, loose({ dealy: "5m" })),
          refusal(/unknown field "dealy"; did you mean "delay"\?/),
        );
        await assert.rejects(
          errand.enqueue(email, { to: "a@b.c" }, loose({ maxAttemps: 5 })),
          refusal(/unknown field "maxAttemps"; did you mean "maxAttempts"\?/),
        );
        // Undefined counts: `{ dealy: maybeDelay }` is a typo whatever its value.
        await assert.rejects(
          errand.enqueue(email, { to: "a@b.c" }, loose({ dealy: undefined })),
          refusal(/unknown field "dealy"/),
        );
        // A known field left undefined is fine.
        await errand.enqueue(email, { to: "ok@b.c" }, { delay: undefined, key: undefined });
        assert.equal(await jobCount(errand), 1);
      }));

    test("enqueueMany: an item's unknown field names the item; the third argument takes only tx", () =>
      withErrand(t, async (errand) => {
        await assert.rejects(
          errand.enqueueMany(email, [
            { payload: { to: "a@b.c" } },
            loose({ payload: { to: "d@e.f" }, dealy: "5s" }),
          ]),
          refusal(/item 1 has an unknown field "dealy"; did you mean "delay"\?/),
        );
        await assert.rejects(
          errand.enqueueMany(email, [{ payload: { to: "a@b.c" } }], loose({ delay: "5s" })),
          refusal(
            /enqueueMany options has an unknown field "delay" \(known: tx\)/,
            /The options of a job go on each item, next to its payload/,
          ),
        );
        assert.equal(await jobCount(errand), 0, "no item of a refused call is stored");
      }));

    test("enqueueFlow: a node's, the flow's and the options' unknown fields are refused; nothing is stored", () =>
      withErrand(t, async (errand) => {
        const flow = (node: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
          loose<Parameters<Errand["enqueueFlow"]>[0]>({
            jobs: {
              first: { job: email, payload: { to: "a@b.c" } },
              second: { job: email, payload: { to: "d@e.f" }, dependsOn: ["first"], ...node },
            },
            ...spec,
          });
        await assert.rejects(
          errand.enqueueFlow(flow({ priorty: 5 })),
          refusal(/enqueueFlow: job "second" has an unknown field "priorty"; did you mean "priority"\?/),
        );
        await assert.rejects(
          errand.enqueueFlow(flow({ onDependencyFailure: "run" })),
          refusal(/job "second": onDependencyFailure is the whole flow's, given next to jobs/),
        );
        await assert.rejects(
          errand.enqueueFlow(flow({}, { onDependencyFailur: "run" })),
          refusal(/the flow has an unknown field "onDependencyFailur"; did you mean "onDependencyFailure"\?/),
        );
        await assert.rejects(
          errand.enqueueFlow(flow({}), loose({ priority: 5 })),
          refusal(/enqueueFlow options has an unknown field "priority" \(known: tx\)/),
        );
        assert.equal(await jobCount(errand), 0);
        // What nodes took before stays: undefined key and policy, the node options.
        const ok = await errand.enqueueFlow(
          flow({ key: undefined, onDependencyFailure: undefined, delay: "1h", maxAttempts: 2 }),
        );
        assert.equal((await errand.getJob(ok.ids.second))?.maxAttempts, 2);
        // A node's debounce worked before nodes were checked (it sets the key and run time): kept.
        const debounced = await errand.enqueueFlow(flow({ debounce: { key: "digest", delay: "1m" } }));
        assert.equal((await errand.getJob(debounced.ids.second))?.key, "digest");
      }));

    test("enqueueAndWait and waitFor: a typo is refused before anything is stored or awaited", () =>
      withErrand(t, async (errand) => {
        await assert.rejects(
          errand.enqueueAndWait(email, { to: "a@b.c" }, loose({ timout: "1s" })),
          refusal(/enqueueAndWait options has an unknown field "timout"; did you mean "timeout"\?/),
        );
        assert.equal(await jobCount(errand), 0);
        const job = await errand.enqueue(email, { to: "a@b.c" });
        await assert.rejects(
          errand.waitFor(job, loose({ signl: AbortSignal.timeout(10) })),
          refusal(/waitFor options has an unknown field "signl"; did you mean "signal"\?/),
        );
      }));

    test("work and processJobs: unknown queue or worker options are refused; nothing is claimed", () =>
      withErrand(
        t,
        async (errand) => {
          const job = await errand.enqueue(email, { to: "a@b.c" });
          assert.throws(
            () => errand.work(loose({ emails: { concurency: 5 } })),
            refusal(/queue "emails" options has an unknown field "concurency"; did you mean "concurrency"\?/),
          );
          assert.throws(
            () => errand.work(loose({ emails: 5 })),
            refusal(/the options of queue "emails" must be an object like \{ concurrency: 5 \}; got 5/),
          );
          assert.throws(
            () => errand.work(["emails"], loose({ leese: "30s" })),
            refusal(/worker options has an unknown field "leese"; did you mean "lease"\?/),
          );
          assert.throws(
            () => errand.work(["emails"], loose({ retention: { complete: "1d" } })),
            refusal(/retention has an unknown field "complete"; did you mean "completed"\?/),
          );
          await assert.rejects(
            errand.processJobs(loose({ limt: 5 })),
            refusal(/processJobs options has an unknown field "limt"; did you mean "limit"\?/),
          );
          await assert.rejects(
            errand.processJobs(loose({ worker: { readAhead: "1s" } })),
            refusal(/processJobs options: worker has an unknown field "readAhead"/),
          );
          assert.equal((await errand.getJob(job.id))?.state, "pending", "no worker claimed it");
        },
        { jobs: [email] },
      ));

    test("schedule and addSchedule: an unknown option is refused; no schedule is stored", () =>
      withErrand(
        t,
        async (errand) => {
          assert.throws(
            () =>
              errand.schedule(
                "digest",
                "0 8 * * *",
                email,
                { to: "a@b.c" },
                loose({ timezon: "Europe/Paris" }),
              ),
            refusal(/schedule "digest" options has an unknown field "timezon"; did you mean "timezone"\?/),
          );
          await assert.rejects(
            errand.addSchedule(
              loose({
                name: "by-hand",
                cron: "0 8 * * *",
                jobName: "send-email",
                queue: "emails",
                payload: { to: "a@b.c" },
                mised: "all",
              }),
            ),
            refusal(/schedule "by-hand" has an unknown field "mised"; did you mean "missed"\?/),
          );
          await errand.syncSchedules();
          assert.deepEqual(await errand.listSchedules(), []);
        },
        { jobs: [email] },
      ));
  });
}

test("SQLite: inside db.transaction, an unknown field throws at once and the transaction rolls back", () =>
  withErrand(target("sqlite"), async (errand) => {
    const db = (errand.store as unknown as { db: Database.Database }).db;
    assert.throws(
      () =>
        db.transaction(() => {
          void errand.enqueue(email, { to: "first@b.c" }, { tx: db });
          void errand.enqueueMany(email, [loose({ payload: { to: "a@b.c" }, runat: new Date() })], {
            tx: db,
          });
        })(),
      refusal(/item 0 has an unknown field "runat"; did you mean "runAt"\?/),
    );
    assert.throws(
      () =>
        db.transaction(() => void errand.enqueue(email, { to: "a@b.c" }, loose({ tx: db, dealy: "1s" })))(),
      refusal(/enqueue options has an unknown field "dealy"/),
    );
    assert.equal(await jobCount(errand), 0, "the first enqueue rolled back with the transaction");
  }));

test("defineJob: unknown fields of the definition and of its nested options are refused", () => {
  const define = (fields: Record<string, unknown>) =>
    defineJob(loose<never>({ name: "d", schema: z.object({}), run: () => {}, ...fields }));
  assert.throws(
    () => define({ maxAttemps: 5 }),
    refusal(/job "d" has an unknown field "maxAttemps"; did you mean "maxAttempts"\?/),
  );
  assert.throws(
    () => define({ concurrency: { key: () => "k", limt: 2 } }),
    refusal(/job "d" concurrency has an unknown field "limt"; did you mean "limit"\?/),
  );
  assert.throws(
    () => define({ rateLimit: { limit: 2, per: "1s", kye: () => "k" } }),
    refusal(/job "d" rateLimit has an unknown field "kye"; did you mean "key"\?/),
  );
  assert.throws(
    () => define({ backoff: { bse: "1s" } }),
    refusal(/backoff has an unknown field "bse"; did you mean "base"\?/),
  );
  assert.throws(
    () => define({ debounce: { key: "k", delay: "1s", maxwait: "1m" } }),
    refusal(/job "d" debounce has an unknown field "maxwait"; did you mean "maxWait"\?/),
  );
});

test("openErrand: an unknown option is refused before any store is opened", async () => {
  const dir = await mkdtemp(join(tmpdir(), "errand-options-"));
  try {
    const path = join(dir, "errand.db");
    await assert.rejects(
      openErrand(loose({ url: path, logger: silentLogger(), shcema: "billing" })),
      refusal(/openErrand options has an unknown field "shcema"; did you mean "schema"\?/),
    );
    assert.equal(existsSync(path), false, "no database file was created");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("createTestErrand and drain: an unknown option is refused", async () => {
  await assert.rejects(
    createTestErrand(loose({ sead: 3 })),
    refusal(/createTestErrand options has an unknown field "sead"; did you mean "seed"\?/),
  );
  const t = await createTestErrand({ jobs: [email] });
  try {
    await t.errand.enqueue(email, { to: "a@b.c" }, { delay: "1h" });
    await assert.rejects(
      t.drain(loose({ untilIdel: true })),
      refusal(/drain options has an unknown field "untilIdel"; did you mean "untilIdle"\?/),
    );
    assert.equal((await t.errand.listJobs({ state: "pending" })).jobs.length, 1, "nothing ran");
  } finally {
    await t.close();
  }
});
