/**
 * A nearly full disk under a completing job (SQLite; the file is real, the full disk is SQLite's
 * own `max_page_count` on the worker's connection, which fails a write that would grow the file
 * with SQLITE_FULL exactly as a full filesystem does, while a write that fits goes through).
 *
 * Found by a helper on a real full tmpfs: a job returning a 900 KB result (under the 1 MiB
 * limit) could not write it; the lease extension of its own row, a write that fits in place,
 * went through, so after three rounds the completer took the outcome for a refusal and recorded
 * the completed job as failed, its result thrown away, though space came back seconds later.
 * A full disk says nothing about the outcome: it waits for space like any store that cannot
 * take writes just then (docs/RELIABILITY.md, "a completed job ends completed").
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { z } from "zod";
import { defineJob, openErrand, silentLogger } from "../../src/index.js";
import type { SqliteStore } from "../../src/store/sqlite/store.js";
import { waitFor } from "../helpers/wait.js";

test("a completed job whose result does not fit on a full disk waits for space and ends completed", async () => {
  const dir = mkdtempSync(join(tmpdir(), "errand-full-"));
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started = false;
  const big = defineJob({
    name: "big",
    queue: "big",
    schema: z.object({}),
    async run() {
      started = true;
      await gate;
      return "x".repeat(900 * 1024);
    },
  });
  const errand = await openErrand({ url: join(dir, "jobs.db"), logger: silentLogger(), jobs: [big] });
  try {
    const db = (errand.store as SqliteStore).db;
    const { id } = await errand.enqueue(big, {});
    const worker = errand.work(["big"], { lease: "2s" });
    await waitFor(() => started, "the job to start");
    // Room for a few pages more: the lease extension fits, 900 KB (225 pages of 4 KB) does not.
    const pages = db.pragma("page_count", { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 8}`);
    release();
    // Longer than three rounds of the completer's retries (about 1 s): refused, before the fix.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    assert.equal((await errand.getJob(id))?.state, "running", "the outcome waits for space");
    db.pragma("max_page_count = 1073741823");
    await waitFor(async () => (await errand.getJob(id))?.state !== "running", "the job to end", 20_000);
    const record = await errand.getJob(id);
    assert.equal(record?.state, "completed", record?.lastError ?? "");
    assert.equal(String(record?.result ?? "").length, 900 * 1024);
    await worker.stop();
  } finally {
    await errand.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
