// In-process API for tests: the real services and API app over a fresh store, driven with
// `app.handle(new Request(...))`. No listener, no mocks. The store is a temp SQLite data dir, or a fresh
// PostgreSQL database when the suite runs in Postgres mode (test/support/postgres.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { loadConfig } from "../../src/runtime/config.ts";
import { DB_FILE, SqliteStore } from "../../src/store/sqlite.ts";
import { log } from "../../src/observability/log.ts";
import { openCore, type Core } from "../../src/server.ts";
import { caRoutes, createApiApp, type ApiApp } from "../../src/api/app.ts";
import { checkResponse } from "./openapiCheck.ts";
import { testDatabaseEnv } from "./postgres.ts";
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

/**
 * Everything the store holds, as text, to search for a value that must never be stored in plaintext: the
 * SQLite files' raw bytes (after a checkpoint, so the WAL is in the file too), or every row of every table.
 */
export async function storedText(api: TestApi): Promise<string> {
  const { store } = api.core;
  if (store instanceof SqliteStore) {
    store.client.exec("PRAGMA wal_checkpoint(FULL)");
    return readdirSync(api.dataDir)
      .filter((f) => f.startsWith(DB_FILE))
      .map((f) => readFileSync(join(api.dataDir, f)).toString("latin1"))
      .join("\n");
  }
  const tables = await store.query<{ name: string }>(sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`);
  const out: string[] = [];
  for (const { name } of tables) out.push(JSON.stringify(await store.query(sql`SELECT * FROM ${sql.identifier(name)}`)));
  return out.join("\n");
}

/** Test APIs created inside the running test (not in beforeAll): closed when the test ends (preload.ts). */
let ofTest: TestApi[] | null = null;

export function startTest(): void {
  ofTest = [];
}

export async function closeTestApisOfTest(): Promise<void> {
  const apis = ofTest ?? [];
  ofTest = null;
  await Promise.all(apis.map((a) => a.core.close().catch(() => {})));
}

export async function createTestApi(env: Record<string, string> = {}): Promise<TestApi> {
  log.setQuiet(true);
  const dataDir = tempDir();
  const config = loadConfig({ dataDir, port: 0, gatewayPort: 0 }, { ...(await testDatabaseEnv()), ...env });
  const core = await openCore(config);
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
      // Every response of the API suites is held to /v1/openapi.json (and errors to the two shapes of docs/api.md#error-shapes).
      await checkResponse(async () => (await app.handle(new Request("http://localhost/v1/openapi.json"))).json(), method, path, res.status, res.headers, parsed);
      return { status: res.status, body: parsed, headers: res.headers, text };
    },
  };
  ofTest?.push(api);
  return api;
}
