/**
 * When the watch on a SQLite database's directory cannot help — it cannot be set up, or it fails
 * later — the store says so and its poll carries the wake-ups; openErrand logs a warning and its
 * worker still starts.
 *
 * Each test gets its own file under os.tmpdir(). The safety-net poll is set to a minute wherever a
 * wake-up must come from the watch, so a wake-up that arrives within the (generous) wait cannot be
 * the poll's.
 *
 *   node --import tsx --test test/sqlite-wake/unwatchable.test.ts
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { z } from "zod";
import { createLogger, defineJob, openErrand } from "../../src/index.js";
import { connection, fresh, tempPath } from "../helpers/sqlite.js";
import { within } from "../helpers/wait.js";
import { commitOn, spyOnWatch, WAIT_MS, wakes } from "./setup.js";

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

// ── when the watch cannot help ─────────────────────────────────────────────────────────────

test("when the directory cannot be watched, the store says so and the poll carries the wake-ups", async (t) => {
  spyOnWatch(t, { throws: errno("ENOSPC", "System limit for number of file watchers reached") });
  const errors: Error[] = [];
  const { path, store } = await fresh(t, { onWatchError: (err) => errors.push(err) });
  const other = connection(t, path);
  const w = wakes(t, store);
  assert.deepEqual(
    errors.map((e) => (e as NodeJS.ErrnoException).code),
    ["ENOSPC"],
  );
  const woken = w.next();
  commitOn(other);
  assert.equal(await within(woken, WAIT_MS, "a wake-up from the poll"), null);
});

test("when the watch fails later, it is closed, the store says so and the poll carries the wake-ups", async (t) => {
  const made = spyOnWatch(t, { emits: errno("EIO", "the watch broke") });
  let reported: (err: Error) => void = () => {};
  const error = new Promise<Error>((r) => (reported = r));
  const { path, store } = await fresh(t, { onWatchError: (err) => reported(err) });
  const other = connection(t, path);
  const w = wakes(t, store);
  const err = await within(error, WAIT_MS, "the watch's error to be reported");
  assert.equal((err as NodeJS.ErrnoException).code, "EIO");
  assert.equal(made[0].closed, true);
  const woken = w.next();
  commitOn(other);
  assert.equal(await within(woken, WAIT_MS, "a wake-up from the poll"), null);
});

test("openErrand logs a warning when the watch cannot be set up, and its worker still starts", async (t) => {
  spyOnWatch(t, { throws: errno("ENOSPC", "System limit for number of file watchers reached") });
  const lines: string[] = [];
  const logger = createLogger({
    pretty: false,
    destination: new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  });
  const noop = defineJob({ name: "noop", queue: "q", schema: z.object({}), run: () => {} });
  const errand = await openErrand({ url: await tempPath(t), logger, jobs: [noop] });
  t.after(() => errand.close());
  const worker = errand.work({ q: { concurrency: 1 } });
  t.after(() => worker.stop());
  const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40);
  assert.equal(warnings.length, 1, lines.join(""));
  assert.match(warnings[0].msg, /cannot watch the SQLite database's directory/);
  assert.equal(warnings[0].err.code, "ENOSPC");
});
