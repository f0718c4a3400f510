import { ValidationError } from "./errors.js";

export const DEFAULT_PAYLOAD_LIMIT = 1024 * 1024;

/**
 * Deepest nesting of arrays and objects a payload may have. Deeper JSON overflows the call stack
 * somewhere between ~2,000 levels (the memory store's structuredClone) and ~5,000 (JSON.parse with
 * a reviver), which surfaced as a RangeError instead of a clear refusal; no real payload nests
 * this deep.
 */
export const MAX_PAYLOAD_DEPTH = 512;

/** A payload that every store can hold: its JSON text, and the value that text parses to. */
export interface CheckedPayload {
  /** `JSON.parse(json)`: the payload as a worker will receive it (a Date is an ISO string, …). */
  value: unknown;
  /** `JSON.stringify(payload)`: what the stores write, as is. */
  json: string;
}

/**
 * A NUL character or a lone UTF-16 surrogate in a key or a string, in JSON.stringify's output:
 * it writes NUL as `\u0000` and a lone surrogate as `\udxxx` (lower-case hex; a well-formed pair
 * stays as is), and a backslash of the data as `\\`. So an escape preceded by an even number of
 * backslashes is one of those characters; after an odd number it is the text "\u0000" (six
 * characters), which every store keeps.
 */
const UNSTORABLE = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f])/;

/**
 * Checks that a payload can be stored as JSON by every store: serialisable (no cycles, BigInt or
 * functions), within `limit` bytes, at most MAX_PAYLOAD_DEPTH levels deep, strings and keys
 * well-formed UTF-16 without NUL characters (Postgres jsonb cannot hold \u0000 or lone
 * surrogates). Returns its JSON text and JSON-normalised copy.
 *
 * The payload is serialised once and the checks run over that text; it is parsed once, without
 * a reviver. (Parsing with a reviver that checked every key and string cost ~6× a plain parse:
 * 1.7 µs against 0.25 µs for a two-field payload.)
 */
export function checkPayload(payload: unknown, limit: number, what = "payload"): CheckedPayload {
  const json = storableJson(payload, limit, what);
  return { value: JSON.parse(json), json };
}

/**
 * The checks of checkPayload without the parse: the JSON text of `value` if every store can
 * hold it, else a ValidationError naming the problem and `what`. The worker runs it on handler
 * results and ctx.once values before they reach a store: one it cannot hold would otherwise
 * fail the store's whole batch (Postgres refuses NUL and lone surrogates in jsonb, SQLite and
 * memory do not), or grow a job row without bound.
 */
export function storableJson(value: unknown, limit: number, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (err) {
    throw new ValidationError(`${what} is not JSON-serialisable: ${(err as Error).message}`);
  }
  if (text === undefined)
    throw new ValidationError(`${what} is not JSON-serialisable (a function or symbol)`);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: a short text cannot be over the limit.
  if (text.length * 3 > limit) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > limit) {
      throw new ValidationError(`${what} is ${bytes} bytes, over the limit of ${limit} bytes (payloadLimit)`);
    }
  }
  // Nesting n levels deep takes 2n brackets: a short text cannot be too deep.
  if (text.length > 2 * MAX_PAYLOAD_DEPTH) {
    const depth = nestingDepth(text);
    if (depth > MAX_PAYLOAD_DEPTH) {
      throw new ValidationError(
        `${what} is nested ${depth} levels deep, over the limit of ${MAX_PAYLOAD_DEPTH}`,
      );
    }
  }
  if (text.includes("\\u") && UNSTORABLE.test(text)) explainUnstorable(text, what);
  return text;
}

/** Longest error message or stack errand stores, in UTF-16 code units. */
export const MAX_ERROR_TEXT = 64 * 1024;

/**
 * Error text as every store can hold it: NUL characters and lone surrogates become U+FFFD and
 * anything past MAX_ERROR_TEXT is cut. Error text is kept rather than refused (it is how a
 * failure is diagnosed), but bounded: it is stored in the job's history once per attempt and
 * rewritten with the row on every later attempt.
 */
export function storableText(text: string): string {
  let clean =
    text.length > MAX_ERROR_TEXT
      ? `${text.slice(0, MAX_ERROR_TEXT)}… (${text.length - MAX_ERROR_TEXT} more characters cut)`
      : text;
  if (clean.includes("\u0000")) clean = clean.replaceAll("\u0000", "\ufffd");
  return clean.isWellFormed() ? clean : clean.toWellFormed();
}

/** The JSON-normalised copy of a payload that every store can hold (see checkPayload). */
export function normalizePayload(payload: unknown, limit: number, what = "payload"): unknown {
  return checkPayload(payload, limit, what).value;
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

/**
 * Throws the error naming the first key or string (in JSON.parse's reviver order) that holds a
 * NUL or a lone surrogate. Only called when UNSTORABLE found one, so it always throws.
 */
function explainUnstorable(text: string, what: string): never {
  JSON.parse(text, (key, value) => {
    checkText(key, `${what} key`);
    if (typeof value === "string") checkText(value, `${what} string`);
    return value;
  });
  throw new ValidationError(`${what} contains a NUL character or a lone UTF-16 surrogate`);
}

/**
 * Longest key or name errand stores beside a payload (an idempotency, debounce or flow key, a
 * flow's node name), in UTF-16 code units: each is indexed, compared on every enqueue or claim
 * that meets it, and shown in the job view.
 */
export const MAX_KEY_LENGTH = 512;

/**
 * A key or name (`what`) as every store holds it: a non-empty string of at most `maxLength`
 * characters, without the NUL characters or lone surrogates of checkText (PostgreSQL text refuses
 * NUL; SQLite and PostgreSQL write U+FFFD for a lone surrogate — another key, which an enqueue
 * then never finds again). Else a ValidationError naming `what` and the problem.
 */
export function storableString(value: unknown, what: string, maxLength = MAX_KEY_LENGTH): string {
  if (typeof value !== "string" || value.length === 0 || value.length > maxLength) {
    throw new ValidationError(
      `${what} must be a non-empty string of at most ${maxLength} characters; got ${typeof value === "string" ? `a string of ${value.length}` : (JSON.stringify(value) ?? typeof value)}`,
    );
  }
  checkText(value, what);
  return value;
}

/** Longest piece of a caller's text an error message quotes. */
const QUOTED_LENGTH = 40;

/**
 * `text` as an error message shows it: JSON-quoted (a NUL or lone surrogate escaped, visible),
 * and cut with its length given when long — a message is read, not a copy of a megabyte key.
 */
export function quoted(text: string): string {
  if (text.length <= QUOTED_LENGTH) return JSON.stringify(text);
  // Not between the halves of a surrogate pair: the cut would show a lone surrogate.
  const last = text.charCodeAt(QUOTED_LENGTH - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? QUOTED_LENGTH - 1 : QUOTED_LENGTH;
  return `${JSON.stringify(text.slice(0, end)).slice(0, -1)}…" (${text.length} characters)`;
}

function checkText(text: string, what: string): void {
  if (text.includes("\u0000"))
    throw new ValidationError(`${what} contains a NUL character (\\u0000), which cannot be stored`);
  if (!text.isWellFormed())
    throw new ValidationError(`${what} contains a lone UTF-16 surrogate (invalid Unicode)`);
}
