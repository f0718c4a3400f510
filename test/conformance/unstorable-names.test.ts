/**
 * The names errand stores with a job, on every store (test/helpers/targets.ts): the node names of
 * enqueueFlow and the `dependsOn` references to them, a definition's queue and job name, and the
 * trace context of the caller's span. A name no store can hold as given — a NUL character
 * (PostgreSQL text refuses it), a lone UTF-16 surrogate (SQLite and PostgreSQL write U+FFFD in
 * its place), empty, over-long, not a string — is the same ValidationError on every store, naming
 * the problem, before anything is written. The trace context is not the caller's input: what a
 * span carries never refuses an enqueue; what of it the W3C format cannot hold is left out.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { context, createTraceState, type TraceState, trace } from "@opentelemetry/api";
import { z } from "zod";
import { defineJob, type Errand, ValidationError } from "../../src/index.js";
import { targets, withErrand } from "../helpers/targets.js";
import { registerTracing, type TestTracing } from "../helpers/tracing.js";

const NUL = /contains a NUL character \(\\u0000\), which cannot be stored/;
const SURROGATE = /contains a lone UTF-16 surrogate \(invalid Unicode\)/;
const MB = "n".repeat(1024 * 1024);

const schema = z.object({ n: z.number() });
const step = defineJob({ name: "step", queue: "steps", schema, run: () => {} });

async function count(errand: Errand): Promise<number> {
  return (await errand.listJobs({ limit: 1000 })).jobs.length;
}

/** `call` is refused with a ValidationError matching `message`, short, and nothing is stored. */
async function refused(errand: Errand, call: () => Promise<unknown>, message: RegExp): Promise<void> {
  const before = await count(errand);
  await assert.rejects(call, (err: Error) => {
    assert.ok(
      err instanceof ValidationError,
      `a ValidationError, got ${err.constructor.name}: ${err.message}`,
    );
    assert.match(err.message, message);
    assert.ok(err.message.length < 500, `a message of ${err.message.length} characters, not the name itself`);
    return true;
  });
  assert.equal(await count(errand), before, "nothing stored");
}

