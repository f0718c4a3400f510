/** The fields of a job record, in the contract's order: what the CLI's --json and the HTTP API answer with for a job. */
export const CONTRACT_FIELDS = [
  "id",
  "queue",
  "name",
  "state",
  "priority",
  "attempt",
  "maxAttempts",
  "runAt",
  "payload",
  "key",
  "attempts",
];
