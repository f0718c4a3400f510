import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { register as globalRegistry } from "prom-client";
import { z } from "zod";
import { createFetchHandler } from "../../src/http/app.js";
import { defineJob, MemoryStore, openErrand, silentLogger } from "../../src/index.js";
import { call, defs, type Harness, harness, runJobs, seed, sendEmail, TOKEN } from "./helpers.js";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

/**
 * A strict parser of the Prometheus text exposition format (0.0.4): HELP and TYPE lines,
 * samples with escaped label values, float values including NaN and ±Inf. Throws on any line
 * it does not understand, on a sample whose family has no TYPE, and on a repeated series.
 */
function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const lines = text.split("\n");
  assert.equal(lines.at(-1), "", "the exposition ends with a newline");
  for (const [i, line] of lines.entries()) {
    if (line === "") continue;
    const where = `line ${i + 1}: ${line}`;
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(line);
    if (meta) {
      const family = families.get(meta[2]) ?? { name: meta[2], type: "untyped", help: "", samples: [] };
      if (meta[1] === "TYPE") {
        assert.ok(["counter", "gauge", "histogram", "summary", "untyped"].includes(meta[3]), where);
        assert.equal(family.samples.length, 0, `TYPE after samples: ${where}`);
        family.type = meta[3];
      } else family.help = meta[3];
      families.set(meta[2], family);
      continue;
    }
    assert.ok(!line.startsWith("#") || line.startsWith("# "), where);
    if (line.startsWith("# ")) continue; // a comment
    const sample = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`).exec(line);
    assert.ok(sample, `not a sample: ${where}`);
    const [, name, labelText = "", valueText] = sample;
    const labels: Record<string, string> = {};
    const labelRe = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"\s*(,|$)/y;
    let pos = 0;
    while (pos < labelText.length) {
      labelRe.lastIndex = pos;
      const m = labelRe.exec(labelText);
      assert.ok(m, `bad labels: ${where}`);
      assert.ok(!(m[1] in labels), `duplicate label: ${where}`);
      labels[m[1]] = m[2].replace(/\\(["\\n])/g, (_, c) => (c === "n" ? "\n" : c));
      pos = labelRe.lastIndex;
    }
    const value =
      valueText === "+Inf"
        ? Infinity
        : valueText === "-Inf"
          ? -Infinity
          : valueText === "NaN"
            ? NaN
            : Number(valueText);
    assert.ok(valueText === "NaN" || !Number.isNaN(value), `bad value: ${where}`);
    const base = families.has(name) ? name : name.replace(/_(bucket|sum|count|total)$/, "");
    const family = families.get(base) ?? families.get(name);
    assert.ok(family, `sample without TYPE: ${where}`);
    if (family.type === "histogram") assert.match(name, /_(bucket|sum|count)$/, where);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    assert.ok(!seen.has(key), `repeated series: ${where}`);
    seen.add(key);
    family.samples.push({ name, labels, value });
  }
  return families;
}

function value(
  families: Map<string, Family>,
  family: string,
  labels: Record<string, string>,
  name = family,
): number | undefined {
  const f = families.get(family);
  assert.ok(f, `no family ${family}`);
  return f.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    ?.value;
}

async function scrape(handler: (r: Request) => Promise<Response>, bearer: string | null = TOKEN) {
  const response = await call(handler, "/metrics", { bearer });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await response.text());
}

describe("GET /metrics", () => {
  let h: Harness;
  before(async () => {
    h = await harness();
    await seed(h.errand, 6, 4);
    await h.errand.enqueueMany(sendEmail, [
      { payload: { n: 1 } },
      { payload: { n: 2 } },
      { payload: { n: 3 }, delay: "1h" },
    ]);
  });
  after(() => h.cleanup());

  test("parses as Prometheus text; gauges match the store", async () => {
    const families = await scrape(h.handler);
    assert.equal(families.get("errand_jobs")?.type, "gauge");
    const stats = await h.errand.stats();
    for (const s of stats) {
      for (const state of [
        "waiting",
        "pending",
        "delayed",
        "running",
        "completed",
        "failed",
        "cancelled",
      ] as const) {
        assert.equal(
          value(families, "errand_jobs", { queue: s.queue, state }),
          s[state],
          `${s.queue} ${state}`,
        );
      }
      assert.equal(value(families, "errand_dlq_depth", { queue: s.queue }), s.failed);
      const age = value(families, "errand_oldest_pending_age_seconds", { queue: s.queue }) ?? -1;
      if (s.oldestPendingMs === null) assert.equal(age, 0);
      else assert.ok(age >= 0 && Math.abs(age - s.oldestPendingMs / 1000) < 5, `age ${age}`);
    }
    const emails = stats.find((s) => s.queue === "emails")!;
    assert.deepEqual([emails.pending, emails.delayed, emails.completed, emails.failed], [2, 1, 6, 4]);
    // A queue of a registered job with no jobs yet is reported with zeros.
    assert.equal(value(families, "errand_jobs", { queue: "reports", state: "pending" }), 0);
  });

  test("counters and histograms count this process's worker events", async () => {
    const families = await scrape(h.handler);
    const labels = { queue: "emails", name: "send-email" };
    assert.equal(families.get("errand_jobs_completed_total")?.type, "counter");
    assert.equal(value(families, "errand_jobs_completed_total", labels), 6);
    assert.equal(value(families, "errand_jobs_failed_total", labels), 4);
    assert.equal(value(families, "errand_jobs_retried_total", labels), undefined, "nothing retried yet");
    for (const histogram of ["errand_job_run_seconds", "errand_job_wait_seconds"]) {
      assert.equal(families.get(histogram)?.type, "histogram");
      assert.equal(value(families, histogram, labels, `${histogram}_count`), 10, histogram);
      const buckets = families
        .get(histogram)!
        .samples.filter((s) => s.name === `${histogram}_bucket` && s.labels.queue === "emails");
      assert.ok(buckets.length > 5);
      for (let i = 1; i < buckets.length; i++)
        assert.ok(buckets[i].value >= buckets[i - 1].value, "cumulative buckets");
      assert.equal(buckets.at(-1)?.labels.le, "+Inf");
      assert.equal(buckets.at(-1)?.value, 10);
      assert.ok((value(families, histogram, labels, `${histogram}_sum`) ?? -1) >= 0);
    }
  });

  test("retries are counted", async () => {
    const flaky = defineJob({
      name: "flaky",
      queue: "flaky",
      schema: z.object({}),
      maxAttempts: 2,
      backoff: ["1ms"],
      async run() {
        throw new Error("boom");
      },
    });
    h.errand.register(...defs(flaky));
    await h.errand.enqueue(flaky, {});
    await runJobs(h.errand, 1, ["flaky"]);
    const families = await scrape(h.handler);
    assert.equal(value(families, "errand_jobs_retried_total", { queue: "flaky", name: "flaky" }), 1);
    assert.equal(value(families, "errand_jobs_failed_total", { queue: "flaky", name: "flaky" }), 1);
    assert.equal(
      value(families, "errand_job_run_seconds", { queue: "flaky" }, "errand_job_run_seconds_count"),
      2,
    );
  });

  test("errand's metrics stay off prom-client's global registry", async () => {
    const names = (await globalRegistry.getMetricsAsJSON()).map((m) => m.name);
    assert.ok(!names.some((n) => n.startsWith("errand_")), names.join(", "));
  });

  test("needs the token unless metricsPublic", async () => {
    assert.equal((await call(h.handler, "/metrics", { bearer: null })).status, 401);
    assert.equal((await call(h.handler, "/metrics", { bearer: "wrong" })).status, 401);
    assert.equal((await call(h.handler, "/metrics", { method: "POST" })).status, 405);
    const open = createFetchHandler(h.errand, { metricsPublic: true });
    await scrape(open, null);
    assert.equal(
      (await call(open, "/api/stats", { bearer: null })).status,
      503,
      "metricsPublic opens /metrics only",
    );
  });
});

test("gauges describe the whole store; counters only this process's workers", async () => {
  const store = new MemoryStore();
  const jobs = defs(sendEmail);
  const web = await openErrand({ store, jobs, logger: silentLogger() });
  const worker = await openErrand({ store, jobs, logger: silentLogger() });
  try {
    const handler = createFetchHandler(web, { dashboardToken: TOKEN });
    await worker.enqueueMany(sendEmail, [{ payload: { n: 1 } }, { payload: { n: 2, fail: true } }]);
    await runJobs(worker, 2, ["emails"]);
    const families = await scrape(handler);
    assert.equal(value(families, "errand_jobs", { queue: "emails", state: "completed" }), 1);
    assert.equal(value(families, "errand_dlq_depth", { queue: "emails" }), 1);
    assert.equal(value(families, "errand_jobs_completed_total", { queue: "emails" }), undefined);
  } finally {
    await web.close();
    await worker.close();
  }
});
