/**
 * Transactional enqueue through Drizzle and Kysely on better-sqlite3, with errand on the
 * application's own Database (`openErrand({ db })`). Drizzle's SQLite transactions are
 * synchronous: the enqueue inside one inserts before it returns, or throws and takes the
 * application's writes down with it. Kysely's are a BEGIN on the same Database, which errand
 * joins when given that Database.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { type Generated, Kysely, SqliteDialect } from "kysely";
import { z } from "zod";
import {
  defineJob,
  fromDrizzle,
  fromKysely,
  openErrand,
  silentLogger,
  ValidationError,
} from "../../src/index.js";
import { tempPath } from "../helpers/sqlite.js";

const welcome = defineJob({
  name: "welcome-email",
  queue: "emails",
  schema: z.object({ email: z.string().includes("@") }),
  async run() {},
});

const users = sqliteTable("users", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  email: text("email").notNull(),
});

interface Tables {
  users: { id: Generated<number>; email: string };
}

class PaymentDeclined extends Error {}

/** The application's Database with a users table, and errand opened on it. */
async function app(t: TestContext) {
  const sqlite = new Database(await tempPath(t, "errand-orm-"));
  sqlite.exec("CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT UNIQUE NOT NULL)");
  const errand = await openErrand({ db: sqlite, logger: silentLogger(), jobs: [welcome] });
  t.after(async () => {
    await errand.close();
    sqlite.close();
  });
  const emails = () =>
    (sqlite.prepare("SELECT email FROM users ORDER BY id").all() as { email: string }[]).map((r) => r.email);
  const jobs = async () => (await errand.listJobs({})).jobs.map((j) => j.payload);
  return { sqlite, errand, emails, jobs };
}

test("Drizzle on better-sqlite3 (a synchronous transaction): rolled back, no job; committed, exactly one", async (t) => {
  const { sqlite, errand, emails, jobs } = await app(t);
  const db = drizzle({ client: sqlite });
  const signUp = (email: string, rollback: boolean) =>
    db.transaction((tx) => {
      tx.insert(users).values({ email }).run();
      // Inside the synchronous transaction the job is stored before enqueue returns.
      void errand.enqueue(welcome, { email }, { tx: fromDrizzle(tx) });
      assert.equal(sqlite.prepare("SELECT count(*) FROM errand_jobs").pluck().get(), 1);
      if (rollback) tx.rollback();
    });

  assert.throws(() => signUp("rolled-back@drizzle", true), /Rollback/);
  assert.deepEqual(emails(), []);
  assert.deepEqual(await jobs(), []);

  signUp("committed@drizzle", false);
  assert.deepEqual(emails(), ["committed@drizzle"]);
  assert.deepEqual(await jobs(), [{ email: "committed@drizzle" }]);
});

test("Drizzle on better-sqlite3: a payload that fails its schema throws inside the transaction, which stores nothing", async (t) => {
  const { sqlite, errand, emails, jobs } = await app(t);
  const db = drizzle({ client: sqlite });
  assert.throws(
    () =>
      db.transaction((tx) => {
        tx.insert(users).values({ email: "no-at-sign" }).run();
        void errand.enqueue(welcome, { email: "no-at-sign" }, { tx: fromDrizzle(tx) });
      }),
    ValidationError,
  );
  assert.deepEqual(emails(), []);
  assert.deepEqual(await jobs(), []);
});

test("Kysely on better-sqlite3: rolled back, no job; committed, exactly one", async (t) => {
  const { sqlite, errand, emails, jobs } = await app(t);
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: sqlite }) });
  t.after(() => db.destroy().catch(() => {}));
  const signUp = (email: string, rollback: boolean) =>
    db.transaction().execute(async (trx) => {
      await trx.insertInto("users").values({ email }).execute();
      // Kysely's SQLite transaction is a BEGIN on the Database it was given: pass that Database.
      await errand.enqueue(welcome, { email }, { tx: sqlite });
      if (rollback) throw new PaymentDeclined();
    });

  await assert.rejects(signUp("rolled-back@kysely", true), PaymentDeclined);
  assert.deepEqual(emails(), []);
  assert.deepEqual(await jobs(), []);

  await signUp("committed@kysely", false);
  assert.deepEqual(emails(), ["committed@kysely"]);
  assert.deepEqual(await jobs(), [{ email: "committed@kysely" }]);
});

test("Kysely on better-sqlite3: fromKysely(trx) is refused with a message saying to pass the Database", async (t) => {
  const { sqlite, errand, emails, jobs } = await app(t);
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: sqlite }) });
  t.after(() => db.destroy().catch(() => {}));
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await trx.insertInto("users").values({ email: "wrapped@kysely" }).execute();
      await errand.enqueue(welcome, { email: "wrapped@kysely" }, { tx: fromKysely(trx) });
    }),
    /pass that Database as tx \(with an ORM, the one it runs on\); got a Kysely transaction wrapped for PostgreSQL/,
  );
  assert.deepEqual(emails(), []);
  assert.deepEqual(await jobs(), []);
});
