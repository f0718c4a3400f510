import assert from "node:assert/strict";
import { test } from "node:test";
import { isJobId } from "../../src/store/postgres/rows.js";

// isJobId checks the bigint range on the digits (no BigInt per outcome): the edges of that range.
test("job ids are the positive bigints, written without a leading zero", () => {
  for (const id of ["1", "42", "999999999999999999", "1000000000000000000", "9223372036854775807"])
    assert.equal(isJobId(id), true, id);
  for (const id of [
    "0",
    "01",
    "-1",
    "1.5",
    " 1",
    "",
    "9223372036854775808",
    "9999999999999999999",
    "10000000000000000000",
    1,
    null,
  ])
    assert.equal(isJobId(id), false, String(id));
});
