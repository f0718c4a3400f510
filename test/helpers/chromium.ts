/**
 * Debian's Chromium for the dashboard's browser tests, driven by playwright-core (whose own
 * browser download cannot work here). Under CI a missing Chromium is an error, never a skip
 * counted as a pass; elsewhere the tests are skipped with the command that installs it.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === "true") {
  throw new Error(
    `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) or set CHROMIUM_PATH`,
  );
}

/** The `skip` option of a browser test's describe: false, or why it cannot run here. */
export const skipWithoutChromium: false | string = available
  ? false
  : `Chromium not found at ${CHROMIUM} (apt-get install -y chromium)`;

/** Headless, sandbox off (root in CI), no background networking (the network is closed here). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}
