/**
 * A handler's own store calls through ctx — ctx.once's ledger, ctx.progress,
 * ctx.completeInTransaction — when the store cannot take them just then: a lock held past
 * SQLite's busy_timeout (a backup, an operator's sqlite3 shell), a full disk, PostgreSQL's
 * connection limit or a lost connection (completer.ts isStoreBusy, isDiskFull). The call is
 * tried again, as outcome writes are, instead of failing the attempt: with `maxAttempts: 1` a
 * job whose ledger entry met a lock went to the dead-letter queue after its effect had run, and
 * with more attempts the effect ran twice (test/reliability/ctx-store-busy.test.ts).
 *
 * Until the job is aborted (its timeout, a lost lease — the heartbeat needs the store too —,
 * cancel or a hard stop), or `tries` calls: an error the store gives for the call itself (a
 * statement too slow for its timeout, say) must not hold the job for ever.
 */
import type { Logger } from "../logger.js";
import type { JobAbort } from "./abort.js";
import { isDiskFull, isStoreBusy } from "./completer.js";

const FIRST_WAIT_MS = 100;
const LONGEST_WAIT_MS = 2_000;

export async function waitingForStore<T>(
  call: () => Promise<T>,
  job: { readonly abortReason: JobAbort | undefined; readonly workerLog: Logger },
  what: string,
  tries = Number.POSITIVE_INFINITY,
  /** False for an error that is not the store's, though it looks busy (one the caller's own code threw). */
  storeOwns: () => boolean = () => true,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!(isStoreBusy(err) || isDiskFull(err)) || !storeOwns() || attempt >= tries || job.abortReason)
        throw err;
      const waitMs = Math.min(LONGEST_WAIT_MS, FIRST_WAIT_MS * 2 ** (attempt - 1));
      if (attempt === 1)
        job.workerLog.warn({ err, retryInMs: waitMs }, `${what}: the store is busy; waiting for it`);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      if (job.abortReason) throw err;
    }
  }
}
