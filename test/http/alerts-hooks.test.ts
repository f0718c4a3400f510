/**
 * watchAlerts with an `onAlert` hook that never settles — a pager or chat SDK call stuck on a
 * connection that went silent, with no timeout of its own. The watcher promises that a failing
 * hook never stops it: the check must still resolve, later episodes must still be reported, and
 * the stuck call is logged.
 *
 * Before the fix every check awaited the hook: `check()` never resolved, and since checks run
 * one at a time, no alert of any rule was evaluated or reported again in that process.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { pino } from "pino";
import { type Alert, watchAlerts } from "../../src/alerts.js";
import { MemoryStore, openErrand, silentLogger, ValidationError } from "../../src/index.js";
import { within } from "../helpers/wait.js";
import { defs, seed, sendEmail } from "./helpers.js";

function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

test("an onAlert hook that never settles is given up after hookTimeout; the watcher goes on", async () => {
  const errand = await openErrand({
    store: new MemoryStore(),
    jobs: defs(sendEmail),
    logger: silentLogger(),
  });
  const { logger, lines } = capturingLogger();
  const fired: Alert[] = [];
  const resolved: Alert[] = [];
  const watcher = watchAlerts(
    errand,
    [{ queue: "emails", failureRate: { above: 0.5, window: "1h", minJobs: 2 } }],
    {
      onAlert: (alert) => {
        fired.push(alert);
        return new Promise<void>(() => {}); // stuck for ever
      },
      onResolve: (alert) => {
        resolved.push(alert);
      },
      hookTimeout: "200ms",
      interval: "1h",
      logger,
    },
  );
  try {
    await seed(errand, 0, 2);
    const first = await within(watcher.check(), 10_000, "the check with a stuck onAlert hook");
    assert.deepEqual(
      first.map((a) => a.status),
      ["firing"],
    );
    assert.ok(
      lines.some((l) => /onAlert hook did not settle within 200 ms/.test(l.msg)),
      "the stuck hook is logged",
    );
    await seed(errand, 10, 0);
    const second = await within(watcher.check(), 10_000, "the next check");
    assert.deepEqual(
      second.map((a) => a.status),
      ["resolved"],
    );
    assert.equal(resolved.length, 1, "the resolve was reported");
    await seed(errand, 0, 40);
    await within(watcher.check(), 10_000, "a check after that");
    assert.equal(fired.length, 2, "a new episode fired again");
  } finally {
    watcher.stop();
    await errand.close();
  }
});

test("hookTimeout must be a positive duration", async () => {
  const errand = await openErrand({ store: new MemoryStore(), logger: silentLogger() });
  try {
    for (const hookTimeout of ["0s", "soon", -5] as const) {
      assert.throws(
        () =>
          watchAlerts(errand, [{ dlqGrowth: { count: 1, window: "1m" } }], {
            hookTimeout: hookTimeout as never,
          }),
        (err: unknown) => err instanceof ValidationError && /hookTimeout/.test((err as Error).message),
        String(hookTimeout),
      );
    }
  } finally {
    await errand.close();
  }
});
