// The `database` secret variant through the API (docs/databases.md#the-database-secret): every validation
// message in order, the checks that need the host (exact host, tls off only on loopback) on create and on
// edits, the stored form with its defaults, the refusal for partner secrets; then which database credentials an
// agent gets (the real GatewaySnapshot over the same services, and container-config's URLs): mode and grants,
// a project's over its organization's of the same name, never injected into HTTP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { expectEnvelope, expectFlat } from "./helpers.ts";

const SHAPE =
  "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}";
const EXACT = "a database secret needs an exact host";
const TLS_OFF = "tls off is only allowed for a loopback database";
const PASSWORD = "pg-password-0123456789-abcdef";

let api: TestApi;
beforeAll(async () => {
  api = await createTestApi();
});
afterAll(async () => {
  await api?.core.close();
});

let seq = 0;
const db = (cfg: unknown, over: Record<string, unknown> = {}) => ({ name: `db-${++seq}`, type: "generic", value: PASSWORD, hostPattern: "db.example.com", injectionConfig: { database: cfg }, ...over });
const post = (body: unknown, path = "/v1/secrets", key?: string) => api.call("POST", path, { body, ...(key ? { key } : {}) });
const F = (f: string) => `injectionConfig.database.${f}`;

describe("validation", () => {
  test.each([
    ["not an object", "postgresql", "injectionConfig.database must be an object"],
    ["an array", ["postgresql"], "injectionConfig.database must be an object"],
    ["an unknown field", { engine: "postgresql", user: "app", password: "x" }, 'injectionConfig.database has unknown field "password"'],
    ["no engine", { user: "app" }, `${F("engine")} is required`],
    ["engine null", { engine: null, user: "app" }, `${F("engine")} is required`],
    ["another engine", { engine: "mysql", user: "app" }, `${F("engine")} must be one of: postgresql`],
    ["port a string", { engine: "postgresql", port: "5432", user: "app" }, `${F("port")} must be an integer`],
    ["port fractional", { engine: "postgresql", port: 5432.5, user: "app" }, `${F("port")} must be an integer`],
    ["port 0", { engine: "postgresql", port: 0, user: "app" }, `${F("port")} must be between 1 and 65535`],
    ["port 65536", { engine: "postgresql", port: 65536, user: "app" }, `${F("port")} must be between 1 and 65535`],
    ["no user", { engine: "postgresql" }, `${F("user")} is required`],
    ["user a number", { engine: "postgresql", user: 7 }, `${F("user")} must be a string`],
    ["user empty", { engine: "postgresql", user: "" }, `${F("user")} must be 1-63 characters`],
    ["user 64 characters", { engine: "postgresql", user: "u".repeat(64) }, `${F("user")} must be 1-63 characters`],
    ["user with NUL", { engine: "postgresql", user: "a\u0000b" }, `${F("user")} must not contain NUL characters`],
    ["databases a string", { engine: "postgresql", user: "app", databases: "app" }, `${F("databases")} must be an array`],
    ["databases empty", { engine: "postgresql", user: "app", databases: [] }, `${F("databases")} must have 1-100 items`],
    ["databases 101", { engine: "postgresql", user: "app", databases: Array.from({ length: 101 }, (_, i) => `d${i}`) }, `${F("databases")} must have 1-100 items`],
    ["a database not a string", { engine: "postgresql", user: "app", databases: ["app", 3] }, `${F("databases")}[1] must be a string`],
    ["a database too long", { engine: "postgresql", user: "app", databases: ["d".repeat(64)] }, `${F("databases")}[0] must be 1-63 characters`],
    ["tls unknown", { engine: "postgresql", user: "app", tls: "verify-ca" }, `${F("tls")} must be one of: verify-full, require, off`],
    ["readOnly a string", { engine: "postgresql", user: "app", readOnly: "yes" }, `${F("readOnly")} must be a boolean`],
    ["writes unknown", { engine: "postgresql", user: "app", writes: "ask" }, `${F("writes")} must be one of: allow, approve, block`],
  ])("%s → 400", async (_label, cfg, message) => {
    expectFlat(await post(db(cfg)), 400, message);
  });

  test("mixed with another variant → the shape message, which names {database}", async () => {
    expectFlat(await post({ ...db({ engine: "postgresql", user: "app" }), injectionConfig: { database: { engine: "postgresql", user: "app" }, headerName: "x" } }), 400, SHAPE);
  });

  test("a wildcard host → exact host; tls off on a remote host → loopback only; both on the organization route too", async () => {
    for (const [path, key] of [["/v1/secrets", api.projectKey], ["/v1/org/secrets", api.orgKey]] as const) {
      expectFlat(await post(db({ engine: "postgresql", user: "app" }, { hostPattern: "*.example.com" }), path, key), 400, EXACT);
      expectFlat(await post(db({ engine: "postgresql", user: "app", tls: "off" }), path, key), 400, TLS_OFF);
      expectFlat(await post(db({ engine: "postgresql", user: "app", tls: "off" }, { hostPattern: "10.0.0.5" }), path, key), 400, TLS_OFF);
    }
    // Nothing was stored by the refusals.
    expect((await api.call("GET", "/v1/secrets")).body.filter((s: any) => s.injectionConfig?.database)).toEqual([]);
  });

  test("tls off on loopback hosts is accepted: localhost, 127.0.0.0/8, ::1", async () => {
    for (const host of ["localhost", "127.0.0.1", "127.9.8.7", "::1"]) {
      const r = await post(db({ engine: "postgresql", user: "app", tls: "off" }, { hostPattern: host }));
      expect(r.status).toBe(201);
    }
  });

  test("an IPv6 host stored as [::1] reaches the snapshot bare, ready to dial", async () => {
    const r = await post(db({ engine: "postgresql", user: "app", tls: "off" }, { name: "v6", hostPattern: "[::1]" }));
    expect(r.status).toBe(201);
    const agent = ((await api.call("GET", "/v1/agents")).body as { isDefault: boolean; accessToken: string }[]).find((a) => a.isDefault)!;
    const snapshot = await GatewaySnapshot.create(api.core.services);
    const creds = await snapshot.credentials((await snapshot.agentForToken(agent.accessToken))!);
    expect(creds.databases.get("v6")).toMatchObject({ host: "::1", tls: "off" });
  });

  test("a password with a NUL character → 400 (the wire's C strings cannot carry it)", async () => {
    expectFlat(await post(db({ engine: "postgresql", user: "app" }, { value: "pass\u0000word" })), 400, "value must not contain NUL characters");
  });
});

