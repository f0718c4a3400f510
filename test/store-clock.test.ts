/**
 * The SQL stores' optional test clock (`clock` in PostgresStoreOptions / SqliteStoreOptions):
 * set, every statement that reads "now" reads it instead of the database clock; unset — always
 * in production — every statement is exactly the text it was without the feature, so plans and
 * speed cannot change (test/postgres-plans.test.ts pins the plans).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import Database from "better-sqlite3";
import type pg from "pg";
import { createDb, type QueryName, withTestClock } from "../src/store/postgres/db.js";
import * as PQ from "../src/store/postgres/queries.js";
import { Statements } from "../src/store/sqlite/handle.js";
import * as SQ from "../src/store/sqlite/queries.js";

const pgStatements = Object.entries(PQ).filter(
  (entry): entry is [QueryName, string] => typeof entry[1] === "string" && entry[0] !== "NOW",
);
const options = { pool: {} as pg.Pool, schema: "s", limits: () => ({}) as never, report: () => {} };

test("Postgres without a clock: every statement is the plain one, on the database clock", () => {
  const db = createDb(options);
  for (const [name, text] of pgStatements) {
    assert.equal(db.sql[name], PQ.bindSchema(text, "s"), name);
  }
  assert.ok(db.sql.CLAIM_JOBS.includes("statement_timestamp()"));
});

test("Postgres with a clock: each statement that reads now takes it as one more parameter", () => {
  const db = createDb({ ...options, clock: () => 0 });
  let clocked = 0;
  for (const [name, text] of pgStatements) {
    const plain = PQ.bindSchema(text, "s");
    if (!plain.includes(PQ.NOW) || name.startsWith("MIGRATE_")) {
      assert.equal(db.sql[name], plain, name);
      continue;
    }
    clocked++;
    const { text: expected, param } = withTestClock(plain);
    assert.equal(db.sql[name], expected, name);
    assert.ok(
      !db.sql[name].replaceAll(`coalesce($${param}::timestamptz, ${PQ.NOW})`, "").includes(PQ.NOW),
      name,
    );
  }
  assert.ok(clocked >= 20, `the clock-reading statements: ${clocked}`);
  assert.equal(withTestClock("SELECT $1, $2 WHERE x < statement_timestamp()").param, 3);
  assert.equal(withTestClock("SELECT 1").param, 0);
});

test("SQLite: the plain statement without a clock, the test clock's function with one", () => {
  const db = new Database(":memory:");
  try {
    assert.equal(new Statements().get(db, SQ.SELECT_NOW).source, SQ.SELECT_NOW);
    const plainNow = (new Statements().get(db, SQ.SELECT_NOW).get() as { now: number }).now;
    assert.ok(Math.abs(plainNow - Date.now()) < 60_000, "SQLite's own clock");
    const other = new Database(":memory:");
    try {
      const clocked = new Statements(() => 1234.9).get(other, SQ.SELECT_NOW);
      assert.ok(!clocked.source.includes("unixepoch"), clocked.source);
      assert.equal((clocked.get() as { now: number }).now, 1234);
    } finally {
      other.close();
    }
  } finally {
    db.close();
  }
});
