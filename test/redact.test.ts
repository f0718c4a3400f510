/** Credentials in every form a Postgres URL or conninfo string can carry them are hidden. */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger } from "../src/logger.js";
import { redactCredentials } from "../src/redact.js";

test("redactCredentials hides passwords in userinfo, URL parameters and libpq key=value strings", () => {
  const cases: [string, string][] = [
    ["postgres://u:s3cret@db:5432/app", "postgres://u:***@db:5432/app"],
    ["postgresql://u:p%40ss@db/app?sslmode=require", "postgresql://u:***@db/app?sslmode=require"],
    ["postgres://:s3cret@db/app", "postgres://:***@db/app"],
    ["postgres://u@db/app?password=s3cret", "postgres://u@db/app?password=***"],
    [
      "postgres://u@db/app?sslmode=disable&password=s3cret&x=1",
      "postgres://u@db/app?sslmode=disable&password=***&x=1",
    ],
    ["postgres://db/app?sslpassword=s3cret", "postgres://db/app?sslpassword=***"],
    ["PASSWORD=s3cret host=db", "PASSWORD=*** host=db"],
    ["host=db password='s 3cret' user=u", "host=db password=*** user=u"],
    [
      "cannot open postgres://a:b@h/d: boom; also postgres://c@h/d?password=e",
      "cannot open postgres://a:***@h/d: boom; also postgres://c@h/d?password=***",
    ],
  ];
  for (const [input, expected] of cases) assert.equal(redactCredentials(input), expected, input);
  // Nothing to hide: unchanged.
  for (const plain of [
    "./errand.db",
    "postgres://u@db:5432/app",
    "sqlite:/tmp/x.db",
    "job 42 failed: ECONNREFUSED",
  ])
    assert.equal(redactCredentials(plain), plain);
});

test("the built-in logger redacts messages, fields and errors", () => {
  const lines: string[] = [];
  const log = createLogger({
    pretty: false,
    destination: new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  });
  log.info({ store: "postgres://u:s3cret-a@db/app" }, "opened postgres://u:s3cret-b@db/app");
  log.error({ err: new Error("connect failed for postgres://u@db/app?password=s3cret-c") }, "open failed");
  const text = lines.join("");
  assert.equal(lines.length, 2);
  for (const secret of ["s3cret-a", "s3cret-b", "s3cret-c"]) assert.ok(!text.includes(secret), text);
  assert.match(text, /postgres:\/\/u:\*\*\*@db\/app/);
  assert.match(text, /password=\*\*\*/);
});

test("an unknown log level is refused with the list of levels", () => {
  assert.throws(
    () => createLogger({ level: "verbose" }),
    /log level must be one of fatal, error, warn, info, debug, trace, silent; got "verbose"/,
  );
  const saved = process.env.ERRAND_LOG_LEVEL;
  process.env.ERRAND_LOG_LEVEL = "loud";
  try {
    assert.throws(() => createLogger(), /ERRAND_LOG_LEVEL must be one of .*; got "loud"/);
  } finally {
    if (saved === undefined) delete process.env.ERRAND_LOG_LEVEL;
    else process.env.ERRAND_LOG_LEVEL = saved;
  }
});

test("a store URL with an unsupported scheme is refused without echoing its password", async () => {
  const { parseStoreUrl } = await import("../src/store/open.js");
  for (const url of ["mysql://u:s3cret-d@h/db", "mysql://u@h/db?password=s3cret-d"]) {
    assert.throws(
      () => parseStoreUrl(url),
      (err: Error) => /unsupported store URL scheme/.test(err.message) && !err.message.includes("s3cret-d"),
      url,
    );
  }
});