for (const target of targets) {
  describe(`unstorable names: ${target.name}`, { skip: target.skip || false }, () => {
    test("enqueueFlow refuses a node name no store can hold, and stores none of the flow", () =>
      withErrand(
        target,
        async (errand) => {
          const names: Array<[string, RegExp]> = [
            ["a\u0000b", NUL],
            ["a\udbff", SURROGATE],
            ["", /must be a non-empty string of at most 512 characters; got a string of 0$/],
            [MB, /must be a non-empty string of at most 512 characters; got a string of 1048576$/],
            ["m".repeat(513), /got a string of 513$/],
          ];
          for (const [name, problem] of names) {
            const shown = JSON.stringify(name.slice(0, 40)).slice(0, -1);
            await refused(
              errand,
              () =>
                errand.enqueueFlow({
                  jobs: {
                    first: { job: step, payload: { n: 1 } },
                    [name]: { job: step, payload: { n: 2 }, dependsOn: ["first"] },
                    last: { job: step, payload: { n: 3 }, dependsOn: [name] },
                  },
                }),
              new RegExp(`^enqueueFlow: the flow job name ${literal(shown)}.* ${problem.source}`),
            );
          }
          // The names a store holds as given, U+FFFD and a surrogate pair among them, are kept.
          const good = "fetch \ufffd é 😀 ".padEnd(512, "x");
          const { ids } = await errand.enqueueFlow({
            jobs: {
              [good]: { job: step, payload: { n: 1 } },
              merge: { job: step, payload: { n: 2 }, dependsOn: [good] },
            },
          });
          assert.deepEqual(
            (await errand.getJobLinks(ids.merge)).dependencies.map((d) => d.node),
            [good],
          );
        },
        { jobs: [step] },
      ));

    test("a dependsOn reference that names no node, or is no job, is named in a short, escaped message", () =>
      withErrand(
        target,
        async (errand) => {
          const flow = (ref: unknown) => () =>
            errand.enqueueFlow({
              jobs: {
                a: { job: step, payload: { n: 1 } },
                b: { job: step, payload: { n: 2 }, dependsOn: [ref as string] },
              },
            });
          const notANode = (shown: string) =>
            new RegExp(
              `^enqueueFlow: job "b" depends on ${literal(shown)}.*, which is not a job of this flow`,
            );
          await refused(errand, flow("a\u0000"), notANode('"a\\u0000"'));
          await refused(errand, flow("a\ud800"), notANode('"a\\ud800"'));
          await refused(errand, flow(""), notANode('""'));
          await refused(errand, flow(MB), notANode('"nnn'));
          await refused(
            errand,
            flow({ a: 1 }),
            /job "b": a dependency must be a job id or a job record; got \{"a":1\}/,
          );
          await refused(
            errand,
            flow(undefined),
            /a dependency must be a job id or a job record; got undefined/,
          );
          // A number is a stored job's id, as everywhere: there is none.
          await refused(errand, flow(42), /no job with id 42; nothing was stored/);
        },
        { jobs: [step] },
      ));

    test("a definition's queue or name no store can hold is refused at enqueue (a definition not made by defineJob)", () =>
      withErrand(target, async (errand) => {
        const names =
          /must be 1-128 characters of letters, digits, "_", ".", ":" or "-" \(starting with a letter or digit\); got /;
        const bad: Array<[Record<string, unknown>, RegExp]> = [
          [{ queue: "q\u0000" }, new RegExp(`^queue of job "by-hand" ${names.source}"q\\\\u0000"$`)],
          [{ queue: "q\ud800" }, new RegExp(`^queue of job "by-hand" ${names.source}"q\\\\ud800"$`)],
          [{ queue: "" }, new RegExp(`^queue of job "by-hand" ${names.source}""$`)],
          [{ queue: MB }, new RegExp(`^queue of job "by-hand" ${names.source}"nnn`)],
          [{ queue: 42 }, new RegExp(`^queue of job "by-hand" ${names.source}42$`)],
          [{ name: "by\u0000hand" }, new RegExp(`^job name ${names.source}"by\\\\u0000hand"$`)],
          [{ name: "" }, new RegExp(`^job name ${names.source}""$`)],
        ];
        for (const [fields, message] of bad) {
          const def = { ...step, name: "by-hand", ...fields } as unknown as typeof step;
          await refused(errand, () => errand.enqueue(def, { n: 1 }), message);
          await refused(errand, () => errand.enqueueMany(def, [{ payload: { n: 1 } }]), message);
        }
        await refused(
          errand,
          () => errand.enqueue(`no\u0000such` as never, { n: 1 }),
          /^unknown job "no\\u0000such"/,
        );
        const stored = await errand.enqueue(step, { n: 1 });
        assert.equal((await errand.getJob(stored.id))?.queue, "steps", "the queue keeps working");
      }));
  });
}

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A trace state whose text is whatever a tracer gives, as a vendor's own implementation might. */
function traceStateOf(serialize: () => string): TraceState {
  const state: TraceState = { serialize, get: () => undefined, set: () => state, unset: () => state };
  return state;
}

const PARENT = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 };

for (const target of targets) {
  describe(`the trace context stored with a job: ${target.name}`, { skip: target.skip || false }, () => {
    let tracing: TestTracing;
    before(() => {
      tracing = registerTracing();
    });
    after(() => tracing.shutdown());

    test("never refuses an enqueue; what the W3C tracestate cannot hold is left out, the link kept", () =>
      withErrand(
        target,
        async (errand) => {
          const cases: Array<[string, TraceState, string | undefined]> = [
            ["valid", createTraceState("vendor=abc,other=x"), "vendor=abc,other=x"],
            [
              "a member with NUL or a lone surrogate",
              traceStateOf(() => "good=1,bad=a\u0000b,worse=\ud800"),
              "good=1",
            ],
            [
              "1 MB (the API ignores a tracestate over 512 characters)",
              traceStateOf(() => `vendor=${MB}`),
              undefined,
            ],
            ["not valid W3C at all", traceStateOf(() => "\u0000"), undefined],
            [
              "a serialize that throws",
              traceStateOf(() => {
                throw new Error("vendor bug");
              }),
              undefined,
            ],
          ];
          for (const [what, traceState, expected] of cases) {
            const parent = trace.setSpanContext(context.active(), { ...PARENT, traceState });
            const job = await context.with(parent, () => errand.enqueue(step, { n: 1 }));
            const [claimed] = await errand.store.claimJobs({
              queue: "steps",
              limit: 1,
              workerId: "w",
              leaseMs: 60_000,
            });
            assert.equal(claimed?.id, job.id, what);
            const stored = JSON.parse(claimed.traceContext ?? "null") as {
              traceparent: string;
              tracestate?: string;
            };
            assert.match(stored.traceparent, new RegExp(`^00-${PARENT.traceId}-[0-9a-f]{16}-01$`), what);
            assert.equal(stored.tracestate, expected, what);
            assert.ok((claimed.traceContext as string).length < 1024, `${what}: bounded`);
          }
        },
        { jobs: [step] },
      ));
  });
}
