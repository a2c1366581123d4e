// Migration (docs/api.md#migration): export on self-hosted, import on the
// cloud. Two in-process instances, the cloud's real app behind real loopback listeners (HTTPS with a test CA
// reached through CREDGATE_RESOLVE, and plain http on 127.0.0.1), so export makes real outbound requests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { createTestApi, type TestApi } from "../support/app.ts";
import { freePort } from "../support/ports.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { addMember, expectEnvelope, expectFlat } from "./helpers.ts";

const IDENTIFIER_MESSAGE =
  "Identifier must be 1-50 characters, start with a letter or number, and contain only lowercase letters, numbers, and hyphens";
const VAULT_REASON = "Sourced from an external vault — re-add this secret after migrating";
const POLICY_REASON = "Policy rules are not migrated. Re-create them in the destination.";
const GRANTS_REASON = "Agent grants are not migrated. Re-attach credentials to agents in the destination.";
const PATH_VALUE = "Secret value can't contain / ? # % whitespace or control characters when injected into the URL path";

const VALUES = {
  header: "hdr-Secret-Value-0123456789",
  oauth: "oauth-access-token-abcdefghijklmnop",
  anthropic: "sk-ant-api03-migrated-key-xyz",
};

let pki: TestPki;
const servers: Server<unknown>[] = [];

beforeAll(async () => {
  pki = makePki(["cloud.test"]);
});

afterAll(async () => {
  for (const s of servers) await s.stop(true);
});

/** The cloud instance's app on a real listener: https (test CA) when `tls`, else plain http. */
function listen(handler: (req: Request) => Response | Promise<Response>, tls = false): number {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    ...(tls ? { tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) } } : {}),
    fetch: handler,
  });
  servers.push(server);
  return server.port!;
}

interface Pair {
  sh: TestApi;
  cloud: TestApi;
  /** https://cloud.test:<port>, resolved to the loopback listener. */
  httpsUrl: string;
  /** http://127.0.0.1:<port> */
  httpUrl: string;
  /** Requests the cloud's listeners received. */
  received: { method: string; path: string; authorization: string | null; bytes: number }[];
}

async function pair(shEnv: Record<string, string> = {}): Promise<Pair> {
  const cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
  const received: Pair["received"] = [];
  const handler = async (req: Request) => {
    const body = await req.arrayBuffer();
    received.push({ method: req.method, path: new URL(req.url).pathname, authorization: req.headers.get("authorization"), bytes: body.byteLength });
    return cloud.app.handle(new Request(req.url, { method: req.method, headers: req.headers, body: body.byteLength ? body : undefined }));
  };
  const tlsPort = listen(handler, true);
  const httpPort = listen(handler);
  const sh = await createTestApi({
    CREDGATE_RESOLVE: `cloud.test:${tlsPort}:127.0.0.1`,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_OP_CONNECT_HOST: "https://op-connect.invalid",
    CREDGATE_OP_CONNECT_TOKEN: "op-token",
    ...shEnv,
  });
  return { sh, cloud, httpsUrl: `https://cloud.test:${tlsPort}`, httpUrl: `http://127.0.0.1:${httpPort}`, received };
}

async function ok(res: { status: number; text: string; body: any }, status = 201): Promise<any> {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.body;
}

/** The plaintext a project secret holds, read through the service (values are never returned by the API). */
async function storedValue(api: TestApi, name: string): Promise<string | null> {
  const row = (await api.core.services.secrets.rows({ scope: "project", projectId: api.projectId, organizationId: api.organizationId })).find((r) => r.name === name);
  return row ? api.core.services.secrets.openValue(row) : null;
}

