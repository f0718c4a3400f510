/**
 * better-sqlite3 handles: recognizing one, and preparing each statement once per connection
 * (errand's own, or an application handle passed as `tx`).
 */
import Database from "better-sqlite3";
import { NOW, SELECT_NOW } from "./queries.js";

export type Db = Database.Database;
export type Statement = Database.Statement<unknown[], unknown>;

export function isDatabase(value: unknown): value is Db {
  if (value instanceof Database) return true;
  // Another copy of better-sqlite3 in the application's node_modules: recognize it by shape.
  const v = value as Partial<Db> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.prepare === "function" &&
    typeof v.transaction === "function" &&
    typeof v.exec === "function" &&
    typeof v.inTransaction === "boolean"
  );
}

/** For error messages: what was passed instead of a Database. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ? `a ${value.constructor.name}` : "an object";
}

/** What a statement reads instead of SQLite's clock when the store has a test clock. */
const TEST_NOW = "errand_test_now()";

/** Prepared statements keyed by their SQL (the constants of queries.ts), per connection. */
export class Statements {
  private readonly cache = new WeakMap<Db, Map<string, Statement>>();

  /**
   * `clock`, for tests only: every statement reads "now" (queries.ts `NOW`) from it, through a
   * function registered on each connection, instead of SQLite's clock. Without one (always in
   * production) the statements are the plain ones.
   */
  constructor(private readonly clock?: () => number) {}

  get(db: Db, sql: string): Statement {
    let statements = this.cache.get(db);
    if (!statements) {
      statements = new Map();
      this.cache.set(db, statements);
      const clock = this.clock;
      if (clock) db.function("errand_test_now", { deterministic: false }, () => Math.floor(clock()));
    }
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(this.clock ? sql.replaceAll(NOW, TEST_NOW) : sql);
      statements.set(sql, statement);
    }
    return statement;
  }

  /** SQLite's clock, in ms since the epoch. */
  now(db: Db): number {
    return (this.get(db, SELECT_NOW).get() as { now: number }).now;
  }
}
