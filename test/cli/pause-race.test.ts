/**
 * Pausing and resuming one queue from several processes at once, as operators and deploy
 * scripts do: `errand queue pause|resume` run four at a time against one SQLite file and one
 * Postgres schema. The first pauses come before the database exists (a SQLite file not yet
 * created, a schema not yet migrated) and name a queue that has no jobs: every process exits 0
 * and all report the one pause's time (pausing twice keeps the first pausedAt). Four resumes at
 * once: each exits 0 and exactly one lifted the pause. Mixed pauses and resumes at once: every
 * process exits 0 and the queue ends paused or not, the same for every reader.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { openErrand, silentLogger } from "../../src/index.js";
import { freshSchema, postgresUrl, skipUnlessPostgres } from "../helpers/postgres.js";
import { type RunResult, run, scratch } from "./helpers.js";

const pgSkip = await skipUnlessPostgres();
const AT_ONCE = 4;

const targets: Array<{
  name: string;
  skip: string | false;
  url(): { args: string[]; drop(): Promise<void> };
}> = [
  {
    name: "a SQLite file",
    skip: false,
    url() {
      const s = scratch("errand-pause-race-");
      return { args: ["--url", join(s.dir, "new.db")], drop: async () => s.cleanup() };
    },
  },
  {
    name: "a Postgres schema",
    skip: pgSkip,
    url() {
      const { schema, drop } = freshSchema("errand_prace");
      return { args: ["--url", postgresUrl(), "--schema", schema], drop };
    },
  },
];

/** Runs every command at the same time and checks each exited 0 with nothing on stderr. */
async function atOnce(commands: string[][]): Promise<RunResult[]> {
  const results = await Promise.all(commands.map((c) => run(c)));
  results.forEach((r, i) => {
    assert.equal(r.code, 0, `${commands[i].slice(0, 3).join(" ")} exited ${r.code}: ${r.stderr}`);
    assert.equal(r.stderr.trim(), "", `${commands[i].slice(0, 3).join(" ")} wrote to stderr`);
  });
  return results;
}

for (const target of targets) {
  describe(`pause and resume from ${AT_ONCE} processes at once on ${target.name}`, {
    skip: target.skip,
  }, () => {
    const { args, drop } = target.url();
    after(drop);
    const pause = ["queue", "pause", "emails", ...args, "--json"];
    const resume = ["queue", "resume", "emails", ...args, "--json"];

    test("first pauses before the database exists: one pause, one pausedAt for all", async () => {
      const results = await atOnce(Array.from({ length: AT_ONCE }, () => pause));
      const times = results.map((r) => JSON.parse(r.stdout).pausedAt as string);
      assert.equal(new Set(times).size, 1, `one pausedAt: ${times.join(", ")}`);
    });

    test("resumes at once: each exits 0, exactly one lifted the pause", async () => {
      const results = await atOnce(Array.from({ length: AT_ONCE }, () => resume));
      const lifted = results.filter((r) => JSON.parse(r.stdout).resumed === true);
      assert.equal(lifted.length, 1, results.map((r) => r.stdout.trim()).join(" | "));
    });

    test("pauses and resumes at once: every process exits 0 and every reader sees one state", async () => {
      for (let round = 0; round < 3; round++) {
        await atOnce([pause, resume, pause, resume]);
        const listed = JSON.parse((await atOnce([["queue", "list", ...args, "--json"]]))[0].stdout) as {
          queue: string;
          paused: boolean;
        }[];
        const url = args[1];
        const schema = args[2] === "--schema" ? { schema: args[3] } : {};
        const errand = await openErrand({ url, ...schema, logger: silentLogger() });
        try {
          const paused = (await errand.pausedQueues()).some((p) => p.queue === "emails");
          assert.equal(listed.find((q) => q.queue === "emails")?.paused ?? false, paused);
        } finally {
          await errand.close();
        }
      }
    });
  });
}
