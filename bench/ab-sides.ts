/**
 * The two sides of an A/B store benchmark (bench/sqlite-*-ab.ts): this checkout's openStore and
 * the one of another checkout of errand (e.g. `git worktree add DIR REV`, node_modules linked),
 * loaded into one process so both run interleaved under the same load.
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Store } from "../src/store/types.js";

export type OpenStore = (url: string, options: { schema: string }) => Promise<Store>;

export async function abSides(other: string): Promise<{ name: string; open: OpenStore }[]> {
  return [
    { name: "this checkout", open: (await import("../src/store/open.js")).openStore as OpenStore },
    {
      name: resolve(other),
      open: (await import(pathToFileURL(join(resolve(other), "src/store/open.ts")).href))
        .openStore as OpenStore,
    },
  ];
}
