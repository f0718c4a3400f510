import { Errand } from "./errand.js";
import type { OpenErrandOptions } from "./errand-types.js";
import { knownFields, onlyKnownFields } from "./known-fields.js";
import { checkLogger, createLogger } from "./logger.js";
import { DEFAULT_URL, openStore } from "./store/open.js";

const OPEN_FIELDS = knownFields(
  "url",
  "db",
  "store",
  "schema",
  "jobs",
  "logger",
  "logPayloads",
  "payloadLimit",
  "migrate",
  "mustExist",
  "waitRecheck",
);

/** Opens errand on a store URL (default ERRAND_URL or ./errand.db), migrating it. */
export async function openErrand(options: OpenErrandOptions = {}): Promise<Errand> {
  // Before the store is opened: `shcema` would open (and migrate) the default schema.
  onlyKnownFields(options, OPEN_FIELDS, "openErrand options");
  const ownsStore = !options.store;
  const logger = checkLogger(options.logger) ?? createLogger();
  const store =
    options.store ??
    (await openStore(options.url ?? process.env.ERRAND_URL ?? DEFAULT_URL, {
      schema: options.schema,
      db: options.db,
      logger,
    }));
  try {
    if (options.migrate !== false) await store.migrate({ mustExist: options.mustExist });
  } catch (err) {
    if (ownsStore) await store.close().catch(() => {});
    throw err;
  }
  const errand = new Errand(store, { ...options, logger, ownsStore });
  return errand;
}