/** The project of the migration example (docs/api.md#migration): inline secrets of every type, a vault secret, an agent, a custom rule and a grant. */
async function seed(sh: TestApi): Promise<{ agentId: string }> {
  await ok(
    await sh.call("POST", "/v1/secrets", {
      body: { name: "Header API", type: "generic", value: VALUES.header, hostPattern: "api.example.com", pathPattern: "/v1/*", injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    }),
  );
  await ok(
    await sh.call("POST", "/v1/secrets", {
      body: { name: "Codex", type: "llm_b", value: JSON.stringify({ tokens: { access_token: VALUES.oauth, account_id: "acct-42" } }) },
    }),
  );
  await ok(await sh.call("POST", "/v1/secrets", { body: { name: "Claude", type: "llm_a", value: VALUES.anthropic, hostPattern: "llm.example.com" } }));
  await ok(
    await sh.call("POST", "/v1/secrets", {
      body: { name: "Vaulted", type: "generic", valueSource: "external_vault", opRef: "op://v/i/f", hostPattern: "vault.example.com", injectionConfig: { headerName: "x-k" } },
    }),
  );
  const agent = await ok(await sh.call("POST", "/v1/agents", { body: { name: "Coder", identifier: "coder", mode: "all" } }));
  await ok(await sh.call("POST", "/v1/policy/rules", { body: { name: "No admin", action: "block", targets: [{ kind: "network", hostPattern: "api.example.com", pathPattern: "/admin/*" }] } }));
  const secrets = (await sh.call("GET", "/v1/secrets")).body as any[];
  await ok(await sh.call("PUT", `/v1/agents/${agent.id}/grants/secrets/${secrets.find((s) => s.name === "Header API").id}`), 200);
  return { agentId: agent.id };
}

describe("availability and access", () => {
  let p: Pair;
  beforeAll(async () => {
    p = await pair();
  });

  test("the cloud answers 404 to export, before authentication (docs/api.md#migration)", async () => {
    for (const key of [null, p.cloud.projectKey]) {
      const res = await p.cloud.call("POST", "/v1/migrate/export", { key, body: { cloudApiKey: "svc_x", cloudUrl: "https://cloud.example.com" } });
      expectEnvelope(res, 404, "Unrecognized request URL (POST: /v1/migrate/export).");
    }
  });

  test("self-hosted answers 404 to import", async () => {
    const res = await p.sh.call("POST", "/v1/migrate/import", { body: { version: 1, secrets: [], agents: [] } });
    expectEnvelope(res, 404, "Unrecognized request URL (POST: /v1/migrate/import).");
  });

  test("export and import need a project admin: no key → 401, a member's key → 403", async () => {
    expectEnvelope(await p.sh.call("POST", "/v1/migrate/export", { key: null, body: { cloudApiKey: "k", cloudUrl: p.httpsUrl } }), 401, "Invalid API key or token.");
    const shMember = await addMember(p.sh, "member");
    expectEnvelope(await p.sh.call("POST", "/v1/migrate/export", { key: shMember.projectKey, body: { cloudApiKey: "k", cloudUrl: p.httpsUrl } }), 403, "Insufficient permissions");
    const cloudMember = await addMember(p.cloud, "member");
    expectEnvelope(await p.cloud.call("POST", "/v1/migrate/import", { key: cloudMember.projectKey, body: { version: 1 } }), 403, "Insufficient permissions");
    const cloudAdmin = await addMember(p.cloud, "admin");
    expect((await p.cloud.call("POST", "/v1/migrate/import", { key: cloudAdmin.projectKey, body: { version: 1 } })).status).toBe(200);
    expect(p.received).toEqual([]);
  });
});

describe("export request validation", () => {
  let p: Pair;
  beforeAll(async () => {
    p = await pair();
  });

  test("cloudApiKey is checked first: absent, null or blank → `cloudApiKey is required`", async () => {
    for (const body of [{}, { cloudUrl: "http://cloud.example.com" }, { cloudApiKey: null, cloudUrl: p.httpsUrl }, { cloudApiKey: "   ", cloudUrl: p.httpsUrl }]) {
      expectFlat(await p.sh.call("POST", "/v1/migrate/export", { body }), 400, "cloudApiKey is required");
    }
    expectFlat(await p.sh.call("POST", "/v1/migrate/export"), 400, "Request body must be a JSON object");
    expectFlat(await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: 5, cloudUrl: p.httpsUrl } }), 400, "cloudApiKey must be a string");
    expectFlat(await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: "svc_a\nX-Evil: 1", cloudUrl: p.httpsUrl } }), 400, "cloudApiKey is invalid");
  });

  test("cloudUrl must be https; plain http only on loopback hosts", async () => {
    const bad = ["http://cloud.example.com", "http://10.0.0.1:8080", "ftp://cloud.example.com", "cloud.example.com", "not a url", "https://user:pw@cloud.example.com", "http://127.0.0.1.nip.io"];
    for (const cloudUrl of bad) {
      expectFlat(await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: "svc_k", cloudUrl } }), 400, "cloudUrl must be an https URL");
    }
    expectFlat(await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: "svc_k" } }), 400, "cloudUrl is required");
    expect(p.received).toEqual([]);
  });
});

