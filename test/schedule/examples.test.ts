/** The tick examples run: each starts a server, ticks itself once (`--once`) and exits 0. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function runExample(path: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("ERRAND_") && k !== "CRON_SECRET" && k !== "REMINDERS_DB",
    ),
  );
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, path), "--once"], {
    cwd: ROOT,
    env: { ...env, NODE_NO_WARNINGS: "1", ERRAND_LOG_LEVEL: "warn" },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

for (const example of ["examples/tick-fetch.ts", "examples/tick-express-style.ts"]) {
  test(`${example} answers a tick with a JSON summary`, async () => {
    const r = await runExample(example);
    assert.equal(r.code, 0, r.stderr);
    const match = /^200 (\{.*\})$/m.exec(r.stdout);
    assert.ok(match, r.stdout);
    const summary = JSON.parse(match[1]) as Record<string, number>;
    assert.equal(summary.completed, 1);
  });
}

test("examples/reminders/server.ts sends each reminder once across two simultaneous ticks", async () => {
  const r = await runExample("examples/reminders/server.ts");
  assert.equal(r.code, 0, r.stderr);
  assert.equal((r.stdout.match(/^mail /gm) ?? []).length, 2, r.stdout);
  const sent = JSON.parse(/^sent: (.*)$/m.exec(r.stdout)?.[1] ?? "[]") as unknown[];
  assert.equal(sent.length, 2);
});
