/**
 * Transactional enqueue with Prisma on PostgreSQL (an interactive transaction):
 *
 *   await prisma.$transaction(async (tx) => {
 *     const user = await tx.user.create({ data: { email } });
 *     await errand.enqueue(sendEmail, { userId: user.id }, { tx: fromPrisma(tx) });
 *   });
 */
import type { TxHandle } from "../job.js";
import { notATransaction, OrmTransaction } from "./transaction.js";

interface PrismaTransaction {
  $queryRawUnsafe?: (text: string, ...values: unknown[]) => Promise<unknown>;
  $disconnect?: unknown;
}

/**
 * errand's statements through the transaction client's `$queryRawUnsafe`, the one raw API
 * Prisma runs inside an interactive transaction. Its values are Prisma's (bigint columns as
 * BigInt); errand's PostgreSQL store reads every scalar defensively.
 */
export function fromPrisma(tx: object): TxHandle {
  const t = tx as PrismaTransaction;
  // The transaction client is the PrismaClient without $connect and $disconnect: given the client
  // itself, each statement would run on its own, outside the application's transaction.
  if (typeof t?.$queryRawUnsafe !== "function" || typeof t.$disconnect === "function") {
    throw notATransaction(
      "fromPrisma",
      "the transaction client Prisma passes to prisma.$transaction(async (tx) => …) (not the PrismaClient itself)",
      tx,
    );
  }
  const queryRaw = t.$queryRawUnsafe.bind(t);
  return new OrmTransaction("Prisma", async ({ text, values = [] }) => {
    const rows = await queryRaw(text, ...values);
    return { rows: Array.isArray(rows) ? rows : [] };
  });
}
