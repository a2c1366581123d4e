// In-process API for tests: the real services and Elysia app over a temp SQLite data dir, driven with
// `app.handle(new Request(...))`. No listener, no mocks.
import { loadConfig } from "../../src/config.ts";
import { log } from "../../src/log.ts";
import { openCore, type Core } from "../../src/server.ts";
import { caRoutes, createApiApp, type ApiApp } from "../../src/api/app.ts";
import { tempDir } from "./tmp.ts";

export interface TestApi {
  core: Core;
  app: ApiApp;
  dataDir: string;
  /** Bootstrap credentials. */
  projectKey: string;
  orgKey: string;
  projectId: string;
  organizationId: string;
  /** Sends a request; `body` objects are JSON-encoded, strings are sent raw. */
  call(method: string, path: string, opts?: { key?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers; text: string }>;
}

/** Stands in for the gateway CA in-process (the real CA is exercised by the e2e tests). */
export const TEST_CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";

export function createTestApi(env: Record<string, string> = {}): TestApi {
  log.setQuiet(true);
  const dataDir = tempDir();
  const config = loadConfig({ dataDir, port: 0, gatewayPort: 0 }, { ...env });
  const core = openCore(config);
  const app = createApiApp(core.services, caRoutes(TEST_CA_PEM));
  const b = core.bootstrap;
  const api: TestApi = {
    core,
    app,
    dataDir,
    projectKey: b.projectApiKey,
    orgKey: b.orgApiKey,
    projectId: b.projectId,
    organizationId: b.organizationId,
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const key = opts.key === undefined ? api.projectKey : opts.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
        headers["content-type"] ??= "application/json";
      }
      const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
      const text = await res.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed, headers: res.headers, text };
    },
  };
  return api;
}
