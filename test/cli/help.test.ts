/**
 * The `errand` CLI as a user runs it: --help of every command (exit 0, its usage, its flags).
 * Real processes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runAll } from "./helpers.js";

describe("errand --help", () => {
  const commands = [
    [],
    ["migrate"],
    ["worker"],
    ["enqueue"],
    ["stats"],
    ["jobs"],
    ["jobs", "list"],
    ["jobs", "show"],
    ["jobs", "cancel"],
    ["dlq"],
    ["dlq", "list"],
    ["dlq", "show"],
    ["dlq", "retry"],
    ["dlq", "discard"],
    ["demo"],
  ];

  test("every command has help, exit 0", async () => {
    const results = await runAll(commands.map((c) => [...c, "--help"]));
    results.forEach((r, i) => {
      const name = ["errand", ...commands[i]].join(" ");
      assert.equal(r.code, 0, `${name} --help: exit ${r.code}\n${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^Usage: ${name}`, "m"), `${name} --help shows its usage`);
    });
    const [top, , worker, enqueue] = results;
    for (const cmd of ["migrate", "worker", "enqueue", "stats", "jobs", "dlq", "demo"])
      assert.match(top.stdout, new RegExp(`\\n  ${cmd}`));
    assert.match(top.stdout, /--url/);
    for (const flag of ["--jobs", "--concurrency", "--shutdown-timeout", "--lease"])
      assert.ok(worker.stdout.includes(flag), flag);
    for (const flag of [
      "--payload",
      "--priority",
      "--delay",
      "--run-at",
      "--key",
      "--max-attempts",
      "--json",
    ]) {
      assert.ok(enqueue.stdout.includes(flag), flag);
    }
  });
});
