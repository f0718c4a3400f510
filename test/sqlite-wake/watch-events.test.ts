/**
 * watch.ts on its own (src/store/sqlite/watch.ts): a burst of file events is looked at once per
 * event-loop turn, other files are ignored, and a check that finds nothing (or throws) is followed
 * up shortly.
 *
 * Each test gets its own folder under os.tmpdir().
 *
 *   node --import tsx --test test/sqlite-wake/watch-events.test.ts
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import { dirname, join } from "node:path";
import { type TestContext, test } from "node:test";
import { watchCommits } from "../../src/store/sqlite/watch.js";
import { tempPath } from "../helpers/sqlite.js";
import { sleep, within } from "../helpers/wait.js";
import { WAIT_MS } from "./setup.js";

// ── watch.ts on its own: coalescing and follow-ups ─────────────────────────────────────────

/** A directory with a would-be database `x.db` in it; the files are plain files here. */
async function watchedDir(t: TestContext): Promise<{ dir: string; file: string }> {
  const file = await tempPath(t, "errand-sqlite-watch-");
  return { dir: dirname(file), file };
}

/**
 * watchCommits on `file` with a check that answers `answer(n)` for its n-th call (1-based; it
 * may throw) and counts its calls. `commitSeen()` resolves at the next call that answers true.
 */
function countedWatch(t: TestContext, file: string, answer: (n: number) => boolean = () => true) {
  let checks = 0;
  let seen: (() => void) | null = null;
  const watch = watchCommits(
    file,
    () => {
      const changed = answer(++checks);
      if (changed) seen?.();
      return changed;
    },
    (err) => assert.fail(err),
  );
  t.after(() => watch.close());
  return {
    checks: () => checks,
    commitSeen: () => new Promise<void>((resolve) => (seen = resolve)),
  };
}

test("a burst of file events is looked at once per event-loop turn, not once per event", async (t) => {
  const { dir, file } = await watchedDir(t);
  let events = 0;
  const counter = fs.watch(dir, { persistent: false }, () => events++);
  t.after(() => counter.close());
  const watch = countedWatch(t, file);
  const first = watch.commitSeen();
  // Alternating names, so the kernel cannot merge consecutive identical events: 400 events.
  for (let i = 0; i < 200; i++) {
    fs.appendFileSync(`${file}-wal`, "frame");
    fs.appendFileSync(file, "page");
  }
  await within(first, WAIT_MS, "the first check");
  await sleep(300); // room for any further checks to run
  assert.ok(events > 50, `the burst raised only ${events} events: this test proves nothing`);
  assert.ok(watch.checks() < 5, `${events} events in one turn were looked at ${watch.checks()} times`);
});

test("events on other files in the directory are not looked at", async (t) => {
  const { dir, file } = await watchedDir(t);
  const watch = countedWatch(t, file);
  for (let i = 0; i < 20; i++) fs.appendFileSync(join(dir, "app.log"), "line\n");
  fs.appendFileSync(`${file}-shm`, "mapped");
  await sleep(100); // their events are delivered in turns of their own
  const woken = watch.commitSeen();
  fs.appendFileSync(`${file}-journal`, "page"); // a real one, after the others
  await within(woken, WAIT_MS, "the check for the journal");
  assert.equal(watch.checks(), 1);
});

test("a check that finds nothing new is repeated shortly (the writer may not have published yet)", async (t) => {
  const { file } = await watchedDir(t);
  // The first look finds nothing (as when the WAL frames are written but the shared-memory
  // index not yet updated); only a later look, with no further event, can see the commit.
  const watch = countedWatch(t, file, (n) => n >= 2);
  const woken = watch.commitSeen();
  fs.appendFileSync(`${file}-wal`, "frame");
  await within(woken, WAIT_MS, "a second look without a second event");
  await sleep(300);
  assert.equal(watch.checks(), 2, "no more looks once one saw the commit");
});

test("a check that throws counts as nothing new: no crash, and a follow-up looks again", async (t) => {
  const { file } = await watchedDir(t);
  const watch = countedWatch(t, file, (n) => {
    if (n < 2) throw new Error("SQLITE_BUSY");
    return true;
  });
  const woken = watch.commitSeen();
  fs.appendFileSync(`${file}-wal`, "frame");
  await within(woken, WAIT_MS, "a look after the one that threw");
});
