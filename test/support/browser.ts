// A real Chromium (Debian's `chromium` package, driven by playwright-core) for the dashboard's e2e tests.
// Each page records its console errors, uncaught exceptions and every request it makes, so a test can prove
// the page stayed clean and never talked to a host other than credgate's own.
import { expect } from "bun:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export const CHROMIUM = process.env.CREDGATE_TEST_CHROMIUM ?? "/usr/bin/chromium";
/** Screenshots of the main pages for review; the folder is ignored by git. */
export const SCREENSHOTS = join(import.meta.dir, "../../.screenshots");

/** `trustKeys`: SPKI SHA-256 (base64) of certificates Chromium accepts though no root it knows signed them. */
export async function launchBrowser(opts: { trustKeys?: string[] } = {}): Promise<Browser> {
  const trust = opts.trustKeys?.length ? [`--ignore-certificate-errors-spki-list=${opts.trustKeys.join(",")}`] : [];
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage", ...trust], headless: true });
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** console.error lines and uncaught exceptions. */
  errors: string[];
  /** Every URL the page requested. */
  requests: string[];
  /** `<status> <url>` of every answer ≥ 400 (API refusals the page is expected to show, like a wrong key). */
  failures: string[];
}

export async function openPage(browser: Browser, opts: { viewport?: { width: number; height: number } } = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1366, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const page = await context.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  const failures: string[] = [];
  page.on("console", (m) => {
    // Chromium logs every HTTP error answer as "Failed to load resource"; those are kept in `failures`.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(`console: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) failures.push(`${r.status()} ${r.url()}`);
  });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  return { context, page, errors, requests, failures };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * Checks that each page stayed on `origin` (and the `alsoAllowed` URL prefixes), raised no script error and met
 * failed answers only from the API (shown to the user), never a missing page or asset; then closes it.
 */
export async function closeCleanPages(pages: WatchedPage[], origin: string, alsoAllowed: string[] = []): Promise<void> {
  for (const p of pages) {
    expect(p.requests.filter((u) => !u.startsWith(origin) && !u.startsWith("data:") && !alsoAllowed.some((a) => u.startsWith(a)))).toEqual([]);
    expect(p.errors).toEqual([]);
    expect(p.failures.filter((f) => !f.split(" ")[1]!.startsWith(`${origin}/v1/`))).toEqual([]);
    await p.context.close();
  }
}

/** Signs in through the sign-in page with an API key and waits for the project's overview, where it lands. */
export async function signIn(page: Page, origin: string, apiKey: string, projectId: string): Promise<void> {
  await page.goto(`${origin}/sign-in`);
  await page.getByLabel("API key").fill(apiKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${origin}/p/${projectId}`);
}
