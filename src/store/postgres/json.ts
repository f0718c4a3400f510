/** Values going into jsonb columns (payloads, results, progress, ledger values, schedules). */
import { ValidationError } from "../../errors.js";

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** JSON text for a jsonb parameter; `what` names the value in the error when it cannot be stored. */
export function serialize(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new ValidationError(`${what} is not JSON-serializable: ${errorMessage(err)}`);
  }
  text ??= "null";
  // jsonb cannot hold the NUL character: fail with a clear message instead of a driver error.
  // A real NUL is JSON.stringify's escape \u0000 after an even number of backslashes; after an
  // odd number it is the text "\u0000" (a backslash, then "u0000"), which jsonb stores fine.
  if (/(?:^|[^\\])(?:\\\\)*\\u0000/.test(text))
    throw new ValidationError(
      `${what} contains a NUL character (\\u0000), which PostgreSQL jsonb cannot store`,
    );
  return text;
}
