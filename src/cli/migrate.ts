/** `errand migrate`: create or upgrade errand's tables (every other command also migrates on open). */
import type { Command } from "commander";
import { globals, openFromOptions, redact, storeUrl, withErrand } from "./common.js";
import { print } from "./output.js";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("create or upgrade errand's tables in the store (safe while other processes run)")
    .action(async (_opts: unknown, cmd: Command) => {
      const options = globals(cmd);
      await withErrand(await openFromOptions(options), async (errand) => {
        print(`errand store is up to date: ${redact(storeUrl(options))} (${errand.storeKind})`);
      });
    });
}
