/** The SQLite store: the embedded default backend (better-sqlite3). */
export { openSqliteStore, SqliteStore, type SqliteStoreOptions } from "./store.js";
