/**
 * The scheduler: schedules defined in code, synced to the store, and fired from the store's rows.
 *
 * Firing is safe with any number of schedulers at once (every worker runs one about every
 * second; every HTTP tick runs one): for each due schedule it works out the due slots from the
 * row's next_run_at, enqueues each slot with the idempotency key `cron:<name>:<slot ISO>`, and
 * only then moves next_run_at on with a compare-and-set. Whoever loses the race enqueued the same
 * keys, which the unique (queue, key) index turned into the existing jobs: a slot fires once.
 * A crash between the enqueue and the advance leaves next_run_at where it was, so the next
 * scheduler enqueues the same slots again — and again the keys make that a no-op.
 *
 * Syncing ("the set in code is the truth"): the schedules an errand defines with
 * `errand.schedule()` replace the store's code-defined schedules when a worker starts or a tick
 * first fires in this process (and on `errand.syncSchedules()`). Schedules added with
 * `errand schedule add` (source "cli") are kept. A process that defines no schedules does not
 * sync on its own — a worker started for other queues must not delete another service's
 * schedules; call `errand.syncSchedules()` explicitly to clear them.
 */
import { ValidationError } from "../errors.js";
import { flowKeyOf } from "../flow.js";
import { type AnyJobDefinition, NAME_PATTERN } from "../job.js";
import { knownFields, onlyKnownFields } from "../known-fields.js";
import type { Logger } from "../logger.js";
import { DEFAULT_PAYLOAD_LIMIT, normalizePayload } from "../payload.js";
import type { MissedPolicy, ScheduleRecord, Store } from "../store/types.js";
import { CronExpression } from "./cron.js";
import { dueSlots } from "./due-slots.js";
import {
  checkSchedule,
  type FiredSlot,
  type FireResult,
  type ScheduleByHand,
  type ScheduleOptions,
  scheduleRow,
  staleStoredKey,
} from "./row.js";

export type { FiredSlot, FireResult, ScheduleByHand, ScheduleOptions } from "./row.js";
export { checkSchedule } from "./row.js";

/**
 * What the scheduler needs from its host (the Errand facade): the store operations on schedules,
 * the job registry, and enqueue. A port, so the scheduler does not import the facade that owns it.
 */
export interface SchedulerHost {
  readonly store: Pick<
    Store,
    | "now"
    | "syncSchedules"
    | "dueSchedules"
    | "advanceSchedule"
    | "insertJobs"
    | "upsertSchedule"
    | "listSchedules"
    | "removeSchedule"
    | "setSchedulePaused"
  >;
  readonly log: Logger;
  readonly jobNames: string[];
  job(name: string): AnyJobDefinition;
  register(def: AnyJobDefinition): unknown;
  enqueueMany(
    job: string,
    items: { payload: unknown; key: string; priority: number; runAt: Date }[],
  ): Promise<Array<{ id: string; created: boolean }>>;
}

const SCHEDULE_FIELDS = knownFields("timezone", "missed", "priority");
const BY_HAND_FIELDS = knownFields("name", "cron", "jobName", "queue", "payload", ...SCHEDULE_FIELDS);

export { MAX_SLOTS_PER_FIRE } from "./due-slots.js";

/** The idempotency key of a slot's job (docs/semantics.md, Schedules). */
export function slotKey(name: string, slot: Date): string {
  return `cron:${name}:${slot.toISOString()}`;
}

interface Definition {
  name: string;
  cron: CronExpression;
  job: AnyJobDefinition;
  payload: unknown;
  priority: number;
  /** From the fixed payload, computed once here so schedulers that do not know the job can use it. */
  flowKey: string | null;
  missed: MissedPolicy;
}

export class Scheduler {
  private readonly definitions = new Map<string, Definition>();
  /** Set by define(): the next fire syncs first. */
  private syncNeeded = false;
  private syncing: Promise<void> | null = null;
  private readonly reportedBroken = new Set<string>();
  /** Schedules already warned about for a missing or stale flow key (once per schedule). */
  private readonly reportedKeyless = new Set<string>();

  constructor(private readonly errand: SchedulerHost) {}

  /** Names of the schedules defined in code. */
  get names(): string[] {
    return [...this.definitions.keys()].sort();
  }

  /** Defines a schedule in code. Everything is checked now; bad input is a ValidationError. */
  define(
    name: string,
    cron: string,
    job: AnyJobDefinition | string,
    payload: unknown,
    options: ScheduleOptions = {},
  ): void {
    const checked = checkSchedule(name, cron, options);
    onlyKnownFields(options, SCHEDULE_FIELDS, `schedule "${checked.name}" options`);
    if (this.definitions.has(checked.name))
      throw new ValidationError(`schedule "${checked.name}" is defined twice`);
    const def = typeof job === "string" ? this.errand.job(job) : job;
    if (!def || typeof def !== "object" || typeof def.name !== "string" || !("schema" in def)) {
      throw new ValidationError(
        `schedule "${checked.name}": job must be a job definition (from defineJob) or a registered job name`,
      );
    }
    this.errand.register(def);
    const normalized = normalizePayload(
      payload,
      DEFAULT_PAYLOAD_LIMIT,
      `payload of schedule "${checked.name}"`,
    );
    const result = def.schema["~standard"].validate(normalized);
    // A synchronous schema is checked now; an async one when the first slot is enqueued.
    if (!(result instanceof Promise) && result.issues) {
      const detail = result.issues.map((i) => i.message).join("; ");
      throw new ValidationError(
        `payload of schedule "${checked.name}" does not match the schema of job "${def.name}": ${detail}`,
      );
    }
    if (result instanceof Promise) result.catch(() => {});
    this.definitions.set(checked.name, {
      name: checked.name,
      cron: checked.cron,
      job: def,
      payload: normalized,
      priority: checked.priority ?? def.priority,
      flowKey: flowKeyOf(def.flow, normalized, `payload of schedule "${checked.name}"`, def.name),
      missed: checked.missed,
    });
    this.syncNeeded = true;
  }

