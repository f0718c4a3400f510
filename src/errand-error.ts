/**
 * The base error classes, in a file that imports nothing: duration.ts throws ValidationError, and
 * errors.ts (RetryableError's `retryAfter`) parses durations, so the classes cannot live there
 * without an import cycle. Import them from errors.ts, which re-exports them.
 */
/** Every error errand throws on purpose has a stable `code`. */
export class ErrandError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ErrandError";
    this.code = code;
  }
}

/** Bad input from a caller: invalid payload, unknown job, out-of-range option. Nothing was stored. */
export class ValidationError extends ErrandError {
  readonly issues?: ReadonlyArray<{ message: string; path?: ReadonlyArray<unknown> }>;
  constructor(message: string, issues?: ReadonlyArray<{ message: string; path?: ReadonlyArray<unknown> }>) {
    super("ERR_VALIDATION", message);
    this.name = "ValidationError";
    this.issues = issues;
  }
}
