/**
 * The jobs of the demo (the seed scenario): `send-email` on the `emails` queue and
 * `build-report` on the `reports` queue. They live under src/ so the built CLI's `errand demo`
 * runs from dist/ with no dev dependency; examples/demo/jobs.ts writes the same jobs as an application would, with zod.
 *
 * The schemas are a tiny Standard Schema validator (`objectSchema`): errand accepts any
 * Standard Schema, and zod is only a dev dependency of errand.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { RetryableError } from "../errors.js";
import type { JobContext } from "../job.js";
import { defineJob } from "../job.js";

type FieldType = "string" | "number" | "integer" | "boolean";
type FieldValue<F extends FieldType> = F extends "string" ? string : F extends "boolean" ? boolean : number;
export type ObjectShape = Record<string, FieldType>;
export type InferShape<S extends ObjectShape> = { [K in keyof S]: FieldValue<S[K]> };

/** A Standard Schema validator for a flat object whose fields are all required. */
export function objectSchema<S extends ObjectShape>(shape: S): StandardSchemaV1<InferShape<S>> {
  return {
    "~standard": {
      version: 1,
      vendor: "errand-demo",
      validate(value: unknown): StandardSchemaV1.Result<InferShape<S>> {
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
          return { issues: [{ message: `expected an object, got ${describe(value)}` }] };
        }
        const input = value as Record<string, unknown>;
        const issues: StandardSchemaV1.Issue[] = [];
        for (const [key, type] of Object.entries(shape)) {
          const field = input[key];
          const ok =
            type === "integer"
              ? Number.isInteger(field)
              : type === "number"
                ? Number.isFinite(field)
                : typeof field === type;
          if (!ok)
            issues.push({
              message: `expected ${type === "integer" ? "an" : "a"} ${type}, got ${describe(field)}`,
              path: [key],
            });
        }
        return issues.length > 0 ? { issues } : { value: input as InferShape<S> };
      },
    },
  };
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)}`;
}

export const emailSchema = objectSchema({ to: "string", subject: "string" });
/** `failAttempts`: how many first attempts fail with a transient error (the demo's simulated outage). */
export const reportSchema = objectSchema({ report: "string", failAttempts: "integer" });

export type EmailPayload = InferShape<{ to: "string"; subject: "string" }>;
export type ReportPayload = InferShape<{ report: "string"; failAttempts: "integer" }>;

/** What the handlers report while they run (the demo prints it as live progress). */
export interface DemoEvent {
  type: "started" | "progress" | "failing";
  job: JobContext["job"];
  attempt: number;
  message?: string;
  fraction?: number;
}

export interface DemoJobOptions {
  /** Called as handlers start and progress; default: a log line through ctx.log. */
  observe?: (event: DemoEvent, ctx: JobContext) => void;
  /** Any Standard Schema validators for the two payloads (examples/ passes zod ones). */
  schemas?: { email?: StandardSchemaV1<EmailPayload>; report?: StandardSchemaV1<ReportPayload> };
  /** How long a simulated e-mail send / report step takes. Default 150 ms / 100 ms. */
  emailMs?: number;
  reportStepMs?: number;
}

const logEvent = (event: DemoEvent, ctx: JobContext): void => {
  if (event.type === "failing") ctx.log.warn(event.message ?? "failing");
  else
    ctx.log.info(
      { fraction: event.fraction },
      event.type === "started" ? "job started" : (event.message ?? "progress"),
    );
};

/** Builds the demo's two job definitions. */
export function makeDemoJobs(options: DemoJobOptions = {}) {
  const observe = options.observe ?? logEvent;
  const emailMs = options.emailMs ?? 150;
  const stepMs = options.reportStepMs ?? 100;

  const sendEmail = defineJob({
    name: "send-email",
    queue: "emails",
    schema: options.schemas?.email ?? emailSchema,
    maxAttempts: 3,
    backoff: ["200ms"],
    async run(payload, ctx) {
      observe({ type: "started", job: ctx.job, attempt: ctx.attempt }, ctx);
      // The ledger: a retry of this job would not send the same e-mail twice.
      const receipt = await ctx.once(`demo-email:${ctx.job.id}`, async () => {
        await sleep(emailMs, undefined, { signal: ctx.signal });
        return { messageId: `msg-${ctx.job.id}`, to: payload.to };
      });
      return receipt;
    },
  });

  const buildReport = defineJob({
    name: "build-report",
    queue: "reports",
    schema: options.schemas?.report ?? reportSchema,
    maxAttempts: 3,
    // Short and without jitter, so the demo's retry is quick and its timing readable.
    backoff: ["200ms"],
    async run(payload, ctx) {
      observe({ type: "started", job: ctx.job, attempt: ctx.attempt }, ctx);
      await sleep(stepMs, undefined, { signal: ctx.signal });
      if (ctx.attempt <= payload.failAttempts) {
        const error = new RetryableError(
          `reporting database busy (simulated outage, attempt ${ctx.attempt})`,
        );
        observe({ type: "failing", job: ctx.job, attempt: ctx.attempt, message: error.message }, ctx);
        throw error;
      }
      await ctx.progress(0.5, "aggregating rows");
      observe(
        { type: "progress", job: ctx.job, attempt: ctx.attempt, fraction: 0.5, message: "aggregating rows" },
        ctx,
      );
      await sleep(stepMs, undefined, { signal: ctx.signal });
      return { report: payload.report, rows: 42 };
    },
  });

  return { sendEmail, buildReport, jobs: [sendEmail, buildReport] as const };
}