  /** Writes the code-defined schedules to the store, replacing its other code-defined ones. */
  async sync(): Promise<void> {
    const now = (await this.errand.store.now()).getTime();
    const rows = [...this.definitions.values()].map((d) =>
      scheduleRow(
        d,
        {
          jobName: d.job.name,
          queue: d.job.queue,
          payload: d.payload,
          priority: d.priority,
          flowKey: d.flowKey,
        },
        "code",
        now,
      ),
    );
    await this.errand.store.syncSchedules(rows);
    this.syncNeeded = false;
  }

  /** Every schedule in the store (from code and by hand). */
  list(): Promise<ScheduleRecord[]> {
    return this.errand.store.listSchedules();
  }

  /**
   * Adds (or replaces) a schedule by hand (source "cli"); it stays until removed. The job need not
   * be known to this process (its workers check the payload when a slot runs); when it is, the
   * row gets the flow key of its payload, else none (docs/semantics.md, Flow control). Returns the
   * stored row.
   */
  async addByHand(input: ScheduleByHand): Promise<ScheduleRecord> {
    const checked = checkSchedule(input.name, input.cron, input);
    onlyKnownFields(input, BY_HAND_FIELDS, `schedule "${checked.name}"`);
    if (typeof input.queue !== "string" || !NAME_PATTERN.test(input.queue))
      throw new ValidationError(
        `schedule "${checked.name}": invalid queue name ${JSON.stringify(input.queue)}`,
      );
    const payload = normalizePayload(
      input.payload,
      DEFAULT_PAYLOAD_LIMIT,
      `payload of schedule "${checked.name}"`,
    );
    const what = `payload of schedule "${checked.name}"`;
    const def = this.errand.jobNames.includes(input.jobName) ? this.errand.job(input.jobName) : null;
    const flowKey = def ? flowKeyOf(def.flow, payload, what, def.name) : null;
    const now = (await this.errand.store.now()).getTime();
    const job = {
      jobName: input.jobName,
      queue: input.queue,
      payload,
      priority: checked.priority ?? 0,
      flowKey,
    };
    await this.errand.store.upsertSchedule(scheduleRow(checked, job, "cli", now));
    const stored = (await this.list()).find((s) => s.name === checked.name);
    if (!stored) throw new Error(`schedule "${checked.name}" was not stored`);
    return stored;
  }

  /** Removes a schedule from the store; answers the removed row, or null when there was none. */
  async remove(name: string): Promise<ScheduleRecord | null> {
    const row = (await this.list()).find((s) => s.name === name);
    if (!row || !(await this.errand.store.removeSchedule(name))) return null;
    return row;
  }

  /**
   * Pauses or resumes a schedule in the store (every scheduler obeys). A paused schedule does not
   * fire; resumed, it is due at once if its next slot passed meanwhile and fires by its missed
   * policy, as after downtime (the latest missed slot, or all of them), each slot once.
   */
  async setPaused(name: string, paused: boolean): Promise<ScheduleRecord> {
    const row = await this.errand.store.setSchedulePaused(name, paused);
    if (!row) throw await this.unknown(name);
    return row;
  }

  /**
   * Enqueues the schedule's job now, paused or not, with the key `cron:<name>:now:<store time>`
   * (never a slot's key, so its slots fire as they would have). Its next slot does not move.
   */
  async runNow(name: string): Promise<FiredSlot> {
    const row = (await this.list()).find((s) => s.name === name);
    if (!row) throw await this.unknown(name);
    const now = await this.errand.store.now();
    const [fired] = await this.enqueueSlots(row, [now], (slot) => `cron:${name}:now:${slot.toISOString()}`);
    return fired;
  }

  private async unknown(name: string): Promise<ValidationError> {
    const known = (await this.list()).map((s) => s.name);
    return new ValidationError(
      `unknown schedule ${JSON.stringify(name)}; known: ${known.join(", ") || "(no schedules)"}`,
    );
  }

  private ensureSynced(): Promise<void> {
    if (!this.syncNeeded) return Promise.resolve();
    this.syncing ??= this.sync().finally(() => {
      this.syncing = null;
    });
    return this.syncing;
  }

