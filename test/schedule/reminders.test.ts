/**
 * examples/reminders: each reminder is sent once, with ticks running at the same moment — in
 * one process and in two (two connections to one SQLite file), directly and over HTTP.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createRemindersApp, type Mailer, type RemindersApp } from "../../examples/reminders/app.js";
import { silentLogger, toNodeHandler } from "../../src/index.js";

const HOUR = 3_600_000;
const SECRET = "reminders-secret";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "errand-reminders-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A mailer that takes a while (so concurrent ticks overlap) and remembers every send. */
function slowMailer(sent: string[]): Mailer {
  return {
    async send({ to }) {
      await new Promise((r) => setTimeout(r, 25));
      sent.push(to);
      return `msg-${sent.length}`;
    },
  };
}

async function serve(app: RemindersApp): Promise<{ server: Server; url: string }> {
  const server = createServer(toNodeHandler(app.handler));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/cron/tick` };
}

test("each due booking gets exactly one reminder across concurrent ticks in two processes", {
  timeout: 60_000,
}, async () => {
  const file = join(dir, "app.db");
  const sent: string[] = [];
  const mailer = slowMailer(sent);
  // Two instances on one file: two connections, as two server processes would have.
  const a = await createRemindersApp({ file, mailer, cronSecret: SECRET, logger: silentLogger() });
  const b = await createRemindersApp({ file, mailer, cronSecret: SECRET, logger: silentLogger() });
  const servers: Server[] = [];
  try {
    const now = Date.now();
    const soon = ["in-1h@x.test", "in-5h@x.test", "in-23h@x.test"];
    for (const [i, email] of soon.entries()) {
      a.addBooking({ customerEmail: email, startsAt: new Date(now + [1, 5, 23][i] * HOUR) });
    }
    a.addBooking({ customerEmail: "in-30h@x.test", startsAt: new Date(now + 30 * HOUR) }); // not due yet
    a.addBooking({ customerEmail: "past@x.test", startsAt: new Date(now - HOUR) }); // already started
    const done = a.addBooking({ customerEmail: "reminded@x.test", startsAt: new Date(now + 2 * HOUR) });
    a.db
      .prepare("INSERT INTO reminders (booking_id, sent_at, message_id, job_id) VALUES (?, ?, 'old', '0')")
      .run(done, new Date().toISOString());

    // Round 1: four ticks at once, two per process.
    const results = await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
    assert.deepEqual([...sent].sort(), [...soon].sort(), "each due booking mailed once");
    assert.equal(
      results.reduce((n, r) => n + r.completed, 0),
      3,
    );
    assert.deepEqual(
      a.sentReminders().map((r) => r.bookingId),
      [1, 2, 3, 6],
      "recorded once each (booking 6 had its reminder before)",
    );

    // Round 2: more bookings, then ten ticks at once over HTTP to both processes.
    a.addBooking({ customerEmail: "new-1@x.test", startsAt: new Date(now + 10 * HOUR) });
    b.addBooking({ customerEmail: "new-2@x.test", startsAt: new Date(now + 12 * HOUR) });
    const endpoints = await Promise.all([serve(a), serve(b)]);
    servers.push(...endpoints.map((e) => e.server));
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        fetch(endpoints[i % 2].url, { method: "POST", headers: { authorization: `Bearer ${SECRET}` } }),
      ),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(10).fill(200),
    );
    const summaries = (await Promise.all(responses.map((r) => r.json()))) as Array<{ completed: number }>;
    assert.equal(
      summaries.reduce((n, s) => n + s.completed, 0),
      2,
    );
    assert.deepEqual([...sent].sort(), [...soon, "new-1@x.test", "new-2@x.test"].sort());

    // A wrong token sends nothing; later ticks find nothing left to send.
    assert.equal(
      (await fetch(endpoints[0].url, { method: "POST", headers: { authorization: "Bearer nope" } })).status,
      401,
    );
    await Promise.all([a.tick(), b.tick()]);
    assert.equal(sent.length, 5, "no reminder twice");
    assert.equal(a.sentReminders().length, 6);
    const jobs = (await a.errand.listJobs({ limit: 100 })).jobs;
    assert.equal(jobs.length, 5, "one job per reminder");
    assert.ok(jobs.every((j) => j.state === "completed" && j.attempts.length === 1));
    assert.deepEqual(jobs.map((j) => j.key).sort(), [1, 2, 3, 7, 8].map((id) => `reminder:${id}`).sort());
  } finally {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await a.close();
    await b.close();
  }
});

test("the booking that starts in a day and a minute waits for a later tick", async () => {
  let clock = Date.parse("2026-06-01T08:00:00Z");
  const sent: string[] = [];
  const app = await createRemindersApp({
    file: join(dir, "window.db"),
    mailer: slowMailer(sent),
    now: () => new Date(clock),
    logger: silentLogger(),
  });
  try {
    app.addBooking({ customerEmail: "tomorrow@x.test", startsAt: new Date(clock + 24 * HOUR + 60_000) });
    await app.tick();
    assert.deepEqual(sent, []);
    clock += 2 * 60_000;
    await Promise.all([app.tick(), app.tick()]);
    assert.deepEqual(sent, ["tomorrow@x.test"]);
  } finally {
    await app.close();
  }
});
