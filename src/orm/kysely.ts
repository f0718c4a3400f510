/**
 * Transactional enqueue with Kysely on PostgreSQL:
 *
 *   await db.transaction().execute(async (trx) => {
 *     const user = await trx.insertInto("users").values({ email }).returning("id").executeTakeFirstOrThrow();
 *     await errand.enqueue(sendEmail, { userId: user.id }, { tx: fromKysely(trx) });
 *   });
 *
 * On SQLite, Kysely's transaction is a BEGIN on the better-sqlite3 Database given to its
 * SqliteDialect: pass that Database as `tx` instead (errand joins it synchronously).
 */
import type { TxHandle } from "../job.js";
import { notATransaction, OrmTransaction } from "./transaction.js";

interface KyselyTransaction {
  isTransaction?: unknown;
  withoutPlugins?: () => KyselyTransaction;
  executeQuery?: (query: object) => Promise<{ rows: Record<string, unknown>[] }>;
}

/**
 * errand's statements as Kysely compiled queries on the transaction's connection, without the
 * application's plugins: CamelCasePlugin would rename the columns errand reads.
 */
export function fromKysely(trx: object): TxHandle {
  const t = trx as KyselyTransaction;
  if (t?.isTransaction !== true || typeof t.executeQuery !== "function") {
    throw notATransaction(
      "fromKysely",
      "the transaction Kysely passes to db.transaction().execute(async (trx) => …) (not the Kysely instance itself)",
      trx,
    );
  }
  const plain = typeof t.withoutPlugins === "function" ? t.withoutPlugins() : t;
  return new OrmTransaction("Kysely", async ({ text, values = [] }) => {
    // A compiled query as CompiledQuery.raw(text, values) makes it, without importing Kysely.
    const query = {
      sql: text,
      parameters: values,
      query: { kind: "RawNode", sqlFragments: [text], parameters: [] },
      queryId: { queryId: "errand" },
    };
    const { rows } = await (plain.executeQuery as NonNullable<KyselyTransaction["executeQuery"]>)(query);
    return { rows };
  });
}
