/** What every API handler shares: its errors and the checks of query parameters. */
import { parseDuration } from "../duration.js";
import { NAME_PATTERN } from "../job.js";
import type { RouteContext } from "./types.js";

/** An answer other than 200: a status and a message naming the problem. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const bad = (message: string) => new HttpError(400, message);

/** The query parameters, each known and given once; an empty value counts as absent. */
export function query(ctx: RouteContext, known: string[]): Map<string, string> {
  const params = new Map<string, string>();
  for (const [name, value] of ctx.url.searchParams) {
    if (!known.includes(name)) {
      throw bad(`unknown query parameter "${name}"; known: ${known.join(", ") || "(none)"}`);
    }
    if (params.has(name)) throw bad(`query parameter "${name}" given twice`);
    if (value !== "") params.set(name, value);
  }
  return params;
}

export function checkNameParam(value: string | undefined, what: string): string | undefined {
  if (value !== undefined && !NAME_PATTERN.test(value)) {
    throw bad(
      `${what} must be a ${what} name (letters, digits, "_", ".", ":", "-"); got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

export function durationParam(value: string | undefined, fallback: string, what: string): number {
  try {
    return parseDuration(value ?? fallback, what);
  } catch (err) {
    throw bad((err as Error).message);
  }
}