describe("export → import (docs/api.md#migration)", () => {
  let p: Pair;
  let first: { status: number; body: any; text: string };
  beforeAll(async () => {
    p = await pair();
    await seed(p.sh);
    first = await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: `${p.httpsUrl}/` } });
  });

  test("200 Migration result: 3 secrets and 1 agent imported; vault secret, rule and grant counted; the existing default agent skipped", async () => {
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      imported: { secrets: 3, agents: 1, agentSecrets: 0, rules: 0 },
      skipped: [
        { type: "generic", name: "Vaulted", reason: VAULT_REASON },
        { type: "policy", name: "1 policy rule(s)", reason: POLICY_REASON },
        { type: "grants", name: "1 agent grant(s)", reason: GRANTS_REASON },
        { type: "agent", name: "Default Agent", reason: "already exists" },
      ],
    });
  });

  test("no secret value, and not the cloud key, in the response", async () => {
    for (const v of [...Object.values(VALUES), "acct-42", p.cloud.projectKey]) expect(first.text).not.toContain(v);
  });

  test("one HTTPS POST to <cloudUrl>/v1/migrate/import with the cloud key as Bearer", async () => {
    expect(p.received.map((r) => ({ method: r.method, path: r.path, authorization: r.authorization }))).toEqual([
      { method: "POST", path: "/v1/migrate/import", authorization: `Bearer ${p.cloud.projectKey}` },
    ]);
  });

  test("the cloud holds the secrets with their settings, sealed, values intact", async () => {
    const listed = ((await p.cloud.call("GET", "/v1/secrets")).body as any[]).map(({ id: _i, createdAt: _c, ...rest }) => rest);
    expect(listed.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      {
        name: "Claude",
        type: "llm_a",
        valueSource: "inline",
        opRef: null,
        storeRef: null,
        hostPattern: "llm.example.com",
        pathPattern: null,
        injectionConfig: null,
        metadata: { authMode: "api-key" },
        scope: "project",
        typeLabel: "Anthropic-compatible API Key",
      },
      {
        name: "Codex",
        type: "llm_b",
        valueSource: "inline",
        opRef: null,
        storeRef: null,
        hostPattern: "chatgpt.com",
        pathPattern: null,
        injectionConfig: null,
        metadata: { authMode: "oauth", accountId: "acct-42" },
        scope: "project",
        typeLabel: "OpenAI-compatible API Key",
      },
      {
        name: "Header API",
        type: "generic",
        valueSource: "inline",
        opRef: null,
        storeRef: null,
        hostPattern: "api.example.com",
        pathPattern: "/v1/*",
        injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" },
        metadata: null,
        scope: "project",
        typeLabel: "Generic Secret",
      },
    ]);
    expect(await storedValue(p.cloud, "Header API")).toBe(VALUES.header);
    expect(await storedValue(p.cloud, "Codex")).toBe(VALUES.oauth);
    expect(await storedValue(p.cloud, "Claude")).toBe(VALUES.anthropic);
    const row = (await p.cloud.core.services.secrets.rows({ scope: "project", projectId: p.cloud.projectId, organizationId: p.cloud.organizationId })).find((r) => r.name === "Header API")!;
    expect(row.valueSealed).toMatch(/^v1:/);
    expect(row.valueSealed).not.toContain(VALUES.header);
  });

  test("the agent arrives with its name and mode and a new token; no grants or rules are created", async () => {
    const shAgents = (await p.sh.call("GET", "/v1/agents")).body as any[];
    const cloudAgents = (await p.cloud.call("GET", "/v1/agents")).body as any[];
    const coder = cloudAgents.find((a) => a.identifier === "coder");
    expect(coder).toMatchObject({ name: "Coder", mode: "all", isDefault: false });
    expect(coder.accessToken).toMatch(/^agt_[0-9a-f]{64}$/);
    expect(coder.accessToken).not.toBe(shAgents.find((a) => a.identifier === "coder").accessToken);
    expect(cloudAgents.filter((a) => a.isDefault).map((a) => a.identifier)).toEqual(["default"]);
    expect((await p.cloud.call("GET", `/v1/agents/${coder.id}/grants`)).body.secrets).toEqual([]);
    expect((await p.cloud.call("GET", "/v1/policy/rules")).body.filter((r: any) => !r.isDefault)).toEqual([]);
  });

  test("re-running is idempotent: nothing imported, every item `already exists`", async () => {
    const again = await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: p.httpsUrl } });
    expect(again.status).toBe(200);
    expect(again.body.imported).toEqual({ secrets: 0, agents: 0, agentSecrets: 0, rules: 0 });
    expect(again.body.skipped.slice(3)).toEqual([
      { type: "generic", name: "Header API", reason: "already exists" },
      { type: "llm_b", name: "Codex", reason: "already exists" },
      { type: "llm_a", name: "Claude", reason: "already exists" },
      { type: "agent", name: "Default Agent", reason: "already exists" },
      { type: "agent", name: "Coder", reason: "already exists" },
    ]);
    expect((await p.cloud.call("GET", "/v1/secrets")).body).toHaveLength(3);
    expect((await p.cloud.call("GET", "/v1/agents")).body).toHaveLength(2);
  });

  test("the local project is unchanged by an export", async () => {
    expect(((await p.sh.call("GET", "/v1/secrets")).body as any[]).map((s) => s.name).sort()).toEqual(["Claude", "Codex", "Header API", "Vaulted"]);
    expect(await storedValue(p.sh, "Header API")).toBe(VALUES.header);
  });
});

