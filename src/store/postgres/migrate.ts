/**
 * Running the migrations (their list is migrations.ts): many processes may start at once, so a
 * schema already at this version needs no lock, and the others take an advisory lock in turn.
 */
import { ValidationError } from "../../errors.js";
import { type Queryable, timed, UNBOUNDED_MS } from "./connection.js";
import type { Db } from "./db.js";
import { LATEST_VERSION, MIGRATIONS } from "./migrations.js";
import * as Q from "./queries.js";
import type { Row } from "./rows.js";

/**
 * Encodings that hold what errand stores: UTF8, and SQL_ASCII (bytes kept as sent, read back
 * identical). Any other refused a character somewhere: LATIN1 the migrations' own text, WIN1252
 * an emoji in a job's log line, which failed the completed job (a helper's find).
 */
const ENCODINGS = new Set(["UTF8", "SQL_ASCII"]);

async function checkEncoding(db: Db): Promise<void> {
  const { rows } = await db.pool.query({ text: db.sql.MIGRATE_ENCODING });
  const { encoding, database } = rows[0] as Row;
  if (!ENCODINGS.has(String(encoding))) {
    throw new ValidationError(
      `database "${database}" has encoding ${encoding}, which cannot hold every character a payload, key or log line may carry: errand needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8' TEMPLATE template0)`,
    );
  }
}

export async function migrate(db: Db, options: { mustExist?: boolean } = {}): Promise<void> {
  await checkEncoding(db);
  // Fast path: a schema already at this version needs no lock (many processes start at once).
  const current = await appliedMigrations(db, db.pool).catch(() => null);
  if (options.mustExist && current === null && (await appliedMigrations(db, db.pool)) === null) {
    throw new ValidationError(
      `no errand schema "${db.schema}" in this database: check --schema, or create it with \`errand migrate\``,
    );
  }
  if (current && MIGRATIONS.every((m) => current.has(m.version))) {
    checkNewer(db.schema, current);
    return;
  }
  // No statement_timeout: a migration may rewrite a big table (connection.ts UNBOUNDED_MS).
  await db.transaction(async (client) => {
    // The lock waits for the process migrating before this one, however long: a role's
    // lock_timeout (10 ms) failed 2 of 3 processes opening at once.
    await client.query("SET LOCAL lock_timeout = 0");
    await client.query(
      timed({ text: db.sql.MIGRATE_LOCK, values: [`errand.migrate:${db.schema}`] }, UNBOUNDED_MS),
    );
    await client.query(db.sql.MIGRATE_CREATE_SCHEMA);
    await client.query(db.sql.MIGRATE_CREATE_TABLE);
    const applied = (await appliedMigrations(db, client)) ?? new Map<number, boolean>();
    checkNewer(db.schema, applied);
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(timed({ text: Q.bindSchema(migration.sql, db.schema) }, UNBOUNDED_MS));
      await client.query({
        text: db.sql.MIGRATE_RECORD,
        values: [migration.version, migration.name, migration.breaking ?? false],
      });
    }
  }, 0);
}

/** Applied versions (version → breaking), or null when the migrations table does not exist yet. */
async function appliedMigrations(db: Db, on: Queryable): Promise<Map<number, boolean> | null> {
  try {
    const { rows } = await on.query({ text: db.sql.MIGRATE_VERSIONS });
    return new Map(rows.map((r: Row) => [Number(r.version), Boolean(r.breaking)]));
  } catch (err) {
    if ((err as { code?: string }).code === "42P01" || (err as { code?: string }).code === "3F000")
      return null;
    throw err;
  }
}

function checkNewer(schema: string, applied: Map<number, boolean>): void {
  const breaking = [...applied].filter(([version, isBreaking]) => version > LATEST_VERSION && isBreaking);
  if (breaking.length > 0) {
    throw new ValidationError(
      `schema "${schema}" has migration ${breaking.map(([v]) => v).join(", ")} applied, which this version of errand (schema version ${LATEST_VERSION}) cannot work with: upgrade errand`,
    );
  }
}
