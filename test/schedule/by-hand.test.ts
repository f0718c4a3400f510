/**
 * Schedules added by hand through the facade (`errand.addSchedule`, what `errand schedule add`
 * calls): the same row the scheduler builds for code-defined ones, source "cli"; bad input is a
 * ValidationError and stores nothing; `removeSchedule` answers the removed row, then null.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore, openErrand, silentLogger, ValidationError } from "../../src/index.js";

test("addSchedule stores a hand-made schedule; removeSchedule removes it; bad input stores nothing", async () => {
  const clock = { now: Date.parse("2026-05-01T10:00:30Z") };
  const errand = await openErrand({
    store: new MemoryStore({ clock: () => clock.now }),
    logger: silentLogger(),
  });
  try {
    const stored = await errand.addSchedule({
      name: "standup",
      cron: "0 9 * * 1-5",
      timezone: "Europe/Berlin",
      jobName: "remind",
      queue: "default",
      payload: { room: "A" },
    });
    assert.equal(stored.source, "cli");
    assert.equal(stored.priority, 0, "no priority given: 0");
    assert.equal(stored.missed, "latest");
    // Friday 2026-05-01 10:00 UTC is 12:00 in Berlin: the next slot is Monday 09:00 Berlin (07:00 UTC).
    assert.equal(stored.nextRunAt.toISOString(), "2026-05-04T07:00:00.000Z");
    assert.deepEqual(stored.payload, { room: "A" });

    const bad: Array<[string, Parameters<typeof errand.addSchedule>[0], RegExp]> = [
      [
        "queue",
        { name: "x", cron: "* * * * *", jobName: "j", queue: "no queue", payload: {} },
        /invalid queue name/,
      ],
      ["cron", { name: "x", cron: "61 * * * *", jobName: "j", queue: "q", payload: {} }, /schedule "x"/],
      ["name", { name: "", cron: "* * * * *", jobName: "j", queue: "q", payload: {} }, /schedule name/],
      ["payload", { name: "x", cron: "* * * * *", jobName: "j", queue: "q", payload: 1n }, /payload/],
    ];
    for (const [what, input, message] of bad) {
      await assert.rejects(errand.addSchedule(input), (err: Error) => {
        assert.ok(err instanceof ValidationError, `${what}: a ValidationError, got ${err}`);
        assert.match(err.message, message, what);
        return true;
      });
    }
    assert.deepEqual(
      (await errand.listSchedules()).map((s) => s.name),
      ["standup"],
      "nothing stored by a refused call",
    );

    assert.equal((await errand.removeSchedule("standup"))?.name, "standup");
    assert.equal(await errand.removeSchedule("standup"), null);
    assert.deepEqual(await errand.listSchedules(), []);
  } finally {
    await errand.close();
  }
});
