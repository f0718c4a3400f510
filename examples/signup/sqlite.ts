/**
 * Sign-up on SQLite: the welcome e-mail is enqueued in the transaction that creates the user,
 * so the job exists if and only if the user does. Then a worker sends it exactly once, and
 * records the send in the same transaction that completes the job.
 *
 *   node --import tsx examples/signup/sqlite.ts
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { defineJob, openErrand } from "errand";
import { z } from "zod";

const file = join(mkdtempSync(join(tmpdir(), "errand-signup-")), "app.db");
const db = new Database(file);
db.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT UNIQUE NOT NULL);
         CREATE TABLE sent_emails (user_id INTEGER PRIMARY KEY, sent_at TEXT NOT NULL)`);

const welcome = defineJob({
  name: "welcome-email",
  queue: "emails",
  schema: z.object({ userId: z.number().int() }),
  async run({ userId }, ctx) {
    // A mail provider would be called here, through ctx.once so a retry never sends twice.
    await ctx.once(`welcome:${userId}`, () => console.log(`  sending the welcome e-mail to user ${userId}`), {
      scope: "global", // one welcome per user, whichever job sends it
    });
    // The record of the send commits with the job's completion (exactly-once for database effects).
    await ctx.completeInTransaction((tx) => {
      (tx as Database.Database).prepare("INSERT INTO sent_emails VALUES (?, datetime('now'))").run(userId);
    });
  },
});

// errand shares the application's database file (its own tables are prefixed errand_).
const errand = await openErrand({ url: file, jobs: [welcome] });

const signUp = db.transaction((email: string, failAfterInsert: boolean) => {
  const user = db.prepare("INSERT INTO users (email) VALUES (?) RETURNING id").get(email) as { id: number };
  errand.enqueue(welcome, { userId: user.id }, { tx: db }); // inserted synchronously, inside this transaction
  if (failAfterInsert) throw new Error("payment check failed: the sign-up rolls back");
  return user.id;
});

signUp("ada@example.com", false);
try {
  signUp("bob@example.com", true);
} catch (err) {
  console.log(`bob's sign-up rolled back: ${(err as Error).message}`);
}

const jobs = (await errand.listJobs()).jobs;
console.log(
  `users: ${db.prepare("SELECT count(*) n FROM users").pluck().get()}, jobs: ${jobs.length} (only ada's)`,
);

const worker = errand.work({ emails: { concurrency: 1 } });
await new Promise<void>((resolve) => errand.once("completed", () => resolve()));
await worker.stop();
console.log("sent:", db.prepare("SELECT user_id FROM sent_emails").pluck().all());
await errand.close();
db.close();