describe("what export counts and sends", () => {
  test("policy rules: draft ∪ published logical rules; the Default Rule and other projects' rules are not counted", async () => {
    const p = await pair();
    const a = await ok(await p.sh.call("POST", "/v1/policy/rules", { body: { name: "A", action: "block", targets: [{ kind: "network", hostPattern: "a.example.com" }] } }));
    await ok(await p.sh.call("POST", "/v1/policy/publish"), 200);
    // A stays published (and enforced) after its draft is deleted; B exists only as a draft.
    expect((await p.sh.call("DELETE", `/v1/policy/rules/${a.id}`)).status).toBe(204);
    await ok(await p.sh.call("POST", "/v1/policy/rules", { body: { name: "B", action: "block", targets: [{ kind: "network", hostPattern: "b.example.com" }] } }));
    await ok(await p.sh.call("POST", "/v1/org/policy/rules", { key: p.sh.orgKey, body: { name: "Org", action: "block", targets: [{ kind: "network", hostPattern: "o.example.com" }] } }));
    const res = await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: p.httpUrl } });
    expect(res.status).toBe(200);
    expect(res.body.skipped.filter((s: any) => s.type === "policy")).toEqual([{ type: "policy", name: "2 policy rule(s)", reason: POLICY_REASON }]);
    expect(res.body.skipped.some((s: any) => s.type === "grants")).toBe(false);
  });

  test("grants count secret and connection grants; the project's app connections are listed, the organization's are not", async () => {
    const p = await pair();
    const { db, t } = p.sh.core.store;
    const now = new Date().toISOString();
    const connection = (id: string, scope: "project" | "organization") => ({
      id,
      scope,
      organizationId: p.sh.organizationId,
      projectId: scope === "project" ? p.sh.projectId : null,
      provider: "github",
      label: null,
      status: "connected" as const,
      scopes: [],
      metadata: null,
      credentialSealed: p.sh.core.services.deps.sealer.seal("{}"),
      version: 1,
      connectedAt: now,
      createdAt: now,
      updatedAt: now,
    });
    const projectConn = crypto.randomUUID();
    await db.insert(t.appConnections).values([connection(projectConn, "project"), connection(crypto.randomUUID(), "project"), connection(crypto.randomUUID(), "organization")]);
    const agent = await ok(await p.sh.call("POST", "/v1/agents", { body: { name: "G", identifier: "g", mode: "grants" } }));
    await db.insert(t.agentConnectionGrants).values({ agentId: agent.id, connectionId: projectConn, access: "full", allow: [], ask: [], resources: null, createdAt: now, updatedAt: now });
    const s = await ok(await p.sh.call("POST", "/v1/secrets", { body: { name: "S", type: "generic", value: "v-1", hostPattern: "s.example.com", injectionConfig: { headerName: "x-s" } } }));
    await ok(await p.sh.call("PUT", `/v1/agents/${agent.id}/grants/secrets/${s.id}`), 200);
    const res = await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: p.httpUrl } });
    expect(res.status).toBe(200);
    expect(res.body.skipped.slice(0, 2)).toEqual([
      { type: "grants", name: "2 agent grant(s)", reason: GRANTS_REASON },
      { type: "connections", name: "2 app connection(s)", reason: "App connections are not migrated. Reconnect the apps in the destination." },
    ]);
    expect(res.body.imported).toEqual({ secrets: 1, agents: 1, agentSecrets: 0, rules: 0 });
  });

  test("organization secrets stay behind and are listed; only the project's own secrets are sent", async () => {
    const p = await pair();
    await ok(await p.sh.call("POST", "/v1/org/secrets", { key: p.sh.orgKey, body: { name: "Org key", type: "generic", value: "org-value-1234", hostPattern: "org.example.com", injectionConfig: { headerName: "x-o" } } }));
    const res = await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: p.httpUrl } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      imported: { secrets: 0, agents: 0, agentSecrets: 0, rules: 0 },
      skipped: [
        { type: "organization", name: "1 organization secret(s)", reason: "Organization secrets are not migrated. Re-add them to the destination organization." },
        { type: "agent", name: "Default Agent", reason: "already exists" },
      ],
    });
    expect((await p.cloud.call("GET", "/v1/org/secrets", { key: p.cloud.orgKey })).body).toEqual([]);
    expect(res.text).not.toContain("org-value-1234");
  });

  test("nothing transferable: the cloud is not called and imported is all zeros", async () => {
    const p = await pair();
    const { orgs, apiKeys } = p.sh.core.services;
    const empty = await orgs.createProject(p.sh.organizationId, "Empty");
    const key = await apiKeys.keyFor({ kind: "project", userId: p.sh.core.bootstrap.userId, projectId: empty.id, organizationId: p.sh.organizationId });
    const closed = await freePort();
    const res = await p.sh.call("POST", "/v1/migrate/export", { key, body: { cloudApiKey: "svc_k", cloudUrl: `http://127.0.0.1:${closed}` } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ imported: { secrets: 0, agents: 0, agentSecrets: 0, rules: 0 }, skipped: [] });
  });

  test("a large project goes in several requests below the 1 MiB body limit, and all of it arrives", async () => {
    const p = await pair();
    const big = (i: number) => `${String(i).padStart(4, "0")}${"x".repeat(9000)}`;
    for (let i = 0; i < 130; i++) {
      await p.sh.core.services.secrets.create(
        { scope: "project", projectId: p.sh.projectId, organizationId: p.sh.organizationId },
        { name: `big-${i}`, type: "generic", value: big(i), hostPattern: "big.example.com", injectionConfig: { headerName: "x-big" } },
      );
    }
    const res = await p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: p.httpUrl } });
    expect(res.status).toBe(200);
    expect(res.body.imported).toEqual({ secrets: 130, agents: 0, agentSecrets: 0, rules: 0 });
    expect(p.received.length).toBeGreaterThan(1);
    for (const r of p.received) expect(r.bytes).toBeLessThan(1024 * 1024);
    expect(await storedValue(p.cloud, "big-0")).toBe(big(0));
    expect(await storedValue(p.cloud, "big-129")).toBe(big(129));
  });
});