describe("stored form and edits", () => {
  test("defaults written out; databases kept (duplicates dropped); the value never shown", async () => {
    const r = await post(db({ engine: "postgresql", user: "app" }));
    expect(r.status).toBe(201);
    expect(r.body.preview).toBe("pg-p••••••••cdef");
    const got = (await api.call("GET", `/v1/secrets/${r.body.id}`)).body;
    expect(got.injectionConfig).toEqual({ database: { engine: "postgresql", port: 5432, user: "app", tls: "verify-full", readOnly: false, writes: "allow" } });
    expect(JSON.stringify(got)).not.toContain(PASSWORD);
    const full = await post(db({ engine: "postgresql", port: 6432, user: "reporter", databases: ["sales", "hr", "sales"], tls: "require", readOnly: true, writes: "block" }));
    const listed = (await api.call("GET", "/v1/secrets")).body.find((s: any) => s.id === full.body.id);
    expect(listed.injectionConfig).toEqual({ database: { engine: "postgresql", port: 6432, user: "reporter", databases: ["sales", "hr"], tls: "require", readOnly: true, writes: "block" } });
    expect(JSON.stringify((await api.call("GET", "/v1/secrets")).body)).not.toContain(PASSWORD);
  });

  test("an edit to a wildcard host, or to tls off on a remote host, is refused; the stored secret is unchanged", async () => {
    const id = (await post(db({ engine: "postgresql", user: "app" }))).body.id;
    expectFlat(await api.call("PATCH", `/v1/secrets/${id}`, { body: { hostPattern: "*.example.com" } }), 400, EXACT);
    expectFlat(await api.call("PATCH", `/v1/secrets/${id}`, { body: { injectionConfig: { database: { engine: "postgresql", user: "app", tls: "off" } } } }), 400, TLS_OFF);
    expectFlat(await api.call("PATCH", `/v1/secrets/${id}`, { body: { injectionConfig: { database: { engine: "postgresql" } } } }), 400, `${F("user")} is required`);
    const got = (await api.call("GET", `/v1/secrets/${id}`)).body;
    expect(got.hostPattern).toBe("db.example.com");
    expect(got.injectionConfig.database.tls).toBe("verify-full");
    // Both at once to a loopback host: accepted.
    expect((await api.call("PATCH", `/v1/secrets/${id}`, { body: { hostPattern: "127.0.0.1", injectionConfig: { database: { engine: "postgresql", user: "app", tls: "off", writes: "approve" } } } })).status).toBe(200);
    expect((await api.call("GET", `/v1/secrets/${id}`)).body.injectionConfig.database).toEqual({ engine: "postgresql", port: 5432, user: "app", tls: "off", readOnly: false, writes: "approve" });
    // Back to a remote host while tls is off: refused.
    expectFlat(await api.call("PATCH", `/v1/secrets/${id}`, { body: { hostPattern: "db.example.com" } }), 400, TLS_OFF);
  });

  test("a header secret on a wildcard host becoming a database secret → exact host", async () => {
    const id = (await post({ name: "hdr", type: "generic", value: "v", hostPattern: "*.example.com", injectionConfig: { headerName: "x-key" } })).body.id;
    expectFlat(await api.call("PATCH", `/v1/secrets/${id}`, { body: { injectionConfig: { database: { engine: "postgresql", user: "app" } } } }), 400, EXACT);
  });
});

