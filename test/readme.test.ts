/**
 * The README and docs/ against the code, so they cannot drift: the events it lists are the
 * events errand emits, the tick answer it shows is the tick's answer, every relative link
 * resolves inside the repository (none to the developers' shared folder or elsewhere outside), and the licence
 * package.json names is the one in LICENSE.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defineJob, openErrand, runTick, silentLogger } from "../src/index.js";

/** The developers' folder beside the repository, which users who clone errand do not have. */
const SHARED_FOLDER = ["..", "shared"].join("/");

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const README = read("README.md");

/** The keys of the ErrandEvents interface, as declared in src/errand-types.ts. */
function declaredEvents(): string[] {
  const body = /export interface ErrandEvents \{([\s\S]*?)\n\}/.exec(read("src/errand-types.ts"))?.[1];
  assert.ok(body, "ErrandEvents not found in src/errand-types.ts");
  return [...body.matchAll(/^\s+(\w+)\s*:/gm)].map((m) => m[1]).sort();
}

test("the README lists exactly the events errand emits", () => {
  const line = /`errand\.on\(((?:"\w+"(?: \| )?)+), …\)`/.exec(README);
  assert.ok(line, "the errand.on(…) line is missing from the README");
  const listed = [...line[1].matchAll(/"(\w+)"/g)].map((m) => m[1]).sort();
  assert.deepEqual(listed, declaredEvents());
});

test("the README and docs/scale-to-zero.md show every field of the tick's answer, and no other", async () => {
  const job = defineJob({ name: "noop", queue: "q", schema: z.object({}), run: () => {} });
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs: [job] });
  let actual: string[];
  try {
    await errand.enqueue(job, {});
    actual = Object.keys(await runTick(errand, { limit: 10 })).sort();
  } finally {
    await errand.close();
  }
  const inReadme = /answers\s+`\{ ((?:\w+(?:, )?)+) \}`/.exec(README);
  assert.ok(inReadme, "the README's tick answer is missing");
  assert.deepEqual(inReadme[1].split(", ").sort(), actual);
  const doc = /```json\n(\{[\s\S]*?\})\n```/.exec(read("docs/scale-to-zero.md"));
  assert.ok(doc, "docs/scale-to-zero.md shows no JSON answer");
  assert.deepEqual(Object.keys(JSON.parse(doc[1])).sort(), actual);
});

function markdownFiles(): string[] {
  return [
    "README.md",
    ...readdirSync(join(ROOT, "docs"))
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/${f}`),
  ];
}

test("every relative link in the README and docs/ resolves to a file inside the repository", () => {
  let checked = 0;
  for (const file of markdownFiles()) {
    const text = read(file);
    assert.ok(!text.includes(SHARED_FOLDER), `${file} links to ${SHARED_FOLDER}, outside the repository`);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target) || target.startsWith("#")) continue;
      const path = resolve(dirname(join(ROOT, file)), target.split("#")[0]);
      assert.ok(!relative(ROOT, path).startsWith(".."), `${file}: ${target} points outside the repository`);
      assert.ok(existsSync(path), `${file}: ${target} does not exist`);
      checked++;
    }
  }
  assert.ok(checked >= 10, `only ${checked} links checked`);
});

test("the README's in-page links point at headings it has", () => {
  const anchors = new Set(
    [...README.matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, "")
        .replace(/ /g, "-"),
    ),
  );
  const links = [...README.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
  assert.ok(links.length >= 3);
  for (const link of links) assert.ok(anchors.has(link), `#${link} is not a heading`);
});

test("package.json says MIT and LICENSE is the MIT licence; the README shows the user's install line", () => {
  const pkg = JSON.parse(read("package.json")) as { license: string };
  assert.equal(pkg.license, "MIT");
  assert.match(read("LICENSE"), /^MIT License\n[\s\S]*Permission is hereby granted, free of charge/);
  assert.match(README, /^npm install errand zod$/m);
  assert.match(README, /^npm ci && npm run demo/m, "the contributor's quick start stays near the top");
  assert.ok(README.indexOf("npm ci && npm run demo") < README.indexOf("## Usage"));
});

test("no file of the project points a reader at the developers' shared folder (or its DESIGN.md)", () => {
  const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  const offenders: string[] = [];
  let scanned = 0;
  for (const file of tracked) {
    if (
      !/\.(ts|mjs|js|md|sh|json)$/.test(file) ||
      file === "test/readme.test.ts" ||
      file.endsWith("-lock.json")
    )
      continue;
    const text = read(file);
    scanned++;
    if (text.includes(SHARED_FOLDER) || /\bDESIGN\.md\b/.test(text)) offenders.push(file);
  }
  assert.ok(scanned > 100, `scanned ${scanned} files`);
  assert.deepEqual(offenders, []);
});
