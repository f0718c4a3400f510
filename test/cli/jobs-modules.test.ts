/**
 * The `errand` CLI's jobs modules (a `jobs` export, or each definition exported; anything else in
 * a list is an error) and stats --watch. Real processes on a temporary SQLite file.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { BUILD, exitOf, runAll, scratch, start, waitFor } from "./helpers.js";

describe("jobs modules and stats --watch", () => {
  const s = scratch();
  const url = ["--url", s.db];
  after(() => s.cleanup());
  before(() => {
    const header = [
      `import { defineJob } from ${JSON.stringify(pathToFileURL(join(BUILD, "src/index.js")).href)};`,
      `const schema = { "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) } };`,
      'const job = (name) => defineJob({ name, queue: "q", schema, run() {} });',
    ].join("\n");
    writeFileSync(
      join(s.dir, "named.mjs"),
      `${header}\nexport const jobs = [job("named-a")];\nexport const other = job("ignored");\n`,
    );
    writeFileSync(
      join(s.dir, "each.mjs"),
      `${header}\nexport const a = job("each-a");\nexport const b = job("each-b");\nexport const helper = () => 1;\n`,
    );
    writeFileSync(
      join(s.dir, "bad-array.mjs"),
      `${header}\nexport default [job("fine"), { name: "not a job" }];\n`,
    );
  });

  test("a module may export `jobs`, or each definition; anything else in a list is an error", async () => {
    const [named, ignored, each, unknown, bad] = await runAll([
      ["enqueue", "named-a", "--jobs", join(s.dir, "named.mjs"), ...url, "--json"],
      ["enqueue", "ignored", "--jobs", join(s.dir, "named.mjs"), ...url],
      ["enqueue", "each-b", "--jobs", join(s.dir, "each.mjs"), ...url, "--json"],
      ["enqueue", "helper", "--jobs", join(s.dir, "each.mjs"), ...url],
      ["enqueue", "fine", "--jobs", join(s.dir, "bad-array.mjs"), ...url],
    ]);
    assert.equal(named.code, 0, named.stderr);
    assert.equal(JSON.parse(named.stdout).name, "named-a");
    assert.equal(ignored.code, 2, "with a `jobs` export, other exports are not jobs of the module");
    assert.match(ignored.stderr, /unknown job "ignored"; the jobs module defines: named-a/);
    assert.equal(each.code, 0, each.stderr);
    assert.equal(JSON.parse(each.stdout).name, "each-b");
    assert.match(unknown.stderr, /unknown job "helper"; the jobs module defines: each-a, each-b/);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /export default\[1\] is not a job definition/);
  });

  test("stats --watch redraws until Ctrl-C, then exits 0", async () => {
    const proc = start(["stats", ...url, "--watch", "200ms", "--json"]);
    const frames = await waitFor("two frames", () => {
      const lines = proc.stdout().split("\n").filter(Boolean);
      return lines.length >= 2 && lines;
    });
    const frame = JSON.parse(frames[0]);
    assert.ok(Array.isArray(frame.queues));
    assert.ok(frame.queues.some((q: { queue: string }) => q.queue === "q"));
    proc.child.kill("SIGINT");
    const result = await exitOf(proc);
    assert.equal(result.code, 0, result.stderr);
  });
});
