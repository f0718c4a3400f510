#!/usr/bin/env node
/**
 * Import cycles among the files of src/: every relative `import … from "./…"` and
 * `export … from "./…"` (type-only ones included: a type cycle is still two files that cannot
 * be read apart), resolved from ".js" to the ".ts" source. Reports each strongly connected
 * group of files (Tarjan), with one cycle through it as an example.
 *
 *   node scripts/import-cycles.mjs [dir]     prints the groups, exits 1 when there is any
 *   import { findCycles } from "./import-cycles.mjs"   (test/architecture.test.ts)
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']/g;
const DYNAMIC = /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

function sources(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Comments stripped, so an example in a doc comment is not an import. */
function code(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'])\/\/.*$/gm, "$1");
}

/** file → files it imports, all as paths relative to `root`. */
export function importGraph(root) {
  const graph = new Map();
  for (const file of sources(root)) {
    const deps = new Set();
    const text = code(readFileSync(file, "utf8"));
    for (const pattern of [IMPORT, DYNAMIC]) {
      for (const match of text.matchAll(pattern)) {
        const target = resolve(dirname(file), match[1]).replace(/\.js$/, ".ts");
        deps.add(relative(root, target));
      }
    }
    graph.set(relative(root, file), [...deps].sort());
  }
  return graph;
}

/** Groups of files that import each other (directly or around a loop), each sorted, with an example loop. */
export function findCycles(root) {
  const graph = importGraph(root);
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const group = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) groups.push(group.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return groups.map((files) => ({ files, example: exampleLoop(graph, files) }));
}

/** A shortest loop from the group's first file back to itself, inside the group. */
function exampleLoop(graph, files) {
  const inGroup = new Set(files);
  const start = files[0];
  const from = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!inGroup.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0]));
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "..", "src"));
  const cycles = findCycles(root);
  for (const { files, example } of cycles) {
    console.log(`${files.length} files: ${files.join(", ")}\n  e.g. ${example.join(" -> ")}`);
  }
  console.log(cycles.length === 0 ? "no import cycles" : `${cycles.length} import cycle group(s)`);
  process.exitCode = cycles.length === 0 ? 0 : 1;
}
