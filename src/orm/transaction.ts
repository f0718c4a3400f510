/**
 * An ORM's transaction as errand's PostgreSQL store takes it: something with node-postgres's
 * `query({ text, values })` that runs each statement inside that transaction. Where the ORM
 * hands out its driver connection (Drizzle, Knex) the adapters return that connection itself;
 * where it does not (Kysely, Prisma), an OrmTransaction sends errand's statements through the
 * ORM's own raw-query API.
 */
import { ValidationError } from "../errors.js";

/** One of errand's statements: its text with `$1`… placeholders, and the values. */
export interface Statement {
  text: string;
  values?: unknown[];
}

/** The rows of one statement, each column named as errand's SQL names it. */
export interface StatementResult {
  rows: Record<string, unknown>[];
}

/** A statement runner bound to one ORM transaction; `orm` names the ORM in error messages. */
export class OrmTransaction {
  constructor(
    readonly orm: string,
    private readonly run: (statement: Statement) => Promise<StatementResult>,
  ) {}

  query(statement: Statement): Promise<StatementResult> {
    return this.run(statement);
  }
}

/** A short description of a value for error messages ("a Pool", "undefined"). */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "function") return `a function${value.name ? ` (${value.name})` : ""}`;
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ? `a ${value.constructor.name}` : "an object";
}

/** The ValidationError for an adapter given something other than its ORM's transaction. */
export function notATransaction(adapter: string, expected: string, got: unknown): ValidationError {
  return new ValidationError(`${adapter}: expected ${expected}; got ${describeValue(got)}`);
}
