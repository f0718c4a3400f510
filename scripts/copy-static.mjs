#!/usr/bin/env node
// Copies the dashboard's static assets (src/http/static/) next to the compiled code
// (dist/http/static/), where dashboard.ts looks for them at run time. Part of `npm run build`.
import { cpSync, existsSync, rmSync } from "node:fs";

const from = new URL("../src/http/static/", import.meta.url);
const to = new URL("../dist/http/static/", import.meta.url);
if (!existsSync(from)) {
  console.error(`copy-static: ${from.pathname} is missing`);
  process.exit(1);
}
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
