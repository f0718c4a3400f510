/** The PostgreSQL store (store.ts); the entry other modules import. */
export { openPostgresStore, PostgresStore, type PostgresStoreOptions } from "./store.js";
