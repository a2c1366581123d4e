// The appliance as a user runs it (docs/configuration.md#commands CLI, docs/api.md#how-a-request-is-authenticated, docs/api.md#error-shapes over real HTTP, encryption at rest): the real
// `credgate` process on its own ports and data dir.
import { afterAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { createServer, type Server } from "node:net";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { VERSION } from "../../src/runtime/version.ts";
import { freePort } from "../support/ports.ts";
import { credgateCommand, runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";

const KEY_FIELDS = ["defaultAgentToken", "orgApiKey", "organizationId", "projectApiKey", "projectId"];
const PROJECT_KEY = /^svc_[0-9a-f]{64}$/;
const ORG_KEY = /^svc_org_[0-9a-f]{64}$/;
const AGENT_TOKEN = /^agt_[0-9a-f]{64}$/;

const running: RunningCredgate[] = [];
async function start(opts: Parameters<typeof startCredgate>[0] = {}): Promise<RunningCredgate> {
  const c = await startCredgate(opts);
  running.push(c);
  return c;
}
/** SIGTERM, then SIGKILL if the process has not exited after `ms`; returns the exit code or "hung". */
async function stopWithin(c: RunningCredgate, ms: number, signal: NodeJS.Signals = "SIGTERM"): Promise<number | "hung"> {
  const code = await Promise.race([c.stop(signal), Bun.sleep(ms).then(() => "hung" as const)]);
  if (code === "hung") {
    c.proc.kill("SIGKILL");
    await c.proc.exited;
  }
  return code;
}
afterAll(async () => {
  await Promise.all(running.map((c) => stopWithin(c, 3_000)));
});

/** Runs the CLI and waits for it to exit by itself; a process still running after `ms` is a failure. */
async function runToExit(args: string[], env: Record<string, string> = {}, ms = 15_000) {
  const proc = spawn([...credgateCommand(), ...args], { env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, ms);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr, timedOut };
}

async function waitFor(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await Bun.sleep(25);
  }
  return check();
}

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

async function keysJson(dataDir: string, env: Record<string, string> = {}) {
  const r = await runCli(["keys", "--data-dir", dataDir, "--json"], env);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

async function portClosed(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/v1/health`, { signal: AbortSignal.timeout(1000) });
    return false;
  } catch {
    return true;
  }
}

describe("first start, keys, restart", () => {
  test("the banner is printed once on first start; a restart keeps keys and data and prints nothing", async () => {
    const dataDir = tempDir();
    const first = await start({ dataDir });
    const keys = first.keys;
    expect(await waitFor(() => first.output().includes(keys.projectApiKey))).toBe(true);
    const out1 = first.output();
    expect(occurrences(out1, keys.projectApiKey)).toBe(1);
    expect(occurrences(out1, keys.orgApiKey)).toBe(1);
    expect(out1).toContain(keys.defaultAgentToken);

    const agent = await first.api("POST", "/v1/agents", { body: { name: "Survivor", identifier: "survivor" } });
    expect(agent.status).toBe(201);
    const secret = await first.api("POST", "/v1/secrets", { body: { name: "kept", type: "llm_a", value: "sk-ant-api03-restart-value" } });
    expect(secret.status).toBe(201);
    expect(await stopWithin(first, 10_000)).toBe(0);
    expect(await portClosed(first.apiPort)).toBe(true);

    const second = await start({ dataDir });
    expect(second.keys).toEqual(keys);
    // Give the process time to print whatever it would print, then check the banner did not come back.
    await waitFor(() => second.output().includes("credgate started"), 3_000);
    const out2 = second.output();
    expect(out2).not.toContain(keys.projectApiKey);
    expect(out2).not.toContain(keys.orgApiKey);
    expect(out2).not.toContain(keys.defaultAgentToken);

    const agents = await second.api("GET", "/v1/agents");
    expect(agents.status).toBe(200);
    expect(agents.body.map((a: any) => a.id)).toContain(agent.body.id);
    expect(agents.body.find((a: any) => a.isDefault).accessToken).toBe(keys.defaultAgentToken);
    const secrets = await second.api("GET", "/v1/secrets");
    expect(secrets.body.map((s: any) => s.id)).toEqual([secret.body.id]);
    expect((await second.api("GET", "/v1/org/settings", { key: keys.orgApiKey })).body.id).toBe(keys.organizationId);
    expect(await stopWithin(second, 10_000)).toBe(0);
  });

  test("`credgate keys --json` prints exactly {projectApiKey, orgApiKey, projectId, organizationId, defaultAgentToken}", async () => {
    const c = await start();
    const keys = await keysJson(c.dataDir);
    expect(Object.keys(keys).sort()).toEqual(KEY_FIELDS);
    expect(keys.projectApiKey).toMatch(PROJECT_KEY);
    expect(keys.orgApiKey).toMatch(ORG_KEY);
    expect(keys.projectId).toMatch(/^[a-z]{16}$/);
    expect(keys.organizationId).toMatch(/^[a-z]{16}$/);
    expect(keys.defaultAgentToken).toMatch(AGENT_TOKEN);
    // They are the live credentials of the running server.
    expect((await c.api("GET", "/v1/user/api-key", { key: keys.projectApiKey })).body).toEqual({ apiKey: keys.projectApiKey });
    expect((await c.api("GET", "/v1/org/api-key", { key: keys.orgApiKey })).body).toEqual({ apiKey: keys.orgApiKey });
    expect((await c.api("GET", "/v1/agents/default", { key: keys.projectApiKey })).body.accessToken).toBe(keys.defaultAgentToken);
    // The human-readable form carries the same values.
    const plain = await runCli(["keys", "--data-dir", c.dataDir]);
    expect(plain.code).toBe(0);
    for (const v of Object.values(keys) as string[]) expect(plain.stdout).toContain(v);
  });

  test("`credgate keys` on an empty data dir fails with exit code 1", async () => {
    const r = await runToExit(["keys", "--data-dir", tempDir(), "--json"]);
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.length).toBeGreaterThan(0);
  });

  test("`credgate --version` prints the version", async () => {
    for (const flag of ["--version", "-v"]) {
      const r = await runToExit([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe(VERSION);
    }
  });
});

describe("bootstrap key environment", () => {
  const projectKey = "svc_" + "1234567890abcdef".repeat(4);
  const orgKey = "svc_org_" + "fedcba0987654321".repeat(4);

  test("CREDGATE_BOOTSTRAP_API_KEY and CREDGATE_BOOTSTRAP_ORG_API_KEY are honoured, and stay across restarts", async () => {
    const dataDir = tempDir();
    const env = { CREDGATE_BOOTSTRAP_API_KEY: projectKey, CREDGATE_BOOTSTRAP_ORG_API_KEY: orgKey };
    const c = await start({ dataDir, env });
    expect(c.keys.projectApiKey).toBe(projectKey);
    expect(c.keys.orgApiKey).toBe(orgKey);
    expect((await c.api("GET", "/v1/agents", { key: projectKey })).status).toBe(200);
    expect((await c.api("GET", "/v1/org/settings", { key: orgKey })).status).toBe(200);
    expect(await waitFor(() => c.output().includes(projectKey))).toBe(true);
    expect(await stopWithin(c, 10_000)).toBe(0);
    const again = await start({ dataDir, env });
    expect(again.keys.projectApiKey).toBe(projectKey);
    expect((await again.api("GET", "/v1/agents", { key: projectKey })).status).toBe(200);
  });

  test.each([
    ["CREDGATE_BOOTSTRAP_API_KEY", "svc_not-hex"],
    ["CREDGATE_BOOTSTRAP_API_KEY", orgKey],
    ["CREDGATE_BOOTSTRAP_ORG_API_KEY", projectKey],
    ["CREDGATE_BOOTSTRAP_ORG_API_KEY", "svc_org_" + "A".repeat(64)],
  ])("a malformed %s=%p exits with code 1 without serving", async (name, value) => {
    const port = await freePort();
    const r = await runToExit(["serve", "--data-dir", tempDir(), "--port", String(port), "--gateway-port", String(await freePort()), "--host", "127.0.0.1"], { [name]: value });
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(name);
    expect(r.stdout).not.toContain(value);
    expect(await portClosed(port)).toBe(true);
  });
});

describe("listeners and signals", () => {
  test("an API port already in use → the process exits non-zero by itself, nothing left listening", async () => {
    const blocker: Server = createServer((s) => s.destroy());
    const port = await new Promise<number>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve((blocker.address() as { port: number }).port)));
    try {
      const gatewayPort = await freePort();
      const r = await runToExit(["serve", "--data-dir", tempDir(), "--port", String(port), "--gateway-port", String(gatewayPort), "--host", "127.0.0.1"]);
      expect(r.timedOut).toBe(false);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(String(port));
      expect(await portClosed(gatewayPort)).toBe(true);
    } finally {
      blocker.close();
    }
  });

  test.each(["SIGTERM", "SIGINT"] as const)("%s → exit code 0 and the port is released", async (signal) => {
    const c = await start();
    expect((await c.api("GET", "/v1/health", { key: null })).status).toBe(200);
    expect((await c.api("POST", "/v1/agents", { body: { name: "Before stop", identifier: "before-stop" } })).status).toBe(201);
    expect(await stopWithin(c, 10_000, signal)).toBe(0);
    expect(await portClosed(c.apiPort)).toBe(true);
  });

  // docs/gateway.md#listener: in-flight requests drain for up to 9 s, then the process exits. A request whose body the server
  // answered without reading (401 before the body, or a 413) must not keep the process alive forever.
  test("SIGTERM after a request whose body was never read (401, 413) on a keep-alive connection still exits 0 within the drain time", async () => {
    const requests = [
      { key: null, body: JSON.stringify({ name: "x".repeat(500_000) }) }, // 401 answered before the body is read
      { body: JSON.stringify({ name: "x".repeat(1024 * 1024 + 1), identifier: "big" }) }, // 413
    ];
    const codes = await Promise.all(
      requests.map(async (request) => {
        const c = await start();
        expect((await c.api("GET", "/v1/health", { key: null })).status).toBe(200); // opens a keep-alive connection
        expect((await c.api("POST", "/v1/agents", request)).status).toBeGreaterThanOrEqual(400);
        return await stopWithin(c, 10_500);
      }),
    );
    expect(codes).toEqual([0, 0]);
  }, 20_000);
});

describe("errors over real HTTP", () => {
  let c: RunningCredgate;
  test("401, 403 and 404 shapes", async () => {
    c = await start();
    const missing = await c.api("GET", "/v1/agents", { key: null });
    expect(missing.status).toBe(401);
    expect(missing.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(missing.text).toBe('{"error":{"message":"Invalid API key or token.","type":"authentication_error"}}');
    const agentToken = await c.api("GET", "/v1/agents", { key: c.keys.defaultAgentToken });
    expect(agentToken.status).toBe(401);

    const noProject = await c.api("GET", "/v1/user/api-key", { key: c.keys.orgApiKey });
    expect(noProject.status).toBe(400);
    expect(noProject.text).toBe('{"error":{"message":"X-Project-Id header is required","type":"invalid_request_error"}}');

    const login = await c.api("POST", "/v1/auth/login", { key: null, body: { apiKey: c.keys.projectApiKey } });
    expect(login.status).toBe(200);
    const cookie = /credgate_session=[^;]+/.exec(login.headers.get("set-cookie") ?? "")![0];
    const cross = await c.api("POST", "/v1/agents", { key: null, headers: { cookie, origin: "https://evil.example" }, body: { name: "x", identifier: "x" } });
    expect(cross.status).toBe(403);
    expect(cross.text).toBe('{"error":{"message":"Cross-site request rejected","type":"authentication_error"}}');

    const unknown = await c.api("GET", "/v1/projects?x=1");
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe('{"error":{"message":"Unrecognized request URL (GET: /v1/projects).","type":"not_found_error"}}');
    const alias = await c.api("DELETE", "/api/nothing-here", { key: null });
    expect(alias.status).toBe(404);
    expect(alias.body).toEqual({ error: { message: "Unrecognized request URL (DELETE: /api/nothing-here).", type: "not_found_error" } });

    const big = await fetch(`${c.apiUrl}/v1/agents`, {
      method: "POST",
      headers: { authorization: `Bearer ${c.keys.projectApiKey}`, connection: "close" },
      body: JSON.stringify({ name: "x".repeat(1024 * 1024 + 1), identifier: "big" }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: { message: "Request body too large", type: "invalid_request_error" } });
  });
});

describe("nothing secret at rest or in responses", () => {
  function filesUnder(dir: string): string[] {
    const out: string[] = [];
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) out.push(...filesUnder(p));
      else if (entry.isFile()) out.push(p);
    }
    return out;
  }

  function leaks(dataDir: string, needles: string[]): string[] {
    const found: string[] = [];
    for (const file of filesUnder(dataDir)) {
      const bytes = readFileSync(file);
      for (const n of needles) if (bytes.includes(Buffer.from(n, "utf8"))) found.push(`${file}: ${n.slice(0, 12)}…`);
    }
    return found;
  }

  test("secret values, API keys, agent tokens and session ids never appear in responses or in the data dir's bytes", async () => {
    const c = await start();
    const mark = crypto.randomUUID().replace(/-/g, "");
    const values = {
      header: `hdr-${mark}-value-1`,
      param: `prm-${mark}-value-2`,
      path: `pth${mark}value3`,
      anthropic: `sk-ant-api03-${mark}-4`,
      anthropicOauth: `sk-ant-oat01-${mark}-5`,
      codexAccess: `eyJ-codex-access-${mark}-6`,
      codexRefresh: `codex-refresh-${mark}-7`,
      openaiExtracted: `sk-proj-${mark}-8`,
      org: `org-${mark}-value-9`,
      patched: `patched-${mark}-10`,
    };
    const responses: string[] = [];
    const call = async (method: string, path: string, opts: { key?: string | null; body?: unknown; headers?: Record<string, string> } = {}) => {
      const r = await c.api(method, path, opts);
      responses.push(r.text);
      if (r.status >= 400) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
      return r;
    };
    const generic = (name: string, value: string, injectionConfig: unknown) => ({ name, type: "generic", value, hostPattern: "api.x.com", injectionConfig });
    const h = await call("POST", "/v1/secrets", { body: generic("h", values.header, { headerName: "authorization", valueFormat: "Bearer {value}" }) });
    await call("POST", "/v1/secrets", { body: generic("p", values.param, { paramName: "key" }) });
    await call("POST", "/v1/secrets", { body: generic("t", values.path, { pathTemplate: "/bot{value}" }) });
    await call("POST", "/v1/secrets", { body: { name: "a", type: "llm_a", value: values.anthropic } });
    await call("POST", "/v1/secrets", { body: { name: "ao", type: "llm_a", value: values.anthropicOauth } });
    await call("POST", "/v1/secrets", {
      body: { name: "codex", type: "llm_b", value: JSON.stringify({ tokens: { access_token: values.codexAccess, refresh_token: values.codexRefresh, account_id: "acct" } }) },
    });
    await call("POST", "/v1/secrets", { body: { name: "okey", type: "llm_b", value: JSON.stringify({ auth_mode: "apikey", OPENAI_API_KEY: values.openaiExtracted }) } });
    await call("POST", "/v1/org/secrets", { key: c.keys.orgApiKey, body: generic("o", values.org, { headerName: "x-org" }) });
    await call("PATCH", `/v1/secrets/${h.body.id}`, { body: { value: values.patched } });
    await call("GET", "/v1/secrets");
    await call("GET", `/v1/secrets/${h.body.id}`);
    await call("GET", "/v1/org/secrets", { key: c.keys.orgApiKey });
    await call("GET", "/v1/counts");
    for (const text of responses) for (const v of Object.values(values)) expect(text).not.toContain(v);

    // Credentials: API keys, agent tokens (created, regenerated), a session id, a regenerated key.
    const agent = await call("POST", "/v1/agents", { body: { name: "Leak check", identifier: "leak-check" } });
    const listed = await call("GET", "/v1/agents");
    const firstToken = listed.body.find((a: any) => a.id === agent.body.id).accessToken as string;
    const regenerated = (await call("POST", `/v1/agents/${agent.body.id}/regenerate-token`)).body.accessToken as string;
    const login = await call("POST", "/v1/auth/login", { key: null, body: { apiKey: c.keys.orgApiKey } });
    const sessionId = /credgate_session=([^;]+)/.exec(login.headers.get("set-cookie") ?? "")![1]!;
    const newOrgKey = (await call("POST", "/v1/org/api-key/regenerate", { key: c.keys.orgApiKey })).body.apiKey as string;
    const credentials = [c.keys.projectApiKey, c.keys.orgApiKey, newOrgKey, c.keys.defaultAgentToken, firstToken, regenerated, sessionId];
    for (const cred of credentials) expect(cred.length).toBeGreaterThanOrEqual(64);

    const needles = [...Object.values(values), ...credentials];
    // While running (the WAL holds the latest writes) …
    const dbFiles = filesUnder(c.dataDir).map((f) => f.slice(c.dataDir.length + 1));
    expect(dbFiles).toContain("credgate.db");
    expect(leaks(c.dataDir, needles)).toEqual([]);
    // … and after a clean shutdown (checkpointed into the main file).
    expect(await stopWithin(c, 10_000)).toBe(0);
    expect(leaks(c.dataDir, needles)).toEqual([]);
    // The sealed values are really there: the search would have found plaintext had it been stored.
    const db = readFileSync(join(c.dataDir, "credgate.db"));
    expect(db.includes(Buffer.from("api.x.com"))).toBe(true);
    expect(db.includes(Buffer.from("v1:"))).toBe(true);
  });

  test("master.key is created with mode 0600", async () => {
    const c = await start();
    expect(statSync(join(c.dataDir, "master.key")).mode & 0o777).toBe(0o600);
  });
});
