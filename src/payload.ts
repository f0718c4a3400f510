import { ValidationError } from "./errors.js";

export const DEFAULT_PAYLOAD_LIMIT = 1024 * 1024;

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
  if (text === undefined) throw new ValidationError(`${what} is not JSON-serialisable (a function or symbol)`);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limit) {
    throw new ValidationError(`${what} is ${bytes} bytes, over the limit of ${limit} bytes (payloadLimit)`);
  }
  return JSON.parse(text, (key, value) => {
    checkText(key, `${what} key`);
    if (typeof value === "string") checkText(value, `${what} string`);
    return value;
  });
}

function checkText(text: string, what: string): void {
  if (text.includes("\u0000")) throw new ValidationError(`${what} contains a NUL character (\\u0000), which cannot be stored`);
  if (!text.isWellFormed()) throw new ValidationError(`${what} contains a lone UTF-16 surrogate (invalid Unicode)`);
}