  /**
   * Fires every due schedule: enqueues its due slots (the latest, or all — at most
   * MAX_SLOTS_PER_FIRE per call) and advances it. Safe to run anywhere, any number of times at once.
   */
  async fire(): Promise<FireResult> {
    await this.ensureSynced();
    const { store, log } = this.errand;
    const due = await store.dueSchedules();
    const result: FireResult = { fired: 0, slots: [] };
    if (due.length === 0) return result;
    const now = (await store.now()).getTime();
    let firstError: unknown = null;
    for (const schedule of due) {
      try {
        const slots = await this.fireOne(schedule, now);
        result.slots.push(...slots);
        result.fired += slots.filter((s) => s.created).length;
      } catch (err) {
        log.error(
          { err, schedule: schedule.name },
          "firing a schedule failed; it stays due and is tried again",
        );
        firstError ??= err;
      }
    }
    if (firstError !== null && result.slots.length === 0) throw firstError;
    return result;
  }

  private async fireOne(schedule: ScheduleRecord, now: number): Promise<FiredSlot[]> {
    const { store, log } = this.errand;
    let cron: CronExpression;
    try {
      cron = CronExpression.parse(schedule.cron, schedule.timezone, `schedule "${schedule.name}"`);
    } catch (err) {
      // A row written by something else that we cannot read: say so once, leave it alone.
      if (!this.reportedBroken.has(schedule.name))
        log.error({ err, schedule: schedule.name }, "schedule cannot be fired");
      this.reportedBroken.add(schedule.name);
      return [];
    }
    const expected = schedule.nextRunAt;
    const { slots, nextRunAt, capped, skipped } = dueSlots(cron, schedule.missed, expected, now);
    if (capped)
      log.warn({ schedule: schedule.name, fired: slots.length }, "many missed slots: firing them in batches");
    if (skipped) {
      log.info(
        { schedule: schedule.name, slot: slots[0].toISOString(), missedSince: expected.toISOString() },
        "missed slots skipped: firing the latest only (missed: latest)",
      );
    }
    const fired = await this.enqueueSlots(schedule, slots);
    const advanced = await store.advanceSchedule({
      name: schedule.name,
      expectedNextRunAt: expected,
      nextRunAt,
      lastSlot: slots.length > 0 ? slots[slots.length - 1] : null,
    });
    for (const f of fired) {
      if (f.created)
        log.info({ schedule: f.schedule, slot: f.slot.toISOString(), jobId: f.jobId }, "schedule fired");
    }
    if (!advanced) log.debug({ schedule: schedule.name }, "another scheduler advanced this schedule first");
    return fired;
  }

  /** Warns once per schedule whose stored flow key is missing or stale (row.ts staleStoredKey). */
  private checkStoredKey(schedule: ScheduleRecord): void {
    if (this.reportedKeyless.has(schedule.name)) return;
    const def = this.errand.job(schedule.jobName);
    const key = staleStoredKey(def, schedule);
    if (key === undefined) return;
    this.reportedKeyless.add(schedule.name);
    this.errand.log.warn(
      { schedule: schedule.name, job: def.name, storedFlowKey: schedule.flowKey, flowKey: key },
      "schedule's stored flow key is missing or stale: a scheduler that does not know this job enqueues its slots outside the per-key limits; add the schedule again from a process that knows the job (errand schedule add --jobs)",
    );
  }

  /** `keyOf` given (run now): a rejected payload is thrown to the caller instead of logged. */
  private async enqueueSlots(
    schedule: ScheduleRecord,
    slots: Date[],
    keyOf?: (slot: Date) => string,
  ): Promise<FiredSlot[]> {
    if (slots.length === 0) return [];
    const items = slots.map((slot) => ({
      payload: schedule.payload,
      key: keyOf ? keyOf(slot) : slotKey(schedule.name, slot),
      priority: schedule.priority,
      runAt: slot,
    }));
    try {
      if (this.errand.jobNames.includes(schedule.jobName)) {
        this.checkStoredKey(schedule);
        const jobs = await this.errand.enqueueMany(schedule.jobName, items);
        return jobs.map((job, i) => ({
          schedule: schedule.name,
          slot: slots[i],
          jobId: job.id,
          created: job.created,
        }));
      }
      // A job this process does not know (a schedule added by hand for another service):
      // enqueue it as stored, under the flow key stored with it (computed by a process that knew
      // the job); the workers that know the job validate and run it.
      const results = await this.errand.store.insertJobs(
        items.map((item) => ({
          ...item,
          queue: schedule.queue,
          name: schedule.jobName,
          maxAttempts: 3,
          flowKey: schedule.flowKey,
        })),
      );
      return results.map((r, i) => ({
        schedule: schedule.name,
        slot: slots[i],
        jobId: r.job.id,
        created: r.created,
      }));
    } catch (err) {
      if (!(err instanceof ValidationError) || keyOf) throw err;
      // The stored payload no longer fits the job's schema: retrying every second cannot fix it.
      this.errand.log.error(
        { err, schedule: schedule.name, slots: slots.map((s) => s.toISOString()) },
        "schedule's payload was rejected; these slots are skipped — fix the schedule",
      );
      return [];
    }
  }
}
