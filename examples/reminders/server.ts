/**
 * The reminders app as a small server: POST /api/cron/tick (Bearer CRON_SECRET) sends the due
 * reminders. Call it from GitHub Actions (`errand init github-actions --every 15m`), a system
 * cron, or your platform's cron.
 *
 *   CRON_SECRET=$(openssl rand -hex 32) node --import tsx examples/reminders/server.ts
 *   curl -X POST -H "Authorization: Bearer $CRON_SECRET" http://127.0.0.1:8080/api/cron/tick
 *
 * The first start adds three demo bookings. `--once` sends two ticks at the same moment to a free
 * port, prints what was sent (each reminder once) and exits.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "errand";
import { createRemindersApp, type Mailer } from "./app.js";

const once = process.argv.includes("--once");
const cronSecret = process.env.CRON_SECRET ?? (once ? "example-secret" : undefined);
const file = process.env.REMINDERS_DB ?? (once ? ":memory:" : "./reminders.db");

const consoleMailer: Mailer = {
  async send({ to, subject }) {
    const id = `msg-${Math.random().toString(36).slice(2, 10)}`;
    console.log(`mail ${id} → ${to}: ${subject}`);
    return id;
  },
};

const app = await createRemindersApp({ file, mailer: consoleMailer, cronSecret });
if ((app.db.prepare("SELECT count(*) AS n FROM bookings").get() as { n: number }).n === 0) {
  const hour = 60 * 60 * 1000;
  app.addBooking({ customerEmail: "ada@example.com", startsAt: new Date(Date.now() + 3 * hour) });
  app.addBooking({ customerEmail: "grace@example.com", startsAt: new Date(Date.now() + 20 * hour) });
  app.addBooking({ customerEmail: "edsger@example.com", startsAt: new Date(Date.now() + 72 * hour) }); // not yet
}

const tick = toNodeHandler(app.handler);
const server = createServer((req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname === "/api/cron/tick") return void tick(req, res);
  res.statusCode = 404;
  res.end("not found\n");
});
await new Promise<void>((resolve) =>
  server.listen(once ? 0 : Number(process.env.PORT ?? 8080), "127.0.0.1", resolve),
);
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/cron/tick`;

if (once) {
  const post = () =>
    fetch(url, { method: "POST", headers: { authorization: `Bearer ${cronSecret}` } }).then((r) => r.json());
  const answers = await Promise.all([post(), post()]);
  console.log("ticks:", JSON.stringify(answers));
  console.log("sent:", JSON.stringify(app.sentReminders()));
  server.close();
  await app.close();
} else {
  console.log(`reminders: POST ${url}${cronSecret ? "" : "  (off: set CRON_SECRET)"}`);
  const stop = () => server.close(() => void app.close());
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
