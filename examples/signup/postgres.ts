/**
 * Sign-up on PostgreSQL: the welcome e-mail is enqueued with the node-postgres client that holds
 * the sign-up transaction, so the job exists if and only if the user does. The worker records
 * the send in the transaction that completes the job.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx examples/signup/postgres.ts
 */

import { defineJob, openErrand } from "errand";
import pg from "pg";
import { z } from "zod";

const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `signup_example_${process.pid}`;
const pool = new pg.Pool({ connectionString: url });
await pool.query(`CREATE SCHEMA ${schema};
  CREATE TABLE ${schema}.users (id serial PRIMARY KEY, email text UNIQUE NOT NULL);
  CREATE TABLE ${schema}.sent_emails (user_id int PRIMARY KEY, sent_at timestamptz NOT NULL DEFAULT now())`);

const welcome = defineJob({
  name: "welcome-email",
  queue: "emails",
  schema: z.object({ userId: z.number().int() }),
  async run({ userId }, ctx) {
    await ctx.once(`welcome:${userId}`, () => console.log(`  sending the welcome e-mail to user ${userId}`));
    await ctx.completeInTransaction((tx) =>
      (tx as pg.PoolClient).query(`INSERT INTO ${schema}.sent_emails (user_id) VALUES ($1)`, [userId]),
    );
  },
});

const errand = await openErrand({ url, schema: `${schema}_errand`, jobs: [welcome] });

async function signUp(email: string, failAfterInsert: boolean): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const { rows } = await client.query(`INSERT INTO ${schema}.users (email) VALUES ($1) RETURNING id`, [
      email,
    ]);
    await errand.enqueue(welcome, { userId: rows[0].id }, { tx: client });
    if (failAfterInsert) throw new Error("payment check failed: the sign-up rolls back");
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK");
    console.log(`${email}'s sign-up rolled back: ${(err as Error).message}`);
  } finally {
    client.release();
  }
}

try {
  await signUp("ada@example.com", false);
  await signUp("bob@example.com", true);
  const users = (await pool.query(`SELECT count(*)::int n FROM ${schema}.users`)).rows[0].n;
  console.log(`users: ${users}, jobs: ${(await errand.listJobs()).jobs.length} (only ada's)`);
  const worker = errand.work({ emails: { concurrency: 1 } });
  await new Promise<void>((resolve) => errand.once("completed", () => resolve()));
  await worker.stop();
  console.log(
    "sent:",
    (await pool.query(`SELECT user_id FROM ${schema}.sent_emails`)).rows.map((r) => r.user_id),
  );
} finally {
  await errand.close();
  await pool.query(`DROP SCHEMA ${schema} CASCADE; DROP SCHEMA IF EXISTS ${schema}_errand CASCADE`);
  await pool.end();
}
