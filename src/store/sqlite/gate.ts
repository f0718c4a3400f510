/**
 * Keeps one connection's operations out of a transaction that spans an await.
 *
 * better-sqlite3 is synchronous: an operation that runs start to finish without yielding can
 * never interleave with another. completeInTransaction cannot work that way — it awaits the
 * handler's `fn` while its BEGIN IMMEDIATE stays open on the connection — so it holds this
 * gate, and every other operation of the store waits for the gate to open before it runs.
 * Calls made from inside `fn` (its async context, tracked with AsyncLocalStorage) pass: they
 * belong to that transaction, and waiting for it would deadlock.
 *
 * Callers check `blocked` and act in the same synchronous step; after awaiting `released`
 * they check again (another holder may have taken the gate in between).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { ErrandError } from "../../errors.js";

export class Gate {
  private until: Promise<void> | null = null;
  private token: object | null = null;
  private readonly context = new AsyncLocalStorage<object>();

  get held(): boolean {
    return this.until !== null;
  }

  /** The caller runs inside the holder's `fn`. */
  get inside(): boolean {
    return this.token !== null && this.context.getStore() === this.token;
  }

  /** Held, and the caller is not inside: it must wait. */
  get blocked(): boolean {
    return this.until !== null && !this.inside;
  }

  /** Resolves when the current holder lets go. */
  get released(): Promise<void> {
    return this.until ?? Promise.resolve();
  }

  /**
   * Waits for the gate, then holds it while `body` runs; `body` gets `within`, which runs a
   * function in the async context that passes the gate.
   */
  async hold<T>(body: (within: <R>(fn: () => R) => R) => Promise<T>): Promise<T> {
    if (this.inside)
      throw new ErrandError("ERR_NESTED_TRANSACTION", "a store transaction cannot be nested in itself");
    while (this.until !== null) await this.until;
    let open = (): void => {};
    this.until = new Promise<void>((resolve) => {
      open = resolve;
    });
    const token = {};
    this.token = token;
    try {
      return await body((fn) => this.context.run(token, fn));
    } finally {
      this.until = null;
      this.token = null;
      open();
    }
  }
}
