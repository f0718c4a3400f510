/**
 * Set-up shared by the PostgreSQL store's test files (test/postgres-store/): each opens stores
 * on schemas of its own in the test database, closed and dropped when its tests end.
 */
import { after, describe } from "node:test";
import {
  openPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from "../../src/store/postgres/index.js";
import type { NewJob } from "../../src/store/types.js";
import {
  dropSchema,
  freshSchemaName,
  postgresUrl,
  skipUnlessPostgres,
  withClient,
} from "../helpers/postgres.js";

export const url = postgresUrl();
const schemas = new Set<string>();
const opened: PostgresStore[] = [];

export function schemaName(): string {
  const name = freshSchemaName("errand_pgt");
  schemas.add(name);
  return name;
}

export function open(schema: string, options: Partial<PostgresStoreOptions> = {}): PostgresStore {
  const store = openPostgresStore({ url, schema, poolSize: 4, ...options });
  opened.push(store);
  return store;
}

export async function migrated(
  schema = schemaName(),
  options: Partial<PostgresStoreOptions> = {},
): Promise<PostgresStore> {
  const store = open(schema, options);
  await store.migrate();
  return store;
}

export function job(queue: string, name: string, extra: Partial<NewJob> = {}): NewJob {
  return { queue, name, payload: { n: name }, priority: 0, maxAttempts: 3, ...extra };
}

/** Runs `fn` on a connection of its own, outside every store's pool. */
export const admin = withClient;

const skip = await skipUnlessPostgres();

/**
 * The file's tests, under "PostgreSQL store": skipped without a reachable server (failing when
 * CI=true); afterwards every store they opened is closed and every schema they named dropped.
 */
export function describePostgresStore(body: () => void): void {
  describe("PostgreSQL store", { skip }, () => {
    after(async () => {
      await Promise.all(opened.map((s) => s.close().catch(() => {})));
      await Promise.all([...schemas].map((schema) => dropSchema(schema)));
    });
    body();
  });
}
