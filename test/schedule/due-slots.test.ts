/** dueSlots: which slots a schedule fires, by its missed policy (the pure part of firing). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CronExpression } from "../../src/schedule/cron.js";
import { dueSlots, MAX_SLOTS_PER_FIRE } from "../../src/schedule/due-slots.js";

const everyMinute = CronExpression.parse("* * * * *");
const at = (iso: string) => new Date(iso);
const isos = (slots: Date[]) => slots.map((s) => s.toISOString());

test('"all" fires every slot from next_run_at up to now, and moves on to the next slot', () => {
  const due = dueSlots(everyMinute, "all", at("2026-01-01T00:00:00Z"), Date.parse("2026-01-01T00:02:30Z"));
  assert.deepEqual(isos(due.slots), [
    "2026-01-01T00:00:00.000Z",
    "2026-01-01T00:01:00.000Z",
    "2026-01-01T00:02:00.000Z",
  ]);
  assert.equal(due.nextRunAt.toISOString(), "2026-01-01T00:03:00.000Z");
  assert.equal(due.capped, false);
  assert.equal(due.skipped, false);
});

test('"all" stops at the cap and leaves next_run_at in the past, at the first slot not fired', () => {
  const expected = at("2026-01-01T00:00:00Z");
  const due = dueSlots(everyMinute, "all", expected, Date.parse("2026-01-03T00:00:00Z"));
  assert.equal(due.slots.length, MAX_SLOTS_PER_FIRE);
  assert.equal(due.capped, true);
  assert.equal(due.nextRunAt.getTime(), expected.getTime() + MAX_SLOTS_PER_FIRE * 60_000);
});

test('"all" exactly at the cap with nothing left over is not capped', () => {
  const expected = at("2026-01-01T00:00:00Z");
  const now = expected.getTime() + (MAX_SLOTS_PER_FIRE - 1) * 60_000 + 30_000;
  const due = dueSlots(everyMinute, "all", expected, now);
  assert.equal(due.slots.length, MAX_SLOTS_PER_FIRE);
  assert.equal(due.capped, false);
});

test('"latest" fires only the latest due slot and says that slots were skipped', () => {
  const expected = at("2026-01-01T00:00:00Z");
  const due = dueSlots(everyMinute, "latest", expected, Date.parse("2026-01-01T00:05:10Z"));
  assert.deepEqual(isos(due.slots), ["2026-01-01T00:05:00.000Z"]);
  assert.equal(due.nextRunAt.toISOString(), "2026-01-01T00:06:00.000Z");
  assert.equal(due.skipped, true);
});

test('"latest" on time skips nothing; before next_run_at it fires nothing', () => {
  const onTime = dueSlots(
    everyMinute,
    "latest",
    at("2026-01-01T00:05:00Z"),
    Date.parse("2026-01-01T00:05:01Z"),
  );
  assert.deepEqual(isos(onTime.slots), ["2026-01-01T00:05:00.000Z"]);
  assert.equal(onTime.skipped, false);
  const early = dueSlots(
    everyMinute,
    "latest",
    at("2026-01-01T00:06:00Z"),
    Date.parse("2026-01-01T00:05:30Z"),
  );
  assert.deepEqual(early.slots, []);
});
