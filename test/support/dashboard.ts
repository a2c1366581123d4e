// The dashboard suites' common ground: one real credgate process (its public URL the origin the browser uses) and
// one real Chromium, pages that are checked clean at the end (test/support/browser.ts), and sign-in through the
// sign-in page as a person does.
import type { Browser } from "playwright-core";
import { closeCleanPages, launchBrowser, openPage, signIn, type WatchedPage } from "./browser.ts";
import { freePort } from "./ports.ts";
import { startCredgate, type RunningCredgate } from "./process.ts";

export interface Dashboard {
  cg: RunningCredgate;
  browser: Browser;
  /** credgate's origin: its API and its dashboard (CREDGATE_PUBLIC_URL). */
  base: string;
  /** Every page opened with `open`/`signedIn`; `stop` checks each stayed clean. */
  pages: WatchedPage[];
  /** A new page in a browser context of its own, signed out. */
  open(opts?: { viewport?: { width: number; height: number } }): Promise<WatchedPage>;
  /** Signs `page` in with `apiKey` (the project key by default); it lands on the project's overview. */
  signIn(page: WatchedPage["page"], apiKey?: string): Promise<void>;
  /** A new page signed in with `apiKey` (the project key by default), on the project's overview. */
  signedIn(apiKey?: string): Promise<WatchedPage>;
  /** A new page signed in with the project key, on the project's secrets page (the secret-form suites). */
  projectSecrets(): Promise<WatchedPage>;
  /** Checks every page stayed on `base` (and `alsoAllowed` URL prefixes) and clean, then closes the browser and stops credgate. */
  stop(alsoAllowed?: string[]): Promise<void>;
}

/** `apiPort` when the test needs the origin before credgate starts (a provider's redirect URI); `env` is added to CREDGATE_PUBLIC_URL. */
export async function startDashboard(opts: { apiPort?: number; env?: Record<string, string> } = {}): Promise<Dashboard> {
  const apiPort = opts.apiPort ?? (await freePort());
  const base = `http://127.0.0.1:${apiPort}`;
  const cg = await startCredgate({ apiPort, env: { CREDGATE_PUBLIC_URL: base, ...opts.env } });
  let browser: Browser;
  try {
    browser = await launchBrowser();
  } catch (e) {
    await cg.stop();
    throw e;
  }
  const pages: WatchedPage[] = [];
  const dash: Dashboard = {
    cg,
    browser,
    base,
    pages,
    async open(o) {
      const w = await openPage(browser, o);
      pages.push(w);
      return w;
    },
    signIn: (page, apiKey = cg.keys.projectApiKey) => signIn(page, base, apiKey, cg.keys.projectId),
    async signedIn(apiKey) {
      const w = await dash.open();
      await dash.signIn(w.page, apiKey);
      return w;
    },
    async projectSecrets() {
      const w = await dash.signedIn();
      await w.page.goto(`${base}/p/${cg.keys.projectId}/secrets`);
      return w;
    },
    async stop(alsoAllowed = []) {
      try {
        await closeCleanPages(pages, base, alsoAllowed);
      } finally {
        await browser.close();
        await cg.stop();
      }
    },
  };
  return dash;
}
