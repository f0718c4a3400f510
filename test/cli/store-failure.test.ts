/**
 * A store that fails after it opened — here a schema whose jobs table was dropped (a restore
 * gone wrong, a hand-edited schema); a locked or full SQLite disk did the same (a helper's
 * find) — printed "errand: unexpected error" and the driver's stack trace. The CLI says what the
 * store answered, in one line, and exits 1 (ERRAND_DEBUG=1 adds the stack).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openErrand, silentLogger } from "../../src/index.js";
import { freshSchema, postgresUrl, skipUnlessPostgres, withClient } from "../helpers/postgres.js";
import { hasStack, run } from "./helpers.js";

const skip = await skipUnlessPostgres();

test("a store that fails after opening: one line naming what the store answered, exit 1", {
  skip,
}, async () => {
  const { schema, drop } = freshSchema("errand_cli_fail");
  try {
    await (await openErrand({ url: postgresUrl(), schema, logger: silentLogger() })).close();
    await withClient((c) => c.query(`DROP TABLE ${schema}.jobs CASCADE`));
    const r = await run(["stats", "--url", postgresUrl(), "--schema", schema]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^errand: the store failed: relation "[^"]*jobs" does not exist \(42P01\)/);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.ok(!hasStack(r.stderr), r.stderr);
    const debug = await run(["stats", "--url", postgresUrl(), "--schema", schema], { ERRAND_DEBUG: "1" });
    assert.ok(hasStack(debug.stderr), debug.stderr);
  } finally {
    await drop();
  }
});
