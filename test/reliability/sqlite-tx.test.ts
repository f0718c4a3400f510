/**
 * Transactional enqueue on SQLite is all-or-nothing, the way the README shows it: inside
 * better-sqlite3's synchronous `db.transaction(() => …)`, `enqueue(..., { tx: db })` and
 * `enqueueMany` either store their jobs in that transaction or throw synchronously, which rolls
 * the application's transaction back. Nothing surfaces later as an unhandled rejection.
 * Real SQLite files; the application's handle is its own connection on errand's file.
 */
import assert from "node:assert/strict";
import { after, describe, type TestContext, test } from "node:test";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import Database from "better-sqlite3";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger, ValidationError } from "../../src/index.js";
import { tempPath } from "../helpers/sqlite.js";

const welcome = defineJob({
  name: "welcome",
  queue: "emails",
  schema: z.object({ userId: z.number().int() }),
  run: () => {},
});

/** A Standard Schema validator that answers with a promise (allowed by the spec). */
const later: StandardSchemaV1<{ userId: number }> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: async (value) => ({ value: value as { userId: number } }),
  },
};
const welcomeLater = defineJob({ name: "welcome-later", queue: "emails", schema: later, run: () => {} });

/** Rejections nobody handled while a test ran (the crash of an Express app). */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on("unhandledRejection", onUnhandled);
after(() => process.off("unhandledRejection", onUnhandled));

/** Lets every pending promise settle (and be reported as unhandled if nobody handles it). */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 20));

interface App {
  db: Database.Database;
  errand: Errand;
  path: string;
  users(): number;
  jobs(): Array<{ name: string; payload: string }>;
}

let app: App;

/** A fresh errand file with the application's users table, and its own connection on it. */
async function open(t: TestContext): Promise<void> {
  unhandled.length = 0;
  const path = await tempPath(t, "errand-sqlite-tx-");
  const errand = await openErrand({ url: path, logger: silentLogger() });
  const db = new Database(path);
  db.pragma("busy_timeout = 5000");
  db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)");
  app = {
    db,
    errand,
    path,
    users: () => db.prepare("SELECT count(*) FROM users").pluck().get() as number,
    jobs: () =>
      db.prepare("SELECT name, payload FROM errand_jobs ORDER BY id").all() as Array<{
        name: string;
        payload: string;
      }>,
  };
  t.after(async () => {
    await errand.close();
    db.close();
  });
}

/**
 * Inserts a user, then runs `enqueue` inside the same better-sqlite3 transaction (which refuses
 * a transaction function that returns a promise: enqueue's is not returned).
 */
function signUp(email: string, enqueue: (userId: number) => unknown): void {
  const { db } = app;
  db.transaction(() => {
    const { id } = db.prepare("INSERT INTO users (email) VALUES (?) RETURNING id").get(email) as {
      id: number;
    };
    enqueue(id);
  })();
}

describe("enqueue inside db.transaction", () => {
  test("a payload that fails its schema throws synchronously: the user row rolls back, nothing is stored", async (t) => {
    await open(t);
    assert.throws(
      () =>
        signUp("a@example.com", () => app.errand.enqueue(welcome, { userId: "x" as never }, { tx: app.db })),
      (err: unknown) =>
        err instanceof ValidationError && /does not match the schema of job "welcome"/.test(err.message),
    );
    await settle();
    assert.equal(app.users(), 0, "the application's transaction rolled back");
    assert.deepEqual(app.jobs(), []);
    assert.deepEqual(unhandled, [], "no unhandled rejection");
  });

  test("an async schema is refused synchronously with a clear error; the transaction rolls back", async (t) => {
    await open(t);
    assert.throws(
      () => signUp("b@example.com", (userId) => app.errand.enqueue(welcomeLater, { userId }, { tx: app.db })),
      (err: unknown) =>
        err instanceof ValidationError &&
        /welcome-later/.test(err.message) &&
        /asynchronous schema/.test(err.message) &&
        /better-sqlite3 transaction/.test(err.message),
    );
    await settle();
    assert.equal(app.users(), 0);
    assert.deepEqual(app.jobs(), [], "no job stored after the transaction ended either");
    assert.deepEqual(unhandled, []);
  });

  test("a committed transaction stores exactly one job, a rolled-back one none", async (t) => {
    await open(t);
    let enqueued: unknown;
    signUp("c@example.com", (userId) => {
      enqueued = app.errand.enqueue(welcome, { userId }, { tx: app.db });
      // Inside the transaction already: the row is there before the transaction commits.
      assert.equal(app.jobs().length, 1);
    });
    const job = await (enqueued as Promise<{ id: string; created: boolean }>);
    assert.equal(job.created, true);
    assert.equal((await app.errand.getJob(job.id))?.state, "pending");

    assert.throws(
      () =>
        signUp("d@example.com", (userId) => {
          enqueued = app.errand.enqueue(welcome, { userId }, { tx: app.db });
          throw new Error("payment check failed");
        }),
      /payment check failed/,
    );
    // The case: with an async schema the insert used to run after the rollback.
    assert.throws(() =>
      signUp("d2@example.com", (userId) => {
        app.errand.enqueue(welcomeLater, { userId }, { tx: app.db });
        throw new Error("payment check failed");
      }),
    );
    await settle();
    assert.equal(app.users(), 1);
    assert.deepEqual(
      app.jobs().map((j) => JSON.parse(j.payload).userId),
      [1],
    );
    assert.deepEqual(unhandled, []);
  });

  test("a handle on another file is a clear synchronous error, and its transaction rolls back", async (t) => {
    await open(t);
    const otherPath = await tempPath(t, "errand-sqlite-other-");
    const other = new Database(otherPath);
    t.after(() => other.close());
    other.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)");
    const check = (err: unknown) =>
      err instanceof ValidationError &&
      err.message.includes(otherPath) &&
      err.message.includes(app.path) &&
      !/no such table/.test(err.message);
    assert.throws(
      () =>
        other.transaction(() => {
          other.prepare("INSERT INTO users (email) VALUES ('e@example.com')").run();
          app.errand.enqueue(welcome, { userId: 1 }, { tx: other });
        })(),
      check,
    );
    assert.equal(other.prepare("SELECT count(*) FROM users").pluck().get(), 0);
    // Outside a transaction the same refusal comes as the promise's rejection.
    await assert.rejects(app.errand.enqueue(welcome, { userId: 1 }, { tx: other }), check);
    await settle();
    assert.deepEqual(app.jobs(), []);
    assert.deepEqual(unhandled, []);
  });

  test("errand opened on the application's handle ({ db }) joins its transactions too", async (t) => {
    await open(t);
    const shared = await openErrand({ db: app.db, logger: silentLogger() });
    try {
      assert.throws(
        () => signUp("f@example.com", () => shared.enqueue(welcome, { userId: -0.5 }, { tx: app.db })),
        ValidationError,
      );
      signUp("g@example.com", (userId) => shared.enqueue(welcome, { userId }, { tx: app.db }));
      await settle();
      assert.equal(app.users(), 1);
      assert.equal(app.jobs().length, 1);
      assert.deepEqual(unhandled, []);
    } finally {
      await shared.close();
    }
  });
});

