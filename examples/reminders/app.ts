/**
 * Booking reminders on a host that scales to zero: every tick sends a reminder for each booking
 * that starts within the next 24 hours and has not had one — and never sends one twice, even
 * when two ticks run at the same moment (an overlapping retry of the cron caller, two instances).
 *
 * How "never twice" holds, layer by layer:
 * 1. The scan enqueues one `send-reminder` job per booking with the idempotency key
 *    `reminder:<booking id>`. Two scans at once find the same bookings; the unique
 *    (queue, key) index turns the second enqueue into the first job. One job per booking.
 * 2. A job is claimed by one worker at a time (a lease): two ticks never run the same job.
 * 3. The handler sends through `ctx.once("reminder-mail:<id>")`: if the attempt dies after the
 *    mail went out (before the job completed), the retry finds the send in errand's ledger and
 *    does not mail again.
 * 4. What was sent is recorded in `reminders` (booking_id PRIMARY KEY) inside the same SQLite
 *    transaction that completes the job (`ctx.completeInTransaction`): the record exists if and
 *    only if the job completed, and the scan skips bookings that have one.
 *
 * errand shares the application's better-sqlite3 handle (`openErrand({ db })`): bookings,
 * reminders and errand's own tables live in one file.
 */
import Database from "better-sqlite3";
import {
  createTickHandler,
  defineJob,
  type Errand,
  type FetchHandler,
  type Logger,
  openErrand,
  runTick,
  type TickResult,
} from "errand";
import { z } from "zod";

export interface Mailer {
  /** Sends one message; returns the provider's message id. */
  send(message: { to: string; subject: string; text: string }): Promise<string>;
}

export interface RemindersOptions {
  /** SQLite file for bookings, reminders and errand's tables. */
  file: string;
  mailer: Mailer;
  /** Bearer secret for the HTTP tick (default CRON_SECRET). */
  cronSecret?: string;
  /** "Now" for the scan (tests); default the clock. */
  now?: () => Date;
  logger?: Logger;
}

export interface RemindersApp {
  db: Database.Database;
  errand: Errand;
  addBooking(booking: { customerEmail: string; startsAt: Date }): number;
  /** Enqueues a reminder job for every due booking without a reminder; returns how many were new. */
  enqueueDueReminders(): Promise<number>;
  /** One tick: fire schedules, scan, send (what the HTTP endpoint runs). */
  tick(): Promise<TickResult>;
  /** POST /api/cron/tick for the application's web framework (Fetch API). */
  handler: FetchHandler;
  sentReminders(): Array<{ bookingId: number; sentAt: string; messageId: string }>;
  close(): Promise<void>;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS bookings (
  id             INTEGER PRIMARY KEY,
  customer_email TEXT NOT NULL,
  starts_at      TEXT NOT NULL            -- ISO 8601, UTC
);
CREATE INDEX IF NOT EXISTS bookings_starts_at ON bookings (starts_at);
-- What was sent: one row per booking, ever.
CREATE TABLE IF NOT EXISTS reminders (
  booking_id INTEGER PRIMARY KEY REFERENCES bookings (id),
  sent_at    TEXT NOT NULL,
  message_id TEXT NOT NULL,
  job_id     TEXT NOT NULL
);`;

const DAY_MS = 24 * 60 * 60 * 1000;

export async function createRemindersApp(options: RemindersOptions): Promise<RemindersApp> {
  const db = new Database(options.file);
  // A shared handle keeps the application's pragmas: WAL lets readers and the writer overlap,
  // busy_timeout lets two processes' writes wait for each other instead of failing.
  db.pragma("journal_mode = WAL");
  db.pragma("busy_timeout = 5000");
  db.exec(SCHEMA);
  const now = options.now ?? (() => new Date());

  const sendReminder = defineJob({
    name: "send-reminder",
    queue: "reminders",
    schema: z.object({ bookingId: z.number().int().positive() }),
    maxAttempts: 5,
    backoff: { base: "30s", max: "30m" },
    async run({ bookingId }, ctx) {
      const booking = db
        .prepare("SELECT id, customer_email, starts_at FROM bookings WHERE id = ?")
        .get(bookingId) as { id: number; customer_email: string; starts_at: string } | undefined;
      if (!booking) return { skipped: "booking deleted" };
      if (db.prepare("SELECT 1 FROM reminders WHERE booking_id = ?").get(bookingId))
        return { skipped: "already sent" };
      const messageId = await ctx.once(`reminder-mail:${bookingId}`, () =>
        options.mailer.send({
          to: booking.customer_email,
          subject: "Your booking is tomorrow",
          text: `A reminder: your booking starts at ${booking.starts_at} (UTC).`,
        }),
      );
      await ctx.completeInTransaction((tx) => {
        (tx as Database.Database)
          .prepare("INSERT INTO reminders (booking_id, sent_at, message_id, job_id) VALUES (?, ?, ?, ?)")
          .run(bookingId, new Date().toISOString(), messageId, ctx.job.id);
      });
      return { messageId };
    },
  });

  const errand = await openErrand({ db, logger: options.logger, jobs: [sendReminder] });

  const dueBookings = db.prepare(`
    SELECT b.id FROM bookings b
    LEFT JOIN reminders r ON r.booking_id = b.id
    WHERE r.booking_id IS NULL AND b.starts_at > ? AND b.starts_at <= ?
    ORDER BY b.starts_at`);

  async function enqueueDueReminders(): Promise<number> {
    const t = now();
    const due = dueBookings.all(t.toISOString(), new Date(t.getTime() + DAY_MS).toISOString()) as Array<{
      id: number;
    }>;
    if (due.length === 0) return 0;
    const jobs = await errand.enqueueMany(
      sendReminder,
      due.map((b) => ({ payload: { bookingId: b.id }, key: `reminder:${b.id}` })),
    );
    return jobs.filter((j) => j.created).length;
  }

  return {
    db,
    errand,
    addBooking({ customerEmail, startsAt }) {
      return Number(
        db
          .prepare("INSERT INTO bookings (customer_email, starts_at) VALUES (?, ?)")
          .run(customerEmail, startsAt.toISOString()).lastInsertRowid,
      );
    },
    enqueueDueReminders,
    tick: () => runTick(errand, { queues: ["reminders"], beforeProcess: enqueueDueReminders }),
    handler: createTickHandler(errand, {
      cronSecret: options.cronSecret,
      queues: ["reminders"],
      beforeProcess: enqueueDueReminders,
    }),
    sentReminders() {
      return db
        .prepare(
          "SELECT booking_id AS bookingId, sent_at AS sentAt, message_id AS messageId FROM reminders ORDER BY booking_id",
        )
        .all() as Array<{
        bookingId: number;
        sentAt: string;
        messageId: string;
      }>;
    },
    async close() {
      await errand.close();
      db.close();
    },
  };
}
