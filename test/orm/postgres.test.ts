/**
 * Transactional enqueue through the ORMs applications use on PostgreSQL — Drizzle, Kysely, Knex
 * and Prisma, each the real library on its real driver: a sign-up writes a user through the ORM
 * and enqueues its welcome e-mail in the same transaction. Rolled back, neither exists; committed,
 * both do, the job exactly once. The job declares a per-key concurrency limit, so its flow key is
 * written in the same transaction too, and a second enqueue with the same idempotency key inside
 * the transaction reads the first job back through the ORM (the store's duplicate-key path).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PrismaPg } from "@prisma/adapter-pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { pgTable, serial, text } from "drizzle-orm/pg-core";
import knex, { type Knex } from "knex";
import { CamelCasePlugin, type Generated, Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { z } from "zod";
import {
  defineJob,
  type Errand,
  fromDrizzle,
  fromKnex,
  fromKysely,
  fromPrisma,
  openErrand,
  silentLogger,
  ValidationError,
} from "../../src/index.js";
import { PrismaClient } from "../fixtures/prisma/generated/client.js";
import { dropSchema, freshSchemaName, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";

const welcome = defineJob({
  name: "welcome-email",
  queue: "emails",
  schema: z.object({ email: z.string() }),
  concurrency: { key: (p) => p.email, limit: 1 },
  async run() {},
});

/** A job without flow control, for the test that runs one (processJobs sometimes leaves a flow-controlled job unstarted on Postgres, ORM or not: reported separately). */
const receipt = defineJob({
  name: "send-receipt",
  queue: "receipts",
  schema: z.object({ email: z.string() }),
  async run() {},
});

const users = pgTable("users", { id: serial("id").primaryKey(), email: text("email").notNull() });

interface Database {
  users: { id: Generated<number>; email: string };
}

/** Signs `email` up through one ORM; with `rollback`, the transaction fails after the enqueue. */
type SignUp = (email: string, rollback: boolean) => Promise<void>;

class PaymentDeclined extends Error {}

const skip = await skipUnlessPostgres();