describe("a store that cannot join a better-sqlite3 transaction", () => {
  test("errand on memory: enqueue with a SQLite tx in a transaction throws synchronously, nothing stored", async (t) => {
    await open(t);
    const memory = await openErrand({ url: "memory:", logger: silentLogger() });
    t.after(() => memory.close());
    assert.throws(
      () => signUp("l@example.com", (userId) => memory.enqueue(welcome, { userId }, { tx: app.db })),
      (err: unknown) => err instanceof ValidationError && /memory/.test(err.message),
    );
    await settle();
    assert.equal(app.users(), 0);
    assert.equal((await memory.listJobs()).jobs.length, 0);
    assert.deepEqual(unhandled, []);
  });
});

describe("enqueueMany inside db.transaction", () => {
  test("one item failing its schema throws synchronously; nothing of the call or the transaction stays", async (t) => {
    await open(t);
    assert.throws(
      () =>
        signUp("h@example.com", (userId) =>
          app.errand.enqueueMany(
            welcome,
            [{ payload: { userId } }, { payload: { userId: "two" as never } }],
            {
              tx: app.db,
            },
          ),
        ),
      (err: unknown) => err instanceof ValidationError && /^item 1 payload/.test(err.message),
    );
    await settle();
    assert.equal(app.users(), 0);
    assert.deepEqual(app.jobs(), []);
    assert.deepEqual(unhandled, []);
  });

  test("an async schema is refused synchronously", async (t) => {
    await open(t);
    assert.throws(
      () =>
        signUp("i@example.com", (userId) =>
          app.errand.enqueueMany(welcomeLater, [{ payload: { userId } }], { tx: app.db }),
        ),
      (err: unknown) => err instanceof ValidationError && /asynchronous schema/.test(err.message),
    );
    await settle();
    assert.equal(app.users(), 0);
    assert.deepEqual(app.jobs(), []);
    assert.deepEqual(unhandled, []);
  });

  test("committed: every job stored in the transaction; rolled back: none", async (t) => {
    await open(t);
    let enqueued: unknown;
    signUp("j@example.com", (userId) => {
      enqueued = app.errand.enqueueMany(welcome, [{ payload: { userId } }, { payload: { userId: 100 } }], {
        tx: app.db,
      });
      assert.equal(app.jobs().length, 2, "inserted before the transaction commits");
    });
    const jobs = await (enqueued as Promise<Array<{ created: boolean }>>);
    assert.deepEqual(
      jobs.map((j) => j.created),
      [true, true],
    );
    assert.throws(() =>
      signUp("k@example.com", (userId) => {
        app.errand.enqueueMany(welcome, [{ payload: { userId } }], { tx: app.db });
        throw new Error("rollback");
      }),
    );
    assert.throws(() =>
      signUp("k2@example.com", (userId) => {
        app.errand.enqueueMany(welcomeLater, [{ payload: { userId } }], { tx: app.db });
        throw new Error("rollback");
      }),
    );
    await settle();
    assert.equal(app.users(), 1);
    assert.equal(app.jobs().length, 2);
    assert.deepEqual(unhandled, []);
  });

  test("a handle on another file is a clear synchronous error", async (t) => {
    await open(t);
    const otherPath = await tempPath(t, "errand-sqlite-other-");
    const other = new Database(otherPath);
    t.after(() => other.close());
    assert.throws(
      () =>
        other.transaction(() => {
          app.errand.enqueueMany(welcome, [{ payload: { userId: 1 } }], { tx: other });
        })(),
      (err: unknown) => err instanceof ValidationError && err.message.includes(otherPath),
    );
    await settle();
    assert.deepEqual(app.jobs(), []);
    assert.deepEqual(unhandled, []);
  });
});
