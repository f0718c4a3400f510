/**
 * How a PostgresStore (store.ts) assembles its parts from its options: the pool (its own, or
 * the application's), the Db its operations run on (db.ts), the vacuum (upkeep.ts) and the
 * LISTEN notifier (notifier.ts). The store keeps them and the state they read (the connection
 * limits, the error reporter), passed here as functions so a later useLease reaches them all.
 */
import pg from "pg";
import {
  type ConnectionLimits,
  createPool,
  listenClientConfig,
  SilentConnectionError,
  trackClients,
} from "./connection.js";
import { createDb, type Db } from "./db.js";
import { Notifier } from "./notifier.js";
import type { PostgresStoreOptions } from "./options.js";
import * as Q from "./queries.js";
import { Vacuum } from "./upkeep.js";

export interface PostgresStoreParts {
  pool: pg.Pool;
  ownsPool: boolean;
  /** The clients of an owned pool, so close() can destroy silent ones (connection.ts endPool). */
  clients: Set<pg.Client>;
  db: Db;
  vacuum: Vacuum;
  notifier: Notifier;
}

export function assembleStoreParts(
  options: PostgresStoreOptions,
  schema: string,
  limits: () => ConnectionLimits,
  report: (err: unknown) => void,
): PostgresStoreParts {
  const ownsPool = !options.pool;
  const pool =
    options.pool ??
    createPool({ url: options.url as string, schema, max: options.poolSize ?? 10, limits: limits() });
  const clients = ownsPool ? trackClients(pool) : new Set<pg.Client>();
  const db = createDb({ pool, schema, limits, report, clock: options.clock });
  const vacuum = new Vacuum(db, options.vacuumDeadRows ?? 100_000);

  const url = options.url;
  const poolOptions = (pool as unknown as { options?: pg.ClientConfig }).options ?? {};
  const notifier = new Notifier({
    channel: Q.channelName(schema),
    onError: (err) => report(err),
    createClient: () =>
      new pg.Client(listenClientConfig(url ? { connectionString: url } : poolOptions, schema, limits())),
    // A silent LISTEN connection delivers nothing and says nothing: a check every lease finds it.
    checkEveryMs: () => limits().statementMs,
    onSilent: (ms) => report(new SilentConnectionError("the LISTEN connection's check", ms)),
  });
  return { pool, ownsPool, clients, db, vacuum, notifier };
}
