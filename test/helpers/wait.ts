/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 10_000,
  everyMs = 10,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
