import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { pino } from "pino";
import { type Alert, watchAlerts } from "../../src/alerts.js";
import { MemoryStore, openErrand, silentLogger } from "../../src/index.js";
import { defs, seed, sendEmail } from "./helpers.js";

/** A pino logger that keeps its lines for inspection. */
function capturingLogger() {
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

async function open(clock?: () => number) {
  const store = new MemoryStore(clock ? { clock } : {});
  return openErrand({ store, jobs: defs(sendEmail), logger: silentLogger() });
}

describe("alerts", () => {
  test("failureRate fires once when 20 jobs fail in its window, and again only after the queue recovered", async () => {
    const errand = await open();
    const { logger, lines } = capturingLogger();
    const fired: Alert[] = [];
    const resolved: Alert[] = [];
    const watcher = watchAlerts(
      errand,
      [{ queue: "emails", failureRate: { above: 0.2, window: "10m", minJobs: 20 } }],
      {
        onAlert: (a) => void fired.push(a),
        onResolve: (a) => void resolved.push(a),
        interval: "1h",
        logger,
      },
    );
    try {
      await seed(errand, 0, 19);
      assert.deepEqual(await watcher.check(), [], "19 jobs: below minJobs");
      await seed(errand, 0, 1);
      const first = await watcher.check();
      assert.equal(first.length, 1);
      assert.equal(fired.length, 1);
      assert.equal(fired[0].status, "firing");
      assert.equal(fired[0].kind, "failureRate");
      assert.equal(fired[0].queue, "emails");
      assert.equal(fired[0].failed, 20);
      assert.equal(fired[0].value, 1);
      assert.match(fired[0].message, /100% of jobs failed within 10 min \(20 of 20; threshold 20%\)/);
      const errorLines = lines.filter((l) => l.level === 50);
      assert.equal(errorLines.length, 1, "logged once at error level");
      assert.match(errorLines[0].msg, /errand alert/);

      // Still failing: the same episode, no new alert.
      await seed(errand, 0, 20);
      assert.deepEqual(await watcher.check(), []);
      assert.deepEqual(await watcher.check(), []);
      assert.equal(fired.length, 1);

      // The queue recovers: 40 failed of 240 finished is 16.7 %.
      await seed(errand, 200, 0);
      const recovered = await watcher.check();
      assert.equal(recovered.length, 1);
      assert.equal(recovered[0].status, "resolved");
      assert.equal(resolved.length, 1);
      assert.equal(resolved[0].firedAt, fired[0].firedAt);
      assert.ok(resolved[0].resolvedAt);
      assert.equal(fired.length, 1);

      // And fails again: a new episode.
      await seed(errand, 0, 40);
      const again = await watcher.check();
      assert.equal(again.length, 1);
      assert.equal(fired.length, 2);
      assert.equal(fired[1].failed, 80);
      assert.deepEqual(await watcher.check(), []);
    } finally {
      watcher.stop();
      await errand.close();
    }
  });

  test("dlqGrowth fires once per episode; the episode ends when its window has passed", async () => {
    let offset = 0;
    const errand = await open(() => Date.now() + offset);
    const fired: Alert[] = [];
    const resolved: Alert[] = [];
    const watcher = watchAlerts(errand, [{ dlqGrowth: { count: 20, window: "10m" } }], {
      onAlert: (a) => void fired.push(a),
      onResolve: (a) => void resolved.push(a),
      interval: "1h",
      logger: silentLogger(),
    });
    try {
      await seed(errand, 50, 19);
      await watcher.check();
      assert.equal(fired.length, 0);
      await seed(errand, 0, 1);
      await watcher.check();
      assert.equal(fired.length, 1);
      assert.equal(fired[0].kind, "dlqGrowth");
      assert.equal(fired[0].queue, "emails", "a rule without queue watches each queue");
      assert.equal(fired[0].value, 20);
      assert.match(fired[0].message, /20 jobs moved to the dead-letter queue within 10 min/);
      await seed(errand, 0, 30);
      await watcher.check();
      assert.equal(fired.length, 1, "more failures in the same episode stay quiet");

      offset += 11 * 60_000; // the window passes with no new failure
      await watcher.check();
      assert.equal(resolved.length, 1);
      assert.equal(resolved[0].value, 0);

      await seed(errand, 0, 20);
      await watcher.check();
      assert.equal(fired.length, 2, "a new episode");
    } finally {
      watcher.stop();
      await errand.close();
    }
  });

  test("webhook: POSTs JSON on fire and resolve; a failing or hanging webhook is logged, never thrown", async () => {
    const received: { status: string; alert: Alert }[] = [];
    let mode: "ok" | "500" | "hang" = "ok";
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (mode === "hang") return; // never answers
        received.push(JSON.parse(body));
        res.statusCode = mode === "ok" ? 204 : 500;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const errand = await open();
    const { logger, lines } = capturingLogger();
    const watcher = watchAlerts(
      errand,
      [{ queue: "emails", failureRate: { above: 0.5, window: "1h", minJobs: 2 } }],
      {
        webhook: { url, timeout: 1500 },
        onAlert: () => {
          throw new Error("a broken hook");
        },
        interval: "1h",
        logger,
      },
    );
    try {
      await seed(errand, 0, 2);
      assert.equal((await watcher.check()).length, 1);
      assert.equal(received.length, 1);
      assert.equal(received[0].status, "firing");
      assert.equal(received[0].alert.queue, "emails");
      assert.ok(
        lines.some((l) => /onAlert hook threw/.test(l.msg)),
        "the hook's error is logged",
      );

      mode = "500";
      await seed(errand, 10, 0);
      assert.equal((await watcher.check())[0].status, "resolved");
      assert.equal(received.at(-1)?.status, "resolved");
      assert.ok(lines.some((l) => /webhook answered HTTP 500/.test(l.msg)));

      mode = "hang";
      await seed(errand, 0, 20);
      const started = Date.now();
      assert.equal((await watcher.check()).length, 1);
      assert.ok(Date.now() - started < 5000, "the timeout cut the hanging webhook");
      assert.ok(lines.some((l) => /alert webhook failed/.test(l.msg)));
    } finally {
      watcher.stop();
      await errand.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  test("the timer checks on its own; stop() ends it", async () => {
    const errand = await open();
    const fired: Alert[] = [];
    await seed(errand, 0, 3);
    const watcher = watchAlerts(errand, [{ dlqGrowth: { count: 3, window: "1m" } }], {
      onAlert: (a) => void fired.push(a),
      interval: 100,
      logger: silentLogger(),
    });
    try {
      for (let i = 0; i < 100 && fired.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(fired.length, 1);
    } finally {
      watcher.stop();
      watcher.stop();
      await errand.close();
    }
  });

  test("invalid rules are refused with a clear message", async () => {
    const errand = await open();
    try {
      const bad: Array<[unknown, RegExp]> = [
        [{}, /exactly one of dlqGrowth or failureRate/],
        [{ dlqGrowth: { count: 1, window: "1m" }, failureRate: { above: 0.1, window: "1m" } }, /exactly one/],
        [{ dlqGrowth: { count: 0, window: "1m" } }, /count must be a positive integer/],
        [{ dlqGrowth: { count: 5, window: "soon" } }, /window/],
        [{ failureRate: { above: 20, window: "10m" } }, /fraction from 0 to 1/],
        [{ failureRate: { above: 0.2, window: "10m", minJobs: 0 } }, /minJobs/],
        [{ queue: "no spaces", dlqGrowth: { count: 5, window: "1m" } }, /queue must be a queue name/],
      ];
      for (const [rule, message] of bad) {
        assert.throws(() => watchAlerts(errand, [rule as never]), message, JSON.stringify(rule));
      }
      assert.throws(
        () => watchAlerts(errand, [], { webhook: "ftp://x" }),
        /webhook must be an http\(s\) URL/,
      );
    } finally {
      await errand.close();
    }
  });
});