describe("transactional enqueue through ORMs on PostgreSQL", { skip }, () => {
  const appSchema = freshSchemaName("errand_orm_app");
  const errandSchema = freshSchemaName("errand_orm");
  let errand: Errand;
  let pool: pg.Pool;
  let kysely: Kysely<Database>;
  let knexDb: Knex;
  let prisma: PrismaClient;
  const closers: Array<() => Promise<unknown>> = [];

  /** Enqueues the welcome e-mail twice with one key: the second must return the first. */
  async function enqueueWelcome(email: string, tx: unknown): Promise<void> {
    const first = await errand.enqueue(welcome, { email }, { tx, key: `welcome:${email}` });
    const again = await errand.enqueue(welcome, { email }, { tx, key: `welcome:${email}` });
    assert.equal(first.created, true);
    assert.equal(again.created, false, "the same key inside the transaction finds the first job");
    assert.equal(again.id, first.id);
    assert.deepEqual(again.payload, { email });
    assert.ok(again.runAt instanceof Date && !Number.isNaN(again.runAt.getTime()));
  }

  before(async () => {
    const url = postgresUrl();
    // The application's pools look in its own schema; errand's tables are in another one.
    const appPool = () => new pg.Pool({ connectionString: url, options: `-c search_path=${appSchema}` });
    pool = appPool();
    closers.push(() => pool.end());
    await pool.query(
      `CREATE SCHEMA ${appSchema}; CREATE TABLE ${appSchema}.users (id serial PRIMARY KEY, email text UNIQUE NOT NULL)`,
    );
    errand = await openErrand({
      url,
      schema: errandSchema,
      logger: silentLogger(),
      jobs: [welcome, receipt],
    });
    closers.push(() => errand.close());
    // CamelCasePlugin and a camel-casing postProcessResponse rename result columns: the adapters
    // must keep them away from errand's statements.
    kysely = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: appPool() }),
      plugins: [new CamelCasePlugin()],
    });
    closers.push(() => kysely.destroy());
    knexDb = knex({
      client: "pg",
      connection: url,
      searchPath: [appSchema],
      postProcessResponse: (result) => camelCaseRows(result),
    });
    closers.push(() => knexDb.destroy());
    prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }, { schema: appSchema }) });
    closers.push(() => prisma.$disconnect());
  });

  after(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
    await dropSchema(appSchema);
    await dropSchema(errandSchema);
  });

  const orms: Record<string, () => SignUp> = {
    Drizzle: () => {
      const db = drizzle({ client: pool });
      return (email, rollback) =>
        db.transaction(async (tx) => {
          await tx.insert(users).values({ email });
          await enqueueWelcome(email, fromDrizzle(tx));
          if (rollback) tx.rollback();
        });
    },
    Kysely: () => (email, rollback) =>
      kysely.transaction().execute(async (trx) => {
        await trx.insertInto("users").values({ email }).execute();
        await enqueueWelcome(email, fromKysely(trx));
        if (rollback) throw new PaymentDeclined();
      }),
    Knex: () => (email, rollback) =>
      knexDb.transaction(async (trx) => {
        await trx("users").insert({ email });
        await enqueueWelcome(email, fromKnex(trx));
        if (rollback) throw new PaymentDeclined();
      }),
    Prisma: () => async (email, rollback) => {
      await prisma.$transaction(async (tx) => {
        await tx.user.create({ data: { email } });
        await enqueueWelcome(email, fromPrisma(tx));
        if (rollback) throw new PaymentDeclined();
      });
    },
  };

  for (const [orm, make] of Object.entries(orms)) {
    test(`${orm}: a transaction that rolls back leaves no job; one that commits leaves exactly one`, async () => {
      const signUp = make();
      const tag = orm.toLowerCase();
      await assert.rejects(signUp(`rolled-back@${tag}`, true));
      await signUp(`committed@${tag}`, false);

      const userRows = await pool.query("SELECT email FROM users WHERE email LIKE $1 ORDER BY email", [
        `%@${tag}`,
      ]);
      assert.deepEqual(
        userRows.rows.map((r) => r.email),
        [`committed@${tag}`],
      );
      const jobs = (await errand.listJobs({ search: `@${tag}` })).jobs;
      assert.deepEqual(
        jobs.map((j) => [j.payload, j.state, j.key]),
        [[{ email: `committed@${tag}` }, "pending", `welcome:committed@${tag}`]],
        "exactly one job, the committed sign-up's",
      );
    });
  }

  test("a job enqueued through Prisma runs to completion", async () => {
    const job = await prisma.$transaction((tx) =>
      errand.enqueue(receipt, { email: "runs@prisma" }, { tx: fromPrisma(tx) }),
    );
    const result = await errand.processJobs({ queues: ["receipts"], limit: 10 });
    assert.equal(result.completed, 1, JSON.stringify(result));
    assert.equal((await errand.getJob(job.id))?.state, "completed");
  });

  test("each adapter refuses the ORM's database object, which is not its transaction", async () => {
    assert.throws(() => fromDrizzle(drizzle({ client: pool })), ValidationError);
    assert.throws(
      () => fromDrizzle(drizzle({ client: pool })),
      /fromDrizzle: expected the transaction .* got a NodePgDatabase/,
    );
    assert.throws(() => fromKysely(kysely), /fromKysely: expected the transaction .* got a Kysely/);
    assert.throws(() => fromKnex(knexDb), /fromKnex: expected the transaction .* got a function/);
    assert.throws(
      () => fromPrisma(prisma),
      /fromPrisma: expected the transaction client .*\(not the PrismaClient itself\)/,
    );
  });

  test("Knex: a transaction kept past its commit stores nothing", async () => {
    let kept: Knex.Transaction | undefined;
    await knexDb.transaction(async (trx) => {
      kept = trx;
    });
    await assert.rejects(
      errand.enqueue(welcome, { email: "late@knex" }, { tx: fromKnex(kept as Knex.Transaction) }),
      /already been committed or rolled back/,
    );
    assert.equal((await errand.listJobs({ search: "late@knex" })).jobs.length, 0);
  });
});

/** What knexSnakeCaseMappers and the like do to every result: snake_case columns become camelCase. */
function camelCaseRows(result: unknown): unknown {
  const rows = (result as { rows?: unknown } | null)?.rows;
  if (!Array.isArray(rows)) return result;
  const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return {
    ...(result as object),
    rows: rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [camel(k), v]))),
  };
}
