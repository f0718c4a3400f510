import { ValidationError } from "./errors.js";

export const DEFAULT_PAYLOAD_LIMIT = 1024 * 1024;

/**
 * Deepest nesting of arrays and objects a payload may have. Deeper JSON overflows the call stack
 * somewhere between ~2,000 levels (the memory store's structuredClone) and ~5,000 (JSON.parse with
 * a reviver), which surfaced as a RangeError instead of a clear refusal; no real payload nests
 * this deep.
 */
export const MAX_PAYLOAD_DEPTH = 512;

/**
 * Checks that a payload can be stored as JSON by every store and returns its JSON-normalised
 * copy: serialisable (no cycles, BigInt or functions), within `limit` bytes, strings well-formed
 * UTF-16 without NUL characters (Postgres jsonb cannot hold \u0000 or lone surrogates).
 */
export function normalizePayload(payload: unknown, limit: number, what = "payload"): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload === undefined ? null : payload);
  } catch (err) {
    throw new ValidationError(`${what} is not JSON-serialisable: ${(err as Error).message}`);
  }
  if (text === undefined)
    throw new ValidationError(`${what} is not JSON-serialisable (a function or symbol)`);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limit) {
    throw new ValidationError(`${what} is ${bytes} bytes, over the limit of ${limit} bytes (payloadLimit)`);
  }
  const depth = nestingDepth(text);
  if (depth > MAX_PAYLOAD_DEPTH) {
    throw new ValidationError(
      `${what} is nested ${depth} levels deep, over the limit of ${MAX_PAYLOAD_DEPTH}`,
    );
  }
  return JSON.parse(text, (key, value) => {
    checkText(key, `${what} key`);
    if (typeof value === "string") checkText(value, `${what} string`);
    return value;
  });
}

/** The deepest nesting of arrays and objects in JSON text, without recursion. */
function nestingDepth(json: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

function checkText(text: string, what: string): void {
  if (text.includes("\u0000"))
    throw new ValidationError(`${what} contains a NUL character (\\u0000), which cannot be stored`);
  if (!text.isWellFormed())
    throw new ValidationError(`${what} contains a lone UTF-16 surrogate (invalid Unicode)`);
}
