/**
 * Postgres for tests. Every test file (or conformance test) gets a schema of its own in the
 * test database, dropped at the end, so runs never see each other's jobs.
 *
 * - URL: ERRAND_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/test.
 * - Unreachable server: the Postgres tests are skipped with a message saying why — unless
 *   CI=true, where they must run: `skipUnlessPostgres()` then throws, so CI cannot go green
 *   without having run them.
 */
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import pg from "pg";
import { openPostgresStore } from "../../src/store/postgres/index.js";
import { MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { bindSchema } from "../../src/store/postgres/queries.js";
import type { Store } from "../../src/store/types.js";

export const DEFAULT_TEST_PG_URL = "postgres://postgres@127.0.0.1:5432/test";

export function postgresUrl(): string {
  return process.env.ERRAND_TEST_PG_URL || DEFAULT_TEST_PG_URL;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

function isCi(): boolean {
  const ci = (process.env.CI ?? "").toLowerCase();
  return ci !== "" && ci !== "0" && ci !== "false";
}

let probe: Promise<string | null> | undefined;

/** null when the server answers, else why not. Probed once per process. */
export function postgresUnreachable(): Promise<string | null> {
  probe ??= (async () => {
    const client = new pg.Client({ connectionString: postgresUrl(), connectionTimeoutMillis: 10_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      return null;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      return `${e.code ?? ""} ${e.message ?? String(err)}`.trim();
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return probe;
}

/**
 * `false` when Postgres is reachable, else the skip message for `describe(name, { skip })`.
 * With CI=true an unreachable server throws instead: the tests fail, never skip.
 */
export async function skipUnlessPostgres(): Promise<string | false> {
  const reason = await postgresUnreachable();
  if (reason === null) return false;
  const message = `PostgreSQL not reachable at ${redact(postgresUrl())} (${reason}): Postgres tests skipped. Start Postgres or set ERRAND_TEST_PG_URL.`;
  if (isCi()) throw new Error(`CI=true requires PostgreSQL for the Postgres tests, but: ${message}`);
  if (!warned) {
    warned = true;
    process.stderr.write(`\n[errand tests] ${message}\n`);
  }
  return message;
}
let warned = false;

/** A unique, valid schema name, e.g. errand_t_3f9a1c0b2d. */
export function freshSchemaName(prefix = "errand_t"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

/** Drops a test schema and everything in it. */
export async function dropSchema(schema: string, url = postgresUrl()): Promise<void> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(schema)) throw new Error(`refusing to drop odd schema name ${schema}`);
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs `fn` on a connection of its own (not a pool's), closed afterwards; `applicationName` names it in pg_stat_activity. */
export async function withClient<T>(
  fn: (client: pg.Client) => Promise<T>,
  { url = postgresUrl(), applicationName }: { url?: string; applicationName?: string } = {},
): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A fresh schema name and the function that drops it. */
export function freshSchema(prefix?: string): { schema: string; drop: () => Promise<void> } {
  const schema = freshSchemaName(prefix);
  return { schema, drop: () => dropSchema(schema) };
}

/**
 * Creates `schema` as an older release left it: the migrations table and every migration below
 * `version`, each recorded as applied, so a test can seed old rows and then upgrade in place.
 * The Postgres twin of applyMigrationsBelow in ./sqlite.ts.
 */
export async function applyPostgresMigrationsBelow(
  client: pg.Client,
  schema: string,
  version: number,
): Promise<void> {
  await client.query(`CREATE SCHEMA "${schema}"`);
  await client.query(
    bindSchema(
      "CREATE TABLE {{schema}}.migrations (version integer PRIMARY KEY, name text NOT NULL, breaking boolean NOT NULL DEFAULT false, applied_at timestamptz NOT NULL DEFAULT statement_timestamp())",
      schema,
    ),
  );
  for (const m of MIGRATIONS.filter((x) => x.version < version)) {
    await client.query(bindSchema(m.sql, schema));
    await client.query(
      bindSchema("INSERT INTO {{schema}}.migrations (version, name) VALUES ($1, $2)", schema),
      [m.version, m.name],
    );
  }
}

/**
 * A store on a fresh schema that an older release left: migrations below `version` applied,
 * then `seed` writes that release's rows; the store is opened but not migrated, so the test
 * runs the upgrade itself. Store and schema are closed and dropped after the test.
 */
export async function openPostgresStoreBelow(
  t: TestContext,
  {
    prefix,
    version,
    seed,
  }: { prefix: string; version: number; seed: (client: pg.Client, schema: string) => Promise<void> },
): Promise<Store> {
  const { schema, drop } = freshSchema(prefix);
  let store: Store | undefined;
  t.after(async () => {
    await store?.close();
    await drop();
  });
  await withClient(async (client) => {
    await applyPostgresMigrationsBelow(client, schema, version);
    await seed(client, schema);
  });
  store = openPostgresStore({ url: postgresUrl(), schema });
  return store;
}
