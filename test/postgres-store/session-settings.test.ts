/**
 * PostgreSQL: session defaults that a DBA or a hosting provider sets on a database or a role
 * (`ALTER DATABASE … SET`, `ALTER ROLE … SET`; here through the URL's `options`, which sets
 * the same session defaults). errand's own connections pin what its SQL and node-postgres rely
 * on, so the application's database may keep its own defaults.
 *
 * Found by a helper attacking the store with such settings (before the fix):
 * - DateStyle 'SQL, DMY' or 'German': node-postgres reads only ISO dates, so every timestamp
 *   errand read came back as 1970-01-01 (or null): `now()`, run times, a `unique: { for }` window
 *   (a duplicate stored 1 ms later), a debounce's delay, schedule slots.
 * - extra_float_digits -15: epoch milliseconds read as float8 lost their digits: a `for: "24h"`
 *   window let a duplicate in.
 * - default_transaction_isolation 'repeatable read' or 'serializable': 2 of 3 processes opening a
 *   fresh schema at once failed (`relation "jobs" already exists`: the migration read the
 *   applied versions with the snapshot taken before its lock), and concurrent keyed enqueues
 *   threw 40001 serialization failures.
 * - lock_timeout 10ms: 2 of 3 concurrent opens failed waiting for the migration lock.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, type Errand, openErrand, silentLogger } from "../../src/index.js";
import { freshSchema, postgresUrl, skipUnlessPostgres, withClient } from "../helpers/postgres.js";

const skip = await skipUnlessPostgres();

const note = defineJob({ name: "note", queue: "notes", schema: z.object({ n: z.number() }), run: () => {} });

/** The shared server's URL with these session defaults, as ALTER ROLE … SET would give them. */
function withDefaults(settings: Record<string, string>): string {
  const options = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value.replaceAll(" ", "\\ ")}`)
    .join(" ");
  const url = new URL(postgresUrl());
  url.searchParams.set("options", options);
  return url.toString();
}

async function opened(url: string, schema: string): Promise<Errand> {
  return openErrand({ url, schema, logger: silentLogger(), jobs: [note] });
}

for (const dateStyle of ["SQL, DMY", "German"]) {
  test(`times are read right under DateStyle '${dateStyle}' and extra_float_digits -15`, {
    skip,
  }, async () => {
    const { schema, drop } = freshSchema("errand_ds");
    const errand = await opened(withDefaults({ DateStyle: dateStyle, extra_float_digits: "-15" }), schema);
    try {
      const now = (await errand.now()).getTime();
      assert.ok(Math.abs(now - Date.now()) < 5_000, `errand.now() is ${new Date(now).toISOString()}`);
      const later = await errand.enqueue(note, { n: 1 }, { delay: "1h" });
      const record = await errand.getJob(later.id);
      const inMs = (record?.runAt.getTime() ?? 0) - now;
      assert.ok(Math.abs(inMs - 3_600_000) < 5_000, `a 1 h delay runs in ${inMs} ms`);
      const first = await errand.enqueue(note, { n: 2 }, { key: "daily", unique: { for: "24h" } });
      const again = await errand.enqueue(note, { n: 3 }, { key: "daily", unique: { for: "24h" } });
      assert.deepEqual([first.created, again.created, again.id], [true, false, first.id]);
      await errand.processJobs();
      const done = await errand.getJob(first.id);
      assert.equal(done?.state, "completed");
      const finished = done?.finishedAt?.getTime() ?? 0;
      assert.ok(Math.abs(finished - Date.now()) < 60_000, `finishedAt ${done?.finishedAt?.toISOString()}`);
    } finally {
      await errand.close();
      await drop();
    }
  });
}

for (const settings of [
  { default_transaction_isolation: "repeatable read" } as Record<string, string>,
  { default_transaction_isolation: "serializable" },
  { lock_timeout: "10ms" },
]) {
  const named = Object.entries(settings).map(([k, v]) => `${k} '${v}'`)[0];
  test(`three processes open a fresh schema at once under ${named}, then race on keys`, {
    skip,
  }, async () => {
    const { schema, drop } = freshSchema("errand_iso");
    const url = withDefaults(settings);
    const opens = await Promise.allSettled([opened(url, schema), opened(url, schema), opened(url, schema)]);
    const errands = opens.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    try {
      assert.deepEqual(
        opens.flatMap((o) => (o.status === "rejected" ? [String(o.reason)] : [])),
        [],
        "every open succeeded",
      );
      // Two processes enqueue the same 100 keys at once: each key one job, no call fails.
      const keys = Array.from({ length: 100 }, (_, n) => `k${n}`);
      const calls = await Promise.allSettled(
        errands
          .slice(0, 2)
          .flatMap((e) =>
            keys.map((key, n) => e.enqueue(note, { n }, { key, unique: { while: "pending" } })),
          ),
      );
      assert.deepEqual(
        calls.flatMap((c) => (c.status === "rejected" ? [String(c.reason)] : [])).slice(0, 3),
        [],
        "no enqueue failed",
      );
      const stats = (await errands[0].stats()).find((s) => s.queue === "notes");
      assert.equal(stats?.pending, 100);
    } finally {
      for (const e of errands) await e.close();
      await drop();
    }
  });
}

// A database made with another encoding: LATIN1 refused the migrations' own text ("character
// with byte sequence 0xe2 0x80 0x94 … has no equivalent"), WIN1252 took them and then failed a
// completed job whose log line held an emoji (recorded failed, its result lost). Refused at open,
// naming the encoding and what to do.
test("a database whose encoding is not UTF8 is refused at open, by name", { skip }, async () => {
  const name = `errand_latin1_${process.pid}`;
  await withClient((c) => c.query(`DROP DATABASE IF EXISTS ${name}`));
  await withClient((c) =>
    c.query(`CREATE DATABASE ${name} ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'`),
  );
  try {
    const url = new URL(postgresUrl());
    url.pathname = `/${name}`;
    await assert.rejects(
      openErrand({ url: url.toString(), logger: silentLogger(), jobs: [note] }),
      (err: Error) => err.name === "ValidationError" && /encoding LATIN1.*UTF8/.test(err.message),
    );
    const tables = await withClient(
      (c) =>
        c.query("SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = 'errand'"),
      { url: url.toString() },
    );
    assert.equal(tables.rows[0].n, 0, "nothing created");
  } finally {
    await withClient((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
});
