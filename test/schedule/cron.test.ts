/**
 * Cron expressions and time zones: rejected at definition time with a clear error; slots at the
 * right UTC instants across real DST changes (DST rule in src/schedule/cron.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Cron } from "croner";
import { z } from "zod";
import { defineJob, MemoryStore, openErrand, silentLogger, ValidationError } from "../../src/index.js";
import { CronExpression } from "../../src/schedule/cron.js";
import { wallToInstant } from "../../src/schedule/zone.js";

const iso = (d: Date | null) => d?.toISOString() ?? null;
const H = 3_600_000;

/** Slots strictly after `from` and before `to`. */
function slots(expr: string, tz: string, from: string, to: string): string[] {
  const cron = CronExpression.parse(expr, tz);
  const out: string[] = [];
  let t = Date.parse(from);
  for (;;) {
    const next = cron.next(t);
    if (!next || next.getTime() >= Date.parse(to)) return out;
    out.push(next.toISOString());
    t = next.getTime();
  }
}

describe("cron validation", () => {
  const job = defineJob({ name: "j", queue: "q", schema: z.object({}), run: () => {} });

  const invalid: Array<[string, RegExp]> = [
    ["61 * * * *", /invalid cron expression "61 \* \* \* \*".*minute: 61/],
    ["* * * *", /invalid cron expression "\* \* \* \*".*five, six/],
    ["0 0 0 1 1 * 2030", /invalid cron expression.*7 parts/],
    ["hello world * * *", /invalid cron expression "hello world \* \* \*"/],
    ["*/0 * * * *", /invalid cron expression.*stepping: 0/],
    ["5-1 * * * *", /invalid cron expression.*5-1/],
    ["0 25 * * *", /invalid cron expression.*hour/],
    ["0 0 30 2 *", /never matches a date/],
    ["", /non-empty string/],
  ];

  for (const [expr, message] of invalid) {
    test(`rejects ${JSON.stringify(expr)} when the schedule is defined`, async () => {
      const errand = await openErrand({ url: "memory:", logger: silentLogger() });
      try {
        assert.throws(
          () => errand.schedule("bad", expr, job, {}),
          (err: Error) =>
            err instanceof ValidationError && message.test(err.message) && /schedule "bad"/.test(err.message),
        );
        await errand.syncSchedules();
        assert.deepEqual(await errand.store.listSchedules(), [], "nothing stored");
      } finally {
        await errand.close();
      }
    });
  }

  test("rejects unknown time zones, naming the zone and the schedule", async () => {
    const errand = await openErrand({ url: "memory:", logger: silentLogger() });
    try {
      for (const zone of ["Mars/Olympus_Mons", "Europe/Berlinn", "+01:00", ""]) {
        assert.throws(
          () => errand.schedule("tz", "0 9 * * *", job, {}, { timezone: zone }),
          (err: Error) =>
            err instanceof ValidationError &&
            err.message.includes('schedule "tz"') &&
            /time zone/.test(err.message),
          zone,
        );
      }
      // Valid zones are stored under their canonical name.
      errand.schedule("berlin", "0 9 * * *", job, {}, { timezone: "europe/berlin" });
      await errand.syncSchedules();
      const [row] = await errand.store.listSchedules();
      assert.equal(row.timezone, "Europe/Berlin");
    } finally {
      await errand.close();
    }
  });

  test("rejects bad options, names and payloads at definition time", async () => {
    const errand = await openErrand({ url: "memory:", logger: silentLogger() });
    const typed = defineJob({
      name: "typed",
      queue: "q",
      schema: z.object({ n: z.number() }),
      run: () => {},
    });
    try {
      assert.throws(
        () => errand.schedule("m", "* * * * *", job, {}, { missed: "some" as never }),
        /missed must be "latest" or "all"/,
      );
      assert.throws(
        () => errand.schedule("p", "* * * * *", job, {}, { priority: 1.5 }),
        /priority must be an integer/,
      );
      assert.throws(() => errand.schedule("has space", "* * * * *", job, {}), /schedule name must be/);
      assert.throws(
        () => errand.schedule("typed", "* * * * *", typed, { n: "x" } as never),
        /payload of schedule "typed" does not match/,
      );
      assert.throws(
        () => errand.schedule("unknown-job", "* * * * *", "no-such-job", {}),
        /unknown job "no-such-job"/,
      );
      errand.schedule("twice", "* * * * *", job, {});
      assert.throws(() => errand.schedule("twice", "0 * * * *", job, {}), /defined twice/);
    } finally {
      await errand.close();
    }
  });

  test("accepts 5 fields, 6 with seconds, and nicknames", () => {
    assert.equal(
      iso(CronExpression.parse("*/2 * * * * *").next(Date.parse("2026-01-01T00:00:00.500Z"))),
      "2026-01-01T00:00:02.000Z",
    );
    assert.equal(
      iso(CronExpression.parse("@daily").next(Date.parse("2026-01-01T00:00:00Z"))),
      "2026-01-02T00:00:00.000Z",
    );
    assert.equal(
      iso(CronExpression.parse("0 9 * * 1-5").next(Date.parse("2026-01-02T10:00:00Z"))),
      "2026-01-05T09:00:00.000Z",
    );
  });
});

