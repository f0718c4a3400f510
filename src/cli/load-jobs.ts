/**
 * Loads job definitions from a user's module (`--jobs`): .js/.mjs/.cjs directly, .ts/.mts/.cts
 * through tsx, registered at run time (tsx is a dev dependency: a deployed worker should run
 * compiled .js). The module exports its definitions as a default array, a named `jobs` array,
 * or simply as exports (every export that is a job definition).
 */
import { stat } from "node:fs/promises";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { AnyJobDefinition } from "../job.js";
import { CliError, UsageError } from "./common.js";

const TS_EXTENSIONS = new Set([".ts", ".mts", ".cts"]);
const JS_EXTENSIONS = new Set([".js", ".mjs", ".cjs"]);

/** The --jobs option: the flag, else ERRAND_JOBS. */
export function jobsModuleOption(value: string | undefined): string {
  const path = value ?? process.env.ERRAND_JOBS;
  if (!path)
    throw new UsageError(
      "--jobs <module> is required (or set ERRAND_JOBS): the module that exports your job definitions",
    );
  return path;
}

/** Does this value look like what defineJob returns? */
export function isJobDefinition(value: unknown): value is AnyJobDefinition {
  if (!value || typeof value !== "object") return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.name === "string" &&
    typeof v.queue === "string" &&
    typeof v.run === "function" &&
    typeof v.backoff === "function" &&
    typeof v.maxAttempts === "number" &&
    !!v.schema &&
    typeof v.schema === "object" &&
    "~standard" in v.schema
  );
}

let tsxRegistered: Promise<void> | null = null;

/** Lets `import()` load TypeScript for the rest of the process (once). */
function registerTsx(modulePath: string): Promise<void> {
  tsxRegistered ??= (async () => {
    let api: { register: () => unknown };
    try {
      // A variable specifier: tsx is optional at run time and not a type dependency of the build.
      const specifier = "tsx/esm/api";
      api = (await import(specifier)) as { register: () => unknown };
    } catch (err) {
      tsxRegistered = null;
      const missing = (err as NodeJS.ErrnoException)?.code === "ERR_MODULE_NOT_FOUND";
      throw new CliError(
        `cannot load the TypeScript jobs module ${modulePath}: ${missing ? "tsx is not installed" : `tsx failed to load (${(err as Error)?.message})`}. ` +
          "Install tsx (npm install --save-dev tsx) or compile the module to .js and pass that",
      );
    }
    api.register();
  })();
  return tsxRegistered;
}

/** Imports the module and returns its job definitions (at least one), each once. */
export async function loadJobs(modulePath: string): Promise<AnyJobDefinition[]> {
  const absolute = resolve(modulePath);
  const ext = extname(absolute).toLowerCase();
  if (!TS_EXTENSIONS.has(ext) && !JS_EXTENSIONS.has(ext)) {
    throw new CliError(`cannot load jobs module ${modulePath}: expected a .js, .mjs, .cjs or .ts file`);
  }
  try {
    const info = await stat(absolute);
    if (!info.isFile()) throw new CliError(`cannot load jobs module ${modulePath}: it is not a file`);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(
      `cannot read jobs module ${modulePath}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`,
    );
  }
  if (TS_EXTENSIONS.has(ext)) await registerTsx(modulePath);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    throw new CliError(`cannot load jobs module ${modulePath}: ${message.split("\n")[0]}`);
  }
  const jobs = extractJobs(mod, modulePath);
  if (jobs.length === 0) {
    throw new CliError(
      `jobs module ${modulePath} exports no job definitions: export them as \`export default [...]\`, ` +
        "`export const jobs = [...]`, or export each defineJob(...) result",
    );
  }
  return jobs;
}

function extractJobs(mod: Record<string, unknown>, modulePath: string): AnyJobDefinition[] {
  // A CommonJS module's exports arrive as `default` (and sometimes also as named exports).
  const cjs =
    mod.default &&
    typeof mod.default === "object" &&
    !Array.isArray(mod.default) &&
    !isJobDefinition(mod.default);
  const source = cjs ? (mod.default as Record<string, unknown>) : mod;
  for (const name of ["default", "jobs"]) {
    const list = source[name];
    if (Array.isArray(list)) {
      list.forEach((item, i) => {
        if (!isJobDefinition(item)) {
          throw new CliError(
            `jobs module ${modulePath}: export ${name}[${i}] is not a job definition (made by defineJob)`,
          );
        }
      });
      return [...new Set(list as AnyJobDefinition[])];
    }
  }
  return [...new Set(Object.values(source).filter(isJobDefinition))];
}