describe("export failures: 400 `Cloud import failed: …`", () => {
  let p: Pair;
  beforeAll(async () => {
    p = await pair();
  });
  const exportTo = (cloudUrl: string, cloudApiKey = p.cloud.projectKey) => p.sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey, cloudUrl } });

  test("the cloud's error message: a wrong key", async () => {
    expectEnvelope(await exportTo(p.httpsUrl, `svc_${"0".repeat(64)}`), 400, "Cloud import failed: Invalid API key or token.");
  });

  test("a self-hosted instance in place of the cloud answers its unknown-route 404", async () => {
    const other = await createTestApi();
    const port = listen((req) => other.app.handle(req));
    expectEnvelope(await exportTo(`http://localhost:${port}`), 400, "Cloud import failed: Unrecognized request URL (POST: /v1/migrate/import).");
  });

  test("nothing listening → `could not reach <cloudUrl>`", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    expectEnvelope(await exportTo(url), 400, `Cloud import failed: could not reach ${url}`);
  });

  test("an untrusted certificate is not accepted (no CREDGATE_UPSTREAM_CA_FILE)", async () => {
    const port = Number(new URL(p.httpsUrl).port);
    const strict = await createTestApi({ CREDGATE_RESOLVE: `cloud.test:${port}:127.0.0.1` });
    const before = p.received.length;
    const res = await strict.call("POST", "/v1/migrate/export", { body: { cloudApiKey: p.cloud.projectKey, cloudUrl: p.httpsUrl } });
    expectEnvelope(res, 400, `Cloud import failed: could not reach ${p.httpsUrl}`);
    expect(p.received.length).toBe(before);
  });

  test("a status without an error body → `Cloud returned <status>`; an unexpected 200 body is refused", async () => {
    const port502 = listen(() => new Response("<html>bad gateway</html>", { status: 502 }));
    expectEnvelope(await exportTo(`http://127.0.0.1:${port502}`), 400, "Cloud import failed: Cloud returned 502");
    const port200 = listen(() => Response.json({ ok: true }));
    expectEnvelope(await exportTo(`http://127.0.0.1:${port200}`), 400, "Cloud import failed: Cloud returned 200 with an unexpected response");
  });

  test("redirects are not followed: the secrets never reach the redirect target", async () => {
    let hits = 0;
    const target = listen(() => {
      hits++;
      return Response.json({ imported: { secrets: 0, agents: 0, agentSecrets: 0, rules: 0 }, skipped: [] });
    });
    const redirect = listen(() => new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${target}/v1/migrate/import` } }));
    expectEnvelope(await exportTo(`http://127.0.0.1:${redirect}`), 400, "Cloud import failed: Cloud returned 307");
    expect(hits).toBe(0);
  });
});

