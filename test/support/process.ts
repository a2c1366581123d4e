// Starts the real `credgate serve` process (source via bun, or the compiled binary when
// CREDGATE_TEST_BINARY is set) on free ports with its own data dir, and waits until it answers.
import { spawn, type Subprocess } from "bun";
import { join } from "node:path";
import { checkResponse } from "./openapiCheck.ts";
import { freePort } from "./ports.ts";
import { testDatabaseEnv, testEngine } from "./postgres.ts";
import { tempDir } from "./tmp.ts";

const ROOT = join(import.meta.dir, "../..");

export function credgateCommand(): string[] {
  const binary = process.env.CREDGATE_TEST_BINARY;
  return binary ? [binary] : [process.execPath, join(ROOT, "cli/main.ts")];
}

export interface Keys {
  projectApiKey: string;
  orgApiKey: string;
  projectId: string;
  organizationId: string;
  defaultAgentToken: string;
}

export interface RunningCredgate {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  dataDir: string;
  /** The environment the process was started with beyond the test process's own (its store, in Postgres mode). */
  env: Record<string, string>;
  apiPort: number;
  gatewayPort: number;
  /** The PostgreSQL broker's port (docs/databases.md#the-listener): a free one unless the test names it. */
  dbPort: number;
  apiUrl: string;
  gatewayUrl: string;
  /** With `apiTls`: the CA the API's certificate is checked against. */
  apiCa: string | null;
  keys: Keys;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Sends SIGTERM and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
  api(method: string, path: string, opts?: { key?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers; text: string }>;
}

export interface StartOptions {
  dataDir?: string;
  env?: Record<string, string>;
  args?: string[];
  apiPort?: number;
  gatewayPort?: number;
  dbPort?: number;
  /** The API speaks HTTPS (CREDGATE_TLS…, docs/operations.md#tls): its certificate is checked against `ca`, else the gateway CA. */
  apiTls?: { ca?: string };
}

export async function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = spawn([...credgateCommand(), ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** In Postgres mode, the database of each data dir: a restart on the same data dir finds the same data. */
const databases = new Map<string, Record<string, string>>();

/** The store environment for a data dir under the engine being tested (nothing extra for SQLite). */
export async function storeEnvFor(dataDir: string): Promise<Record<string, string>> {
  let env = databases.get(dataDir);
  if (!env) {
    env = await testDatabaseEnv();
    databases.set(dataDir, env);
  }
  return env;
}

/** What points another instance at `cg`'s database with its master key (several instances on one PostgreSQL). */
export function sharedDatabaseEnv(cg: RunningCredgate): Record<string, string> {
  return { CREDGATE_DATABASE_URL: cg.env.CREDGATE_DATABASE_URL!, CREDGATE_MASTER_KEY: cg.env.CREDGATE_MASTER_KEY! };
}

/** In the PostgreSQL run, a second instance with `env` on `first`'s database (the suites that race two instances); null on SQLite. */
export async function startSecondInstance(first: RunningCredgate, env: Record<string, string>): Promise<RunningCredgate | null> {
  return testEngine() === "postgres" ? startCredgate({ env: { ...env, ...sharedDatabaseEnv(first) } }) : null;
}

export async function startCredgate(opts: StartOptions = {}): Promise<RunningCredgate> {
  const dataDir = opts.dataDir ?? tempDir();
  // One gateway process unless a test asks for workers: the suites observe one process's logs and caches
  // (test/e2e/gateway-workers.test.ts runs several).
  const env = { CREDGATE_GATEWAY_WORKERS: "1", ...(opts.env?.CREDGATE_DATABASE_URL ? {} : await storeEnvFor(dataDir)), ...opts.env };
  const apiPort = opts.apiPort ?? (await freePort());
  const gatewayPort = opts.gatewayPort ?? (await freePort());
  // Every credgate of the suites at once would want the default 10256.
  const dbPort = opts.dbPort ?? (await freePort());
  const proc = spawn(
    [...credgateCommand(), "serve", "--data-dir", dataDir, "--port", String(apiPort), "--gateway-port", String(gatewayPort), "--db-port", String(dbPort), "--host", "127.0.0.1", ...(opts.args ?? [])],
    { env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  let out = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) out += decoder.decode(chunk);
  };
  void pump(proc.stdout);
  void pump(proc.stderr);

  const apiUrl = `${opts.apiTls ? "https" : "http"}://127.0.0.1:${apiPort}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`credgate exited with ${proc.exitCode} during start:\n${out}`);
    try {
      // Only whether it listens yet; the certificate is checked from here on.
      const r = await fetch(`${apiUrl}/v1/health`, { tls: { rejectUnauthorized: false } });
      if (r.ok) break;
    } catch {}
    if (Date.now() > deadline) {
      proc.kill();
      throw new Error(`credgate did not answer within 20 s:\n${out}`);
    }
    await Bun.sleep(50);
  }
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const apiCa = opts.apiTls ? (opts.apiTls.ca ?? (await (await fetch(`${gatewayUrl}/v1/gateway/ca`)).text())) : null;
  const tls = apiCa ? { tls: { ca: apiCa } } : {};
  const keysRun = await runCli(["keys", "--data-dir", dataDir, "--json"], env);
  if (keysRun.code !== 0) throw new Error(`credgate keys failed: ${keysRun.stderr}`);
  const keys = JSON.parse(keysRun.stdout) as Keys;

  const running: RunningCredgate = {
    proc,
    dataDir,
    env,
    apiPort,
    gatewayPort,
    dbPort,
    apiUrl,
    gatewayUrl,
    apiCa,
    keys,
    output: () => out,
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null) proc.kill(signal);
      return await proc.exited;
    },
    async api(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      const key = o.key === undefined ? keys.projectApiKey : o.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      const body = o.body === undefined ? undefined : typeof o.body === "string" ? o.body : JSON.stringify(o.body);
      if (body !== undefined) headers["content-type"] ??= "application/json";
      const res = await fetch(apiUrl + path, { method, headers, body, ...tls });
      const text = await res.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = text;
      }
      // Held to the process's own /v1/openapi.json, like every in-process API response (test/support/app.ts).
      await checkResponse(async () => (await fetch(`${apiUrl}/v1/openapi.json`, tls)).json(), method, path, res.status, res.headers, parsed);
      return { status: res.status, body: parsed, headers: res.headers, text };
    },
  };
  return running;
}
