/**
 * The model test's commands for what producers and workers do: insert, claim, extend a lease,
 * finish with every outcome kind, report progress, rescue expired leases.
 */
import assert from "node:assert/strict";
import type { Outcome, OutcomeKind } from "../../../src/store/types.js";
import {
  applyOutcome,
  Cmd,
  expectedClaim,
  HOUR,
  held,
  type LeaseRef,
  LONG_LEASE,
  leaseString,
  type Model,
  type Queue,
  type Real,
  resolveLease,
  SHORT_LEASE,
  SHORT_WAIT,
} from "./reference.js";

interface InsertSpec {
  queue: Queue;
  priority: number;
  maxAttempts: number;
  key: string | null;
  delayed: boolean;
}

/** One insertJobs call of 1–3 jobs: results in input order, a key repeated in the batch creates one job. */
export class InsertCmd extends Cmd {
  constructor(readonly specs: InsertSpec[]) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const t0 = (await r.store.now()).getTime();
    const results = await r.store.insertJobs(
      this.specs.map((spec, i) => ({
        queue: spec.queue,
        name: "model",
        payload: { n: m.jobs.length + i, text: "módel ✓" },
        priority: spec.priority,
        maxAttempts: spec.maxAttempts,
        key: spec.key,
        delayMs: spec.delayed ? HOUR : 0,
      })),
    );
    const t1 = (await r.store.now()).getTime();
    assert.equal(results.length, this.specs.length, `${this}: one result per job`);
    for (const [i, spec] of this.specs.entries()) {
      const res = results[i];
      const existing = m.jobs.find(
        (j) => !j.deleted && j.queue === spec.queue && spec.key !== null && j.key === spec.key,
      );
      if (existing) {
        assert.equal(res.created, false, `${this} [${i}]: a duplicate key returns the existing job`);
        assert.equal(res.job.id, r.ids[existing.seq], `${this} [${i}]: the existing job (#${existing.seq})`);
        continue;
      }
      assert.equal(res.created, true, `${this} [${i}]: created`);
      assert.ok(!r.ids.includes(res.job.id), `${this} [${i}]: a new id, never reused (${res.job.id})`);
      const d = spec.delayed ? HOUR : 0;
      r.ids.push(res.job.id);
      m.jobs.push({
        seq: m.jobs.length,
        queue: spec.queue,
        priority: spec.priority,
        maxAttempts: spec.maxAttempts,
        key: spec.key,
        state: "pending",
        attempt: 0,
        history: 0,
        due: !spec.delayed,
        runAt: 0,
        runAtWindow: [t0 + d, t1 + d],
        gen: 0,
        cancelRequested: false,
        expired: false,
        deleted: false,
      });
    }
  }
  toString(): string {
    const one = (s: InsertSpec) =>
      `{${s.queue} prio ${s.priority} max ${s.maxAttempts}${s.key ? ` key ${s.key}` : ""}${s.delayed ? " +1h" : ""}}`;
    return `insert(${this.specs.map(one).join(", ")})`;
  }
}

export class ClaimCmd extends Cmd {
  constructor(
    readonly queue: Queue,
    readonly limit: number,
    readonly short: boolean,
  ) {
    super();
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const expected = expectedClaim(m, this.queue, this.limit);
    const claimed = await r.store.claimJobs({
      queue: this.queue,
      limit: this.limit,
      workerId: "model-worker",
      leaseMs: this.short ? SHORT_LEASE : LONG_LEASE,
    });
    assert.deepEqual(
      claimed.map((c) => ({
        id: c.id,
        attempt: c.attempt,
        maxAttempts: c.maxAttempts,
        priority: c.priority,
      })),
      expected.map((j) => ({
        id: r.ids[j.seq],
        attempt: j.attempt + 1,
        maxAttempts: j.maxAttempts,
        priority: j.priority,
      })),
      `${this}: claimed jobs, in order (model seqs ${expected.map((j) => j.seq).join(",") || "none"})`,
    );
    for (const [i, job] of expected.entries()) {
      job.state = "running";
      job.attempt += 1;
      job.gen += 1;
      job.expired = false;
      job.cancelRequested = false;
      m.leases.push({ seq: job.seq, gen: job.gen });
      r.leases.push({ id: claimed[i].id, leaseToken: claimed[i].leaseToken });
    }
    if (this.short && expected.length > 0) {
      r.clock.advance(SHORT_WAIT);
      for (const job of expected) job.expired = true;
    }
  }
  toString(): string {
    return `claim(${this.queue}, limit ${this.limit}, ${this.short ? "short lease" : "long lease"})`;
  }
}

