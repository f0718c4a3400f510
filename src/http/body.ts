/** Reading request bodies with a size cap and a content-type check, for the API and the login form. */

/** Largest request body the API and the login form accept. */
export const MAX_BODY_BYTES = 64 * 1024;

/** A bad request body: carries the HTTP status (400, 413, 415) and a message naming the problem. */
export class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "BodyError";
  }
}

/** The body as text, refusing more than `limit` bytes without reading them all. */
export async function readText(request: Request, limit = MAX_BODY_BYTES): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) {
    throw new BodyError(413, `request body too large: ${declared} bytes, the limit is ${limit}`);
  }
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: ReadableStreamReadResult<Uint8Array>;
    try {
      read = await reader.read();
    } catch {
      throw new BodyError(400, "could not read the request body");
    }
    if (read.done) break;
    size += read.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyError(413, `request body too large: more than ${limit} bytes`);
    }
    chunks.push(read.value);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new BodyError(400, "request body is not valid UTF-8");
  }
}

function mediaType(request: Request): string {
  return (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}

/**
 * A JSON object body. An empty body counts as `{}` when `optional`. Wrong content type → 415,
 * too large → 413, malformed JSON or not an object → 400.
 */
export async function readJsonObject(request: Request, optional = false): Promise<Record<string, unknown>> {
  const text = await readText(request);
  if (text.trim() === "") {
    if (optional) return {};
    throw new BodyError(400, "request body is empty: expected a JSON object");
  }
  if (mediaType(request) !== "application/json") {
    throw new BodyError(415, "unsupported content type: send the body as application/json");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new BodyError(400, `malformed JSON body: ${(err as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new BodyError(400, "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** An `application/x-www-form-urlencoded` body (the login form). */
export async function readForm(request: Request): Promise<URLSearchParams> {
  if (mediaType(request) !== "application/x-www-form-urlencoded") {
    throw new BodyError(415, "unsupported content type: expected a form (application/x-www-form-urlencoded)");
  }
  return new URLSearchParams(await readText(request, 8 * 1024));
}
