/**
 * Sidequest's job class for the benchmark, in the file its manual job resolution loads
 * (`jobsFilePath`). The handler is set by the adapter in the same process (inline runner).
 */
import { Job } from "sidequest";
import type { BenchPayload, Handler } from "./types.js";

const slot: { handler: Handler } = { handler: () => {} };

export function setSidequestHandler(handler: Handler): void {
  slot.handler = handler;
}

export class BenchJob extends Job {
  run(payload: BenchPayload): void {
    slot.handler(payload, this.attempt);
  }
}
