/**
 * Reading PostgreSQL plans in tests: a walk over a plan's nodes, and for the statements inside
 * the flow_claim function (test/flow/): a store with a backlog in queue "q", and auto_explain on
 * a connection of the test's own, which logs every nested statement's plan as a JSON NOTICE.
 */
import pg from "pg";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/index.js";
import type { NewJob } from "../../src/store/types.js";
import { dropSchema, freshSchemaName, postgresUrl } from "./postgres.js";

export type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/**
 * Inserts `count` pending no-op jobs into `queue` in batches of 5,000; job i's flow key is
 * `keyOf(i)` (none when undefined). Also the backlog of the flow benchmarks (bench/*-ab.ts).
 */
export async function insertBacklog(
  store: Pick<PostgresStore, "insertJobs">,
  queue: string,
  count: number,
  keyOf: (i: number) => string | undefined,
): Promise<void> {
  for (let i = 0; i < count; i += 5000) {
    const batch = Array.from(
      { length: Math.min(5000, count - i) },
      (_, j): NewJob => ({
        queue,
        name: "noop",
        payload: {},
        priority: 0,
        maxAttempts: 3,
        flowKey: keyOf(i + j),
      }),
    );
    await store.insertJobs(batch);
  }
}

/** Calls `visit` on every node of `plan`, the plan first. */
export function eachNode(plan: PlanNode, visit: (node: PlanNode) => void): void {
  visit(plan);
  for (const child of plan.Plans ?? []) eachNode(child, visit);
}

/** The stores and schemas a test file made, closed and dropped by `cleanUp` (its `after`). */
export class FlowPlanFixture {
  private readonly schemas: string[] = [];
  private readonly stores: PostgresStore[] = [];
  readonly url = postgresUrl();

  /** A migrated store whose queue "q" holds `jobs` pending jobs, keyed k0..k99 in turn when `keyed`. */
  async backlog(
    prefix: string,
    jobs: number,
    keyed: boolean,
  ): Promise<{ schema: string; store: PostgresStore }> {
    const schema = freshSchemaName(prefix);
    this.schemas.push(schema);
    const store = await openPostgresStore({ url: this.url, schema });
    this.stores.push(store);
    await store.migrate();
    await insertBacklog(store, "q", jobs, (i) => (keyed ? `k${i % 100}` : undefined));
    return { schema, store };
  }

  async cleanUp(): Promise<void> {
    for (const s of this.stores) await s.close();
    for (const s of this.schemas) await dropSchema(s);
  }
}

/** A connection of its own; `explain()` turns auto_explain on, `plans()` reads what it logged since. */
export class ExplainingClient {
  readonly client: pg.Client;
  private readonly notices: string[] = [];

  constructor(url: string) {
    this.client = new pg.Client(url);
    this.client.on("notice", (msg) => this.notices.push(msg.message ?? ""));
  }

  async connect(): Promise<void> {
    await this.client.connect();
  }

  async explain(): Promise<void> {
    await this.client.query("LOAD 'auto_explain'");
    await this.client.query(
      "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; " +
        "SET auto_explain.log_format = 'json'; SET auto_explain.log_level = 'notice'",
    );
  }

  /** Each logged statement's plan and text. */
  plans(): { plan: PlanNode; query: string }[] {
    return this.notices.map((text) => {
      const { Plan, "Query Text": query } = JSON.parse(text.slice(text.indexOf("{"))) as {
        Plan: PlanNode;
        "Query Text": string;
      };
      return { plan: Plan, query };
    });
  }

  /** `problems` of every logged plan, each named with the start of its statement. */
  problems(problems: (plan: PlanNode) => string[]): string[] {
    const found = new Set<string>();
    for (const { plan, query } of this.plans())
      for (const p of problems(plan)) found.add(`${p} in: ${query.trim().slice(0, 60)}`);
    return [...found];
  }

  end(): Promise<void> {
    return this.client.end();
  }
}

/**
 * Claims through the schema's flow_claim function on `client` (a claim of `claim` jobs of queue
 * "q" by worker "w", with a global limit and a per-key limit, null for none), first finishing
 * the jobs the previous call claimed — as a worker that reads ahead does. Each call asserts the
 * claim took its full batch.
 */
export function flowClaimCycle(
  client: pg.Client,
  store: Pick<PostgresStore, "finishJobs">,
  schema: string,
  claim: number,
  limits: { global: number | null; perKey: number | null },
): () => Promise<void> {
  let running: { id: string; lease_token: number }[] = [];
  return async () => {
    const { rows } = await client.query(
      `SELECT id, lease_token FROM "${schema}".flow_claim($1, 'q', $2, 'w', 60000, $3, $4, NULL, NULL, NULL, NULL, NULL)`,
      [`cycle:${schema}`, claim, limits.global, limits.perKey],
    );
    await store.finishJobs(
      running.map((j) => ({
        id: String(j.id),
        leaseToken: j.lease_token,
        kind: "completed" as const,
        worker: "w",
      })),
    );
    running = rows.filter((r) => r.id !== null);
    if (running.length !== claim)
      throw new Error(`a claim took ${running.length} jobs, not its full batch of ${claim}`);
  };
}
