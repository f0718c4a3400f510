/**
 * Job logs: what a handler writes through ctx.log is kept with its attempt — the lines of each
 * attempt in its own history entry, bounded per attempt with a marker when cut — and only that:
 * errand's own lines about the job, and a handler that logs nothing, leave no `logs`.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { z } from "zod";
import {
  createLogger,
  defineJob,
  type Errand,
  type JobRecord,
  openErrand,
  RetryableError,
} from "../src/index.js";
import { MemoryStore } from "../src/store/memory/index.js";
import { JOB_LOG_MAX_BYTES, JOB_LOG_MAX_LINE, JOB_LOG_MAX_LINES } from "../src/worker/job-log.js";
import { targets } from "./helpers/targets.js";
import { waitFor } from "./helpers/wait.js";

/** An errand on a memory store whose process log is collected (as JSON lines). */
async function open(
  level = "info",
): Promise<{ errand: Errand; processLog: () => Array<Record<string, unknown>> }> {
  let text = "";
  const destination = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  const logger = createLogger({ level, pretty: false, destination });
  const errand = await openErrand({ store: new MemoryStore(), logger });
  return {
    errand,
    processLog: () =>
      text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Works every queue until the jobs `ids` are all in `state`; answers the last one's record. */
async function runToEnd(errand: Errand, id: string, ...more: string[]) {
  const worker = errand.work(undefined, { pollInterval: 10 });
  try {
    let last: JobRecord | undefined;
    for (const each of [id, ...more]) {
      last = await waitFor(async () => {
        const job = await errand.getJob(each);
        return job?.state === "completed" ? job : undefined;
      }, `job ${each} completed`);
    }
    return last as JobRecord;
  } finally {
    await worker.stop();
  }
}

describe("job logs", () => {
  test("each attempt keeps the lines it wrote; they still reach the process log", async () => {
    const { errand, processLog } = await open();
    const chatty = defineJob({
      name: "chatty",
      queue: "q",
      maxAttempts: 2,
      backoff: ["5ms"],
      schema: z.object({ orderId: z.number() }),
      run(payload, ctx) {
        ctx.log.info({ orderId: payload.orderId }, "charging order %d", payload.orderId);
        ctx.log.debug("below the kept level: not kept, not logged");
        const child = ctx.log.child({ step: "mail" });
        if (ctx.attempt === 1) {
          child.warn(new Error("smtp timeout"), "mail failed");
          throw new RetryableError("smtp timeout");
        }
        child.info("mail sent to postgres://bob:hunter2@db/x");
      },
    });
    errand.register(chatty);
    const job = await errand.enqueue(chatty, { orderId: 7 });
    const done = await runToEnd(errand, job.id);
    const kept = done.attempts.map((a) =>
      a.logs?.map(({ level, msg, fields }) => (fields ? { level, msg, fields } : { level, msg })),
    );
    assert.deepEqual(kept, [
      [
        { level: "info", msg: "charging order 7", fields: { orderId: 7 } },
        { level: "warn", msg: "mail failed", fields: { err: { type: "Error", message: "smtp timeout" } } },
      ],
      [
        { level: "info", msg: "charging order 7", fields: { orderId: 7 } },
        { level: "info", msg: "mail sent to postgres://bob:***@db/x" },
      ],
    ]);
    for (const line of done.attempts.flatMap((a) => a.logs ?? []))
      assert.ok(!Number.isNaN(Date.parse(line.at)));
    // The process log has the handler's lines too, with the job's fields, and errand's own lines
    // (the retry warning) stay out of the job log.
    const handlerLines = processLog().filter((l) => l.jobId === job.id && l.msg === "charging order 7");
    assert.equal(handlerLines.length, 2);
    assert.equal(handlerLines[0].job, "chatty");
    assert.ok(processLog().some((l) => l.jobId === job.id && l.msg === "job failed; will retry"));
    await errand.close();
  });

  test("a silent process logger still keeps info and up; debug is kept when the logger is at debug", async () => {
    for (const [level, expected] of [
      ["silent", ["info line"]],
      ["debug", ["debug line", "info line"]],
    ] as const) {
      const { errand } = await open(level);
      const job = defineJob({
        name: "levels",
        queue: "q",
        schema: z.object({}),
        run(_p, ctx) {
          ctx.log.trace("trace line");
          ctx.log.debug("debug line");
          ctx.log.info("info line");
        },
      });
      errand.register(job);
      const { id } = await errand.enqueue(job, {});
      const done = await runToEnd(errand, id);
      assert.deepEqual(
        done.attempts[0].logs?.map((l) => l.msg),
        expected,
        `logger level ${level}`,
      );
      await errand.close();
    }
  });

  test("a handler that never logs leaves no logs; nor does one that only reads ctx.log", async () => {
    const { errand } = await open();
    const quiet = defineJob({ name: "quiet", queue: "q", schema: z.object({}), run: () => 1 });
    const reader = defineJob({
      name: "reader",
      queue: "q",
      schema: z.object({}),
      run: (_p, ctx) => typeof ctx.log.info,
    });
    errand.register(quiet, reader);
    const a = await errand.enqueue(quiet, {});
    const b = await errand.enqueue(reader, {});
    await runToEnd(errand, a.id, b.id);
    for (const id of [a.id, b.id]) {
      const done = await errand.getJob(id);
      assert.equal(done?.state, "completed");
      assert.equal(done?.attempts[0].logs, undefined);
      assert.ok(!("logs" in (done?.attempts[0] ?? {})));
    }
    await errand.close();
  });

  test(`the caps: ${JOB_LOG_MAX_LINES} lines, ${JOB_LOG_MAX_BYTES / 1024} KiB, ${JOB_LOG_MAX_LINE} characters a line, then a marker`, async () => {
    const { errand } = await open("silent");
    const flood = defineJob({
      name: "flood",
      queue: "q",
      schema: z.object({ lines: z.number(), size: z.number() }),
      run(p, ctx) {
        for (let i = 0; i < p.lines; i++) ctx.log.info(`${i} ${"x".repeat(p.size)}`);
      },
    });
    errand.register(flood);
    const many = await errand.enqueue(flood, { lines: JOB_LOG_MAX_LINES + 50, size: 1 });
    const big = await errand.enqueue(flood, { lines: 100, size: 1000 });
    const huge = await errand.enqueue(flood, { lines: 1, size: 100_000 });
    await runToEnd(errand, many.id, big.id, huge.id);

    const manyLogs = (await errand.getJob(many.id))?.attempts[0].logs ?? [];
    assert.equal(manyLogs.length, JOB_LOG_MAX_LINES + 1);
    assert.equal(manyLogs[JOB_LOG_MAX_LINES - 1].msg, `${JOB_LOG_MAX_LINES - 1} x`);
    const marker = manyLogs[JOB_LOG_MAX_LINES];
    assert.equal(marker.dropped, 50);
    assert.equal(marker.level, "warn");
    assert.match(marker.msg, /^job log truncated: 50 more lines not kept/);

    const bigLogs = (await errand.getJob(big.id))?.attempts[0].logs ?? [];
    const kept = bigLogs.filter((l) => l.dropped === undefined);
    const bytes = kept.reduce((n, l) => n + Buffer.byteLength(JSON.stringify(l)), 0);
    assert.ok(bytes <= JOB_LOG_MAX_BYTES, `${bytes} bytes kept`);
    assert.ok(kept.length >= 20 && kept.length < 100, `${kept.length} lines of ~1 KiB kept`);
    assert.equal(bigLogs.at(-1)?.dropped, 100 - kept.length);

    const hugeLogs = (await errand.getJob(huge.id))?.attempts[0].logs ?? [];
    assert.equal(hugeLogs.length, 1);
    assert.equal(hugeLogs[0].msg.length, JOB_LOG_MAX_LINE + 1, "cut, with an ellipsis");
    assert.ok(hugeLogs[0].msg.endsWith("…"));
    await errand.close();
  });
});

for (const target of targets) {
  describe(`job logs every store can hold, on ${target.name}`, { skip: target.skip }, () => {
    test("NULs and lone surrogates in a line's text, values and keys do not cost the job its outcome", async () => {
      const { errand, cleanup } = await target.openErrand();
      try {
        const odd = defineJob({
          name: "odd",
          queue: "q",
          schema: z.object({}),
          run(_p, ctx) {
            ctx.log.info({ value: "a\u0000b\ud800" }, "text \u0000 \udc00");
            ctx.log.info({ "key\u0000": 1 }, "bad key");
          },
        });
        errand.register(odd);
        const { id } = await errand.enqueue(odd, {});
        const done = await runToEnd(errand, id);
        assert.deepEqual(
          done.attempts[0].logs?.map((l) => [l.msg, l.fields]),
          [
            ["text \ufffd \ufffd", { value: "a\ufffdb\ufffd" }],
            ["bad key", { unserializable: "the fields logged with this line have a key no store can hold" }],
          ],
        );
      } finally {
        await cleanup();
      }
    });
  });
}