/** A command acting through one of the leases handed out so far (there must be one). */
abstract class LeaseCmd extends Cmd {
  constructor(readonly lease: LeaseRef) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.leases.length > 0;
  }
}

export class ExtendCmd extends LeaseCmd {
  constructor(
    lease: LeaseRef,
    readonly short: boolean,
  ) {
    super(lease);
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const i = resolveLease(m, this.lease);
    const job = held(m, m.leases[i]);
    const [status] = await r.store.extendLeases([r.leases[i]], this.short ? SHORT_LEASE : LONG_LEASE);
    assert.equal(status.id, r.leases[i].id);
    assert.equal(status.held, job !== undefined, `${this}: held (lease ${i} of job #${m.leases[i].seq})`);
    if (!job) return;
    assert.equal(status.cancelRequested, job.cancelRequested, `${this}: cancelRequested`);
    job.expired = false;
    if (this.short) {
      r.clock.advance(SHORT_WAIT);
      job.expired = true;
    }
  }
  toString(): string {
    return `extend(${leaseString(this.lease)}, ${this.short ? "short → expires" : "long"})`;
  }
}

export class FinishCmd extends LeaseCmd {
  constructor(
    lease: LeaseRef,
    readonly kind: OutcomeKind,
    readonly delayed: boolean,
    readonly twice: boolean,
  ) {
    super(lease);
  }
  protected async step(m: Model, r: Real): Promise<void> {
    const i = resolveLease(m, this.lease);
    const job = held(m, m.leases[i]);
    const outcome: Outcome = {
      ...r.leases[i],
      kind: this.kind,
      worker: "model-worker",
      delayMs: this.delayed ? HOUR : 0,
      ...(this.kind === "completed" ? { result: { ok: i } } : {}),
      ...(this.kind === "retry" || this.kind === "failed"
        ? { error: { message: `boom ${i}`, kind: this.kind === "retry" ? "retryable" : "permanent" } }
        : {}),
    };
    const batch: Outcome[] = this.twice ? [outcome, { ...outcome, kind: "completed" }] : [outcome];
    const t0 = (await r.store.now()).getTime();
    const applied = await r.store.finishJobs(batch);
    const t1 = (await r.store.now()).getTime();
    const expected = this.twice ? [job !== undefined, false] : [job !== undefined];
    assert.deepEqual(applied, expected, `${this}: applied (lease ${i} of job #${m.leases[i].seq})`);
    if (job) applyOutcome(job, this.kind, this.delayed, t0, t1);
  }
  toString(): string {
    return `finish(${leaseString(this.lease)}, ${this.kind}${this.delayed ? ", +1h" : ""}${this.twice ? ", twice" : ""})`;
  }
}

export class ProgressCmd extends LeaseCmd {
  protected async step(m: Model, r: Real): Promise<void> {
    const i = resolveLease(m, this.lease);
    const ok = await r.store.setProgress(r.leases[i], { fraction: 0.5, message: "half" });
    assert.equal(ok, held(m, m.leases[i]) !== undefined, `${this}: applied`);
  }
  toString(): string {
    return `setProgress(${leaseString(this.lease)})`;
  }
}

export class RescueCmd extends Cmd {
  protected async step(m: Model, r: Real): Promise<void> {
    const t0 = (await r.store.now()).getTime();
    const rescued = await r.store.rescueExpiredLeases();
    const t1 = (await r.store.now()).getTime();
    const expected: Array<{ id: string; state: string; attempt: number }> = [];
    for (const job of m.jobs) {
      if (job.deleted || job.state !== "running" || !job.expired) continue;
      job.history += 1;
      job.expired = false;
      job.state = job.cancelRequested ? "cancelled" : job.attempt >= job.maxAttempts ? "failed" : "pending";
      job.cancelRequested = false;
      if (job.state === "pending") {
        job.due = true;
        job.runAtWindow = [t0, t1];
      }
      expected.push({ id: r.ids[job.seq], state: job.state, attempt: job.attempt });
    }
    const byId = (x: { id: string }, y: { id: string }) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
    assert.deepEqual(
      rescued.map((x) => ({ id: x.id, state: x.state, attempt: x.attempt })).sort(byId),
      expected.sort(byId),
      `${this}: rescued jobs`,
    );
  }
  toString(): string {
    return "rescue()";
  }
}
