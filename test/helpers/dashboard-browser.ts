/**
 * The set-up the dashboard's browser tests share: the dashboard served on a free local port,
 * a Chromium page signed in with the token, and the page's Content Security Policy reports and
 * uncaught errors collected so a test can assert there were none.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { createFetchHandler } from "../../src/http/app.js";
import { toNodeHandler } from "../../src/http/node.js";
import type { Errand } from "../../src/index.js";
import { launchChromium } from "./chromium.js";

export interface SignedInDashboard {
  /** e.g. http://127.0.0.1:41234 */
  base: string;
  page: Page;
  /** Closes the browser, then the server. */
  close(): Promise<void>;
}

/**
 * Serves `errand`'s dashboard, opens `signInPath` in Chromium (1366x900) and signs in with
 * `token`; CSP messages and page errors are pushed to `problems`. What was opened is closed
 * again if a later step fails, so a failed set-up leaves no server holding the test process.
 */
export async function openSignedInDashboard(
  errand: Errand,
  { token, problems, signInPath = "/" }: { token: string; problems: string[]; signInPath?: string },
): Promise<SignedInDashboard> {
  const server = createServer(toNodeHandler(createFetchHandler(errand, { dashboardToken: token })));
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await new Promise((r) => server.close(r));
  };
  try {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    page.on("console", (msg) => {
      if (/Content Security Policy/i.test(msg.text())) problems.push(msg.text());
    });
    page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
    await page.goto(`${base}${signInPath}`);
    await page.fill("#token", token);
    await page.click("button[type=submit]");
    await page.waitForURL(`${base}/`);
    return { base, page, close };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}