describe("DST: times are UTC instants, each wall-clock time fires once", () => {
  test("Europe/Berlin spring 2026-03-29: 02:30 does not exist and fires at 03:00 CEST (01:00Z)", () => {
    assert.deepEqual(slots("30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z", "2026-03-31T12:00:00Z"), [
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // gap → first valid instant, 03:00 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
      "2026-03-31T00:30:00.000Z",
    ]);
  });

  test("Europe/Berlin autumn 2026-10-25: 02:30 occurs twice and fires once, on the first (CEST)", () => {
    assert.deepEqual(slots("30 2 * * *", "Europe/Berlin", "2026-10-23T12:00:00Z", "2026-10-27T12:00:00Z"), [
      "2026-10-24T00:30:00.000Z",
      "2026-10-25T00:30:00.000Z", // 02:30 CEST; not again at 02:30 CET (01:30Z)
      "2026-10-26T01:30:00.000Z", // 02:30 CET
      "2026-10-27T01:30:00.000Z",
    ]);
  });

  test("Europe/Berlin hourly: 23 slots on the spring day, 24 on the 25-hour autumn day (the repeated hour fires once)", () => {
    const spring = slots("0 * * * *", "Europe/Berlin", "2026-03-28T22:59:59Z", "2026-03-29T22:00:00Z");
    assert.equal(spring.length, 23);
    assert.deepEqual(spring.slice(0, 4), [
      "2026-03-28T23:00:00.000Z",
      "2026-03-29T00:00:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T02:00:00.000Z",
    ]);
    const autumn = slots("0 * * * *", "Europe/Berlin", "2026-10-24T21:59:59Z", "2026-10-25T23:00:00Z");
    assert.equal(autumn.length, 24);
    // 02:00 CEST (00:00Z) fires; 02:00 CET (01:00Z) is the same wall time and does not.
    assert.deepEqual(autumn.slice(1, 5), [
      "2026-10-24T23:00:00.000Z",
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
      "2026-10-25T03:00:00.000Z",
    ]);
    assert.equal(new Set(autumn).size, autumn.length);
  });

  test("America/New_York: 02:30 on 2026-03-08 fires at 03:00 EDT; 01:30 on 2026-11-01 fires once (EDT)", () => {
    assert.deepEqual(
      slots("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
      ["2026-03-07T07:30:00.000Z", "2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"],
    );
    assert.deepEqual(
      slots("30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z", "2026-11-03T00:00:00Z"),
      [
        "2026-10-31T05:30:00.000Z",
        "2026-11-01T05:30:00.000Z", // 01:30 EDT; not again at 01:30 EST (06:30Z)
        "2026-11-02T06:30:00.000Z",
      ],
    );
  });

  test("UTC (the default) has no DST: every hour fires", () => {
    assert.equal(slots("0 * * * *", "UTC", "2026-10-24T23:59:59Z", "2026-10-25T23:59:59Z").length, 24);
    assert.equal(CronExpression.parse("0 * * * *").timezone, "UTC");
  });

  test("next and latest agree with an exhaustive scan of wall-clock times near transitions", () => {
    const cases: Array<[string, string, string]> = [
      ["*/7 * * * *", "Europe/Berlin", "2026-10-24T20:00:00Z"],
      ["*/7 * * * *", "Europe/Berlin", "2026-03-28T20:00:00Z"],
      ["13 1-3 * * *", "America/New_York", "2026-11-01T00:00:00Z"],
      ["13 1-3 * * *", "America/New_York", "2026-03-08T00:00:00Z"],
      ["0,30 * * * *", "Australia/Lord_Howe", "2026-04-04T10:00:00Z"], // a 30-minute DST shift
      ["0,30 * * * *", "Australia/Lord_Howe", "2026-10-03T10:00:00Z"],
    ];
    for (const [expr, tz, from] of cases) {
      const start = Date.parse(from);
      const end = start + 12 * H;
      // Expected: every matching wall time (croner in UTC: no DST), mapped by the rule, de-duplicated.
      const wallMatches = new Cron(expr, { timezone: "UTC", paused: true });
      const expected = new Set<number>();
      for (
        let wall = wallMatches.nextRun(new Date(start - 24 * H));
        wall && wall.getTime() < end + 24 * H;
        wall = wallMatches.nextRun(wall)
      ) {
        const instant = wallToInstant(tz, wall.getTime());
        if (instant > start && instant < end) expected.add(instant);
      }
      const want = [...expected].sort((a, b) => a - b).map((t) => new Date(t).toISOString());
      assert.deepEqual(
        slots(expr, tz, new Date(start).toISOString(), new Date(end).toISOString()),
        want,
        `${expr} ${tz} next`,
      );
      const cron = CronExpression.parse(expr, tz);
      for (let t = start + 60_000; t < end; t += 97_000) {
        const before = want.filter((s) => Date.parse(s) <= t).pop();
        if (before)
          assert.equal(iso(cron.latest(t)), before, `${expr} ${tz} latest at ${new Date(t).toISOString()}`);
      }
    }
  });

  test("a per-second schedule inside the repeated hour answers quickly", () => {
    const cron = CronExpression.parse("* * * * * *", "Europe/Berlin");
    const started = performance.now();
    assert.equal(iso(cron.next(Date.parse("2026-10-25T01:00:00Z"))), "2026-10-25T02:00:00.000Z");
    assert.equal(iso(cron.latest(Date.parse("2026-10-25T01:30:00Z"))), "2026-10-25T00:59:59.000Z");
    assert.ok(performance.now() - started < 200, "binary search, not a scan of 3600 matches");
  });

  test("a worker's scheduler fires the right UTC slots across the Berlin spring change", async () => {
    let now = Date.parse("2026-03-28T23:55:00Z");
    const store = new MemoryStore({ clock: () => now });
    const errand = await openErrand({ store, logger: silentLogger() });
    try {
      const job = defineJob({ name: "j", queue: "q", schema: z.object({}), run: () => {} });
      errand.schedule("half-hourly", "30 * * * *", job, {}, { timezone: "Europe/Berlin", missed: "all" });
      errand.schedule("daily", "30 2 * * *", job, {}, { timezone: "Europe/Berlin" });
      for (; now <= Date.parse("2026-03-29T03:00:00Z"); now += 5 * 60_000) await errand.fireSchedules();
      const keys = (await errand.listJobs({ limit: 100 })).jobs.map((j) => j.key).sort();
      assert.deepEqual(keys, [
        "cron:daily:2026-03-29T01:00:00.000Z",
        "cron:half-hourly:2026-03-29T00:30:00.000Z", // 01:30 CET
        "cron:half-hourly:2026-03-29T01:00:00.000Z", // 02:30 does not exist → 03:00 CEST
        "cron:half-hourly:2026-03-29T01:30:00.000Z", // 03:30 CEST
        "cron:half-hourly:2026-03-29T02:30:00.000Z", // 04:30 CEST
      ]);
    } finally {
      await errand.close();
    }
  });
});