describe("cloud: partner secrets and migration import", () => {
  let cloud: TestApi;
  beforeAll(async () => {
    cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
  });
  afterAll(async () => {
    await cloud?.core.close();
  });

  test("a partner cannot hold a database secret", async () => {
    const { partnerKey } = await cloud.core.services.partners.create("Db Partner", "owner@dbpartner.test");
    const r = await cloud.call("POST", "/v1/partner/secrets", { key: partnerKey, body: db({ engine: "postgresql", user: "app" }) });
    expectEnvelope(r, 400, "database secrets belong to a project or an organization");
  });

  test("an imported database secret gets the same rules and the stored form; a wildcard one is skipped with the message", async () => {
    const r = await cloud.call("POST", "/v1/migrate/import", {
      body: {
        version: 1,
        secrets: [
          { name: "imported-db", type: "generic", value: PASSWORD, hostPattern: "db.example.com", injectionConfig: { database: { engine: "postgresql", user: "app", writes: "approve" } } },
          { name: "wild-db", type: "generic", value: PASSWORD, hostPattern: "*.example.com", injectionConfig: { database: { engine: "postgresql", user: "app" } } },
        ],
        agents: [],
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.imported.secrets).toBe(1);
    expect(r.body.skipped).toEqual([{ type: "generic", name: "wild-db", reason: EXACT }]);
    const stored = (await cloud.call("GET", "/v1/secrets")).body.find((s: any) => s.name === "imported-db");
    expect(stored.injectionConfig).toEqual({ database: { engine: "postgresql", port: 5432, user: "app", tls: "verify-full", readOnly: false, writes: "approve" } });
  });
});

describe("which database credentials an agent gets", () => {
  let own: TestApi;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    own = await createTestApi();
    const make = async (name: string, host: string, cfg: Record<string, unknown>, org = false) => {
      const r = await own.call("POST", org ? "/v1/org/secrets" : "/v1/secrets", { key: org ? own.orgKey : own.projectKey, body: { name, type: "generic", value: `${name}-password-123456`, hostPattern: host, injectionConfig: { database: { engine: "postgresql", user: "u", ...cfg } } } });
      expect(r.status).toBe(201);
      ids[`${org ? "org" : "project"}:${name}`] = r.body.id;
    };
    await make("main", "db.project.test", { databases: ["app", "other"] });
    await make("main", "db.org.test", {}, true);
    await make("reports", "db.org.test", { readOnly: true }, true);
    const hdr = await own.call("POST", "/v1/secrets", { body: { name: "api", type: "generic", value: "api-key-0123456789", hostPattern: "api.test", injectionConfig: { headerName: "x-key" } } });
    ids.api = hdr.body.id;
  });
  afterAll(async () => {
    await own?.core.close();
  });

  async function view(identifier: string | null) {
    const agents = (await own.call("GET", "/v1/agents")).body as { id: string; identifier: string; accessToken: string; isDefault: boolean }[];
    const agent = agents.find((a) => (identifier === null ? a.isDefault : a.identifier === identifier))!;
    const snapshot = await GatewaySnapshot.create(own.core.services);
    const creds = await snapshot.credentials((await snapshot.agentForToken(agent.accessToken))!);
    const config = (await own.call("GET", `/v1/container-config${identifier ? `?agent=${identifier}` : ""}`)).body;
    return { agent, creds, env: config.env as Record<string, string> };
  }

  test("mode all: every database secret by name, the project's over the organization's; none is injectable over HTTP", async () => {
    const { agent, creds, env } = await view(null);
    expect([...creds.databases.keys()].sort()).toEqual(["main", "reports"]);
    expect(creds.databases.get("main")).toEqual({
      secretId: ids["project:main"]!,
      name: "main",
      scope: "project",
      host: "db.project.test",
      port: 5432,
      user: "u",
      password: "main-password-123456",
      valueRef: null,
      databases: ["app", "other"],
      tls: "verify-full",
      readOnly: false,
      writes: "allow",
    });
    expect(creds.databases.get("reports")).toMatchObject({ scope: "organization", host: "db.org.test", databases: null, readOnly: true });
    expect(creds.injectable.map((s) => s.id)).toEqual([ids.api!]);
    // Still watched by the leak guard: visible holds them.
    expect(creds.visible.map((s) => s.id).sort()).toEqual(Object.values(ids).sort());
    // container-config: one URL each; two credentials, so no PG* variables.
    const token = agent.accessToken;
    expect(env.CREDGATE_DB_MAIN_URL).toBe(`postgresql://main:${token}@host.docker.internal:10256/app?sslmode=verify-full&sslrootcert=%2Ftmp%2Fcredgate-gateway-ca.pem`);
    expect(env.CREDGATE_DB_REPORTS_URL).toBe(`postgresql://reports:${token}@host.docker.internal:10256/?sslmode=verify-full&sslrootcert=%2Ftmp%2Fcredgate-gateway-ca.pem`);
    expect(Object.keys(env).filter((k) => k.startsWith("PG"))).toEqual([]);
  });

  test("mode grants: only what is granted; exactly one → the PG* variables, PGDATABASE when the URL names one", async () => {
    const created = await own.call("POST", "/v1/agents", { body: { name: "Reporter", identifier: "reporter", mode: "grants" } });
    expect(created.status).toBe(201);
    let v = await view("reporter");
    expect(v.creds.databases.size).toBe(0);
    expect(Object.keys(v.env).filter((k) => k.startsWith("PG") || k.startsWith("CREDGATE_DB_"))).toEqual([]);

    expect((await own.call("PUT", `/v1/agents/${created.body.id}/grants/secrets/${ids["org:main"]}`)).status).toBe(200);
    v = await view("reporter");
    // The organization's "main" now: the project's of the same name is not granted.
    expect(v.creds.databases.get("main")).toMatchObject({ secretId: ids["org:main"], scope: "organization", databases: null });
    const token = v.agent.accessToken;
    expect(v.env).toMatchObject({
      CREDGATE_DB_MAIN_URL: `postgresql://main:${token}@host.docker.internal:10256/?sslmode=verify-full&sslrootcert=%2Ftmp%2Fcredgate-gateway-ca.pem`,
      PGHOST: "host.docker.internal",
      PGPORT: "10256",
      PGUSER: "main",
      PGPASSWORD: token,
      PGSSLMODE: "verify-full",
      PGSSLROOTCERT: "/tmp/credgate-gateway-ca.pem",
    });
    expect(v.env.PGDATABASE).toBeUndefined();

    expect((await own.call("PUT", `/v1/agents/${created.body.id}/grants/secrets/${ids["project:main"]}`)).status).toBe(200);
    v = await view("reporter");
    expect(v.creds.databases.get("main")!.secretId).toBe(ids["project:main"]!);
    expect(v.env.PGDATABASE).toBe("app");
    expect(v.env.CREDGATE_DB_MAIN_URL).toContain("@host.docker.internal:10256/app?");
  });

  test("with the listener off (CREDGATE_DB_PORT=0), container-config hands out no database URL", async () => {
    const off = await createTestApi({ CREDGATE_DB_PORT: "0" });
    try {
      const r = await off.call("POST", "/v1/secrets", { body: { name: "main", type: "generic", value: "pw-123456789012", hostPattern: "db.test", injectionConfig: { database: { engine: "postgresql", user: "u" } } } });
      expect(r.status).toBe(201);
      const env = (await off.call("GET", "/v1/container-config")).body.env as Record<string, string>;
      expect(Object.keys(env).filter((k) => k.startsWith("PG") || k.startsWith("CREDGATE_DB_"))).toEqual([]);
    } finally {
      await off.core.close();
    }
  });
});