describe("import on the cloud", () => {
  let cloud: TestApi;
  beforeAll(async () => {
    cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
  });
  const importBody = (body: unknown) => cloud.call("POST", "/v1/migrate/import", { body });
  const secret = (over: Record<string, unknown> = {}) => ({
    name: "s",
    type: "generic",
    value: "value-1",
    hostPattern: "api.example.com",
    pathPattern: null,
    injectionConfig: { headerName: "x-k" },
    metadata: null,
    ...over,
  });

  test("version must be 1: absent, 2 or \"1\" → 400 `Unsupported migration version`", async () => {
    for (const body of [{}, { version: 2 }, { version: "1" }, { version: null, secrets: [] }]) {
      expectFlat(await importBody(body), 400, "Unsupported migration version");
    }
    expectFlat(await importBody({ version: 1, secrets: {} }), 400, "secrets must be an array");
    expectFlat(await importBody({ version: 1, agents: "a" }), 400, "agents must be an array");
    expect((await importBody({ version: 1 })).body).toEqual({ imported: { secrets: 0, agents: 0, agentSecrets: 0, rules: 0 }, skipped: [] });
  });

  test("every item is validated on its own: bad items are skipped with the reason, the good ones are created", async () => {
    const res = await importBody({
      version: 1,
      secrets: [
        secret({ name: "good-1" }),
        null,
        secret({ name: "no-host", hostPattern: "https://api.example.com" }),
        secret({ name: "no-inject", injectionConfig: null }),
        secret({ name: "bad-type", type: "password" }),
        secret({ name: "empty", value: "" }),
        secret({ name: "unsafe-path", value: "a/b", injectionConfig: { pathTemplate: "/bot{value}" } }),
        secret({ name: "  ", value: "v" }),
        secret({ name: "good-1", value: "second copy" }),
        secret({ name: "good-2", type: "llm_a", value: "sk-ant-oat01-tok", hostPattern: "api.anthropic.com", injectionConfig: null, metadata: { authMode: "oauth" } }),
      ],
      agents: [
        { name: "Bot", identifier: "bot", isDefault: false, mode: "grants" },
        { name: "Bad", identifier: "Bad_Id", isDefault: false, mode: "all" },
        { name: "", identifier: "nameless" },
        { name: "Wrong mode", identifier: "wm", mode: "some" },
        "agent",
        { name: "Again", identifier: "default", isDefault: true, mode: "all" },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      imported: { secrets: 2, agents: 1, agentSecrets: 0, rules: 0 },
      skipped: [
        { type: "secret", name: "secrets[1]", reason: "secrets[1] must be an object" },
        { type: "generic", name: "no-host", reason: "Enter a hostname, not a URL (remove http:// or https://)" },
        { type: "generic", name: "no-inject", reason: "Header name, parameter name, or URL path template is required for generic secrets" },
        { type: "secret", name: "bad-type", reason: "type must be one of: llm_a, llm_b, generic" },
        { type: "generic", name: "empty", reason: "value is required" },
        { type: "generic", name: "unsafe-path", reason: PATH_VALUE },
        { type: "generic", name: "secrets[7]", reason: "name must be 1-255 characters" },
        { type: "generic", name: "good-1", reason: "already exists" },
        { type: "agent", name: "Bad", reason: IDENTIFIER_MESSAGE },
        { type: "agent", name: "agents[2]", reason: "name must be 1-255 characters" },
        { type: "agent", name: "Wrong mode", reason: "mode must be one of: all, grants" },
        { type: "agent", name: "agents[4]", reason: "agents[4] must be an object" },
        { type: "agent", name: "Again", reason: "already exists" },
      ],
    });
    const names = ((await cloud.call("GET", "/v1/secrets")).body as any[]).map((s) => s.name).sort();
    expect(names).toEqual(["good-1", "good-2"]);
    expect(await storedValue(cloud, "good-1")).toBe("value-1");
    const agents = (await cloud.call("GET", "/v1/agents")).body as any[];
    expect(agents.map((a) => [a.identifier, a.mode, a.isDefault]).sort()).toEqual([
      ["bot", "grants", false],
      ["default", "all", true],
    ]);
  });

  test("import is a project-key operation on its own project; an org key needs X-Project-Id", async () => {
    expectEnvelope(await cloud.call("POST", "/v1/migrate/import", { key: cloud.orgKey, body: { version: 1 } }), 401, "Invalid API key or token.");
    const res = await cloud.call("POST", "/v1/migrate/import", {
      key: cloud.orgKey,
      headers: { "x-project-id": cloud.projectId },
      body: { version: 1, agents: [{ name: "Via org key", identifier: "via-org", isDefault: false, mode: "all" }] },
    });
    expect(res.body.imported.agents).toBe(1);
  });
});
