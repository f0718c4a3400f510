/**
 * The job list's page stays within a size budget whatever the payloads weigh: 1,000 jobs near
 * the 1 MiB payload limit made `GET /api/jobs?limit=1000` answer 500 after the server grew by
 * 1.8 GB (a helper's find). Here 40 jobs of 600 KB (24 MB) against the 16 MB budget: the page
 * ends early with a cursor, and following the cursors gives every job once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { PAGE_BUDGET_BYTES } from "../../src/http/page-budget.js";
import { createFetchHandler, defineJob, openErrand, silentLogger } from "../../src/index.js";

const TOKEN = "t".repeat(40);
const bulky = defineJob({
  name: "bulky",
  queue: "bulky",
  schema: z.object({ blob: z.string() }),
  run: () => {},
});

test("a page of heavy jobs ends within the budget and its cursors reach every job", async () => {
  const errand = await openErrand({ url: "memory:", logger: silentLogger(), jobs: [bulky] });
  try {
    const ids = new Set<string>();
    for (let n = 0; n < 40; n++)
      ids.add((await errand.enqueue(bulky, { blob: `${n}`.padEnd(600_000, "x") })).id);
    const handler = createFetchHandler(errand, { dashboardToken: TOKEN });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await handler(
        new Request(`http://localhost/api/jobs?limit=1000${cursor ? `&cursor=${cursor}` : ""}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      );
      assert.equal(response.status, 200);
      const text = await response.text();
      assert.ok(text.length <= PAGE_BUDGET_BYTES + 1_000_000, `a page of ${text.length} bytes`);
      const page = JSON.parse(text) as { jobs: { id: string }[]; nextCursor: string | null };
      seen.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    assert.ok(pages >= 2, `${pages} page(s)`);
    assert.deepEqual([...seen].sort(), [...ids].sort());
  } finally {
    await errand.close();
  }
});
