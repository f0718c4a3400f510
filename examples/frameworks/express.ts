/**
 * errand in Express: the dashboard and its JSON API under /admin/jobs, the tick at
 * /api/cron/tick, both behind the application's own `express.json()` (which reads every JSON
 * body before errand sees it: toNodeHandler takes the body it left on `req.body`).
 *
 *   ERRAND_DASHBOARD_TOKEN=$(openssl rand -hex 32) CRON_SECRET=$(openssl rand -hex 32) \
 *     node --import tsx examples/frameworks/express.ts
 *   open http://127.0.0.1:3000/admin/jobs
 */
import type { AddressInfo } from "node:net";
import { createFetchHandler, createTickHandler, openErrand, toNodeHandler } from "errand";
import express from "express";
import { jobs, port, sendWelcome } from "./jobs.js";

const errand = await openErrand({ url: process.env.ERRAND_URL, jobs });

const app = express();
app.use(express.json());
app.use(express.urlencoded({ extended: false }));

// The application's own route, enqueueing from the body express.json() parsed.
app.post("/signup", async (req, res) => {
  const job = await errand.enqueue(sendWelcome, { to: String(req.body.email) });
  res.status(201).json({ welcomeJob: job.id });
});

// The dashboard and API (ERRAND_DASHBOARD_TOKEN) and the tick (CRON_SECRET).
app.use("/admin/jobs", toNodeHandler(createFetchHandler(errand, { prefix: "/admin/jobs" })));
app.all("/api/cron/tick", toNodeHandler(createTickHandler(errand)));

const server = app.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once("SIGTERM", () => server.close(() => void errand.close()));
process.once("SIGINT", () => server.close(() => void errand.close()));
