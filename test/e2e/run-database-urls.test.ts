// `credgate run` hands an agent its database URLs (docs/databases.md#connecting, docs/configuration.md#credgate-run):
// through the real process, an agent with one database credential gets CREDGATE_DB_<NAME>_URL and the PG* variables
// on the gateway's loopback host with sslmode=disable, and the real psql (libpq) reads them: it reaches the broker as
// the secret's name with the agent's token, which lets it through to the upstream dial (here to a closed loopback
// port, so the answer is credgate's 08006 rather than an authentication refusal). Two credentials: one URL each, no
// PG* variables. An agent with none keeps the user's own PG* variables. container-config: the container's host, TLS
// verified against the CA file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { credgateCommand, startCredgate, type RunningCredgate } from "../support/process.ts";
import { freePort } from "../support/ports.ts";

let cg: RunningCredgate;
let tokens: Record<string, string> = {};

async function run(cmd: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([...credgateCommand(), "run", ...cmd], {
    env: { ...process.env, CREDGATE_URL: cg.apiUrl, CREDGATE_API_KEY: cg.keys.projectApiKey, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

function envOf(stdout: string): Record<string, string> {
  return Object.fromEntries(
    stdout
      .split("\0")
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

beforeAll(async () => {
  // The database the credentials name resolves to a loopback port nobody listens on.
  const closedPort = await freePort();
  cg = await startCredgate({ env: { CREDGATE_RESOLVE: `db.run.test:${closedPort}:127.0.0.1` } });
  const secret = async (name: string, cfg: Record<string, unknown>) => {
    const r = await cg.api("POST", "/v1/secrets", { body: { name, type: "generic", value: `${name}-real-password-123`, hostPattern: "db.run.test", injectionConfig: { database: { engine: "postgresql", user: "app", port: closedPort, tls: "require", ...cfg } } } });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };
  const orders = await secret("orders", { databases: ["orders_db"] });
  await secret("Reporting-EU", {});
  const one = await cg.api("POST", "/v1/agents", { body: { name: "One", identifier: "one", mode: "grants" } });
  expect((await cg.api("PUT", `/v1/agents/${one.body.id}/grants/secrets/${orders}`)).status).toBe(200);
  expect((await cg.api("POST", "/v1/agents", { body: { name: "None", identifier: "none", mode: "grants" } })).status).toBe(201);
  tokens = Object.fromEntries(((await cg.api("GET", "/v1/agents")).body as { identifier: string; accessToken: string; isDefault: boolean }[]).map((a) => [a.isDefault ? "default" : a.identifier, a.accessToken]));
}, 60_000);

afterAll(async () => {
  await cg?.stop();
});

describe("credgate run: database URLs", () => {
  test("one credential: its URL and the PG* variables on loopback, sslmode=disable", async () => {
    const r = await run(["--agent", "one", "--", "env", "-0"]);
    expect(r.code).toBe(0);
    const env = envOf(r.stdout);
    const token = tokens.one!;
    expect(env.CREDGATE_DB_ORDERS_URL).toBe(`postgresql://orders:${token}@localhost:${cg.dbPort}/orders_db?sslmode=disable`);
    expect([env.PGHOST, env.PGPORT, env.PGUSER, env.PGPASSWORD, env.PGSSLMODE, env.PGDATABASE]).toEqual(["localhost", String(cg.dbPort), "orders", token, "disable", "orders_db"]);
    expect(env.PGSSLROOTCERT).toBeUndefined();
    expect(env.CREDGATE_DB_REPORTING_EU_URL).toBeUndefined();
    // Never the real password.
    expect(r.stdout).not.toContain("real-password");
  });

  test("psql reads them: by URL and by the PG* variables alone, it reaches the broker as the secret, with the agent's token", async () => {
    // An unknown token or secret would be refused at authentication (28P01, 28000); this one gets as far as the dial.
    const byUrl = await run(["--agent", "one", "--", "sh", "-c", 'psql "$CREDGATE_DB_ORDERS_URL" -c "select 1"']);
    expect(byUrl.code).not.toBe(0);
    expect(byUrl.stderr).toContain("credgate: could not connect to the database");
    const byEnv = await run(["--agent", "one", "--", "psql", "-c", "select 1"]);
    expect(byEnv.code).not.toBe(0);
    expect(byEnv.stderr).toContain("credgate: could not connect to the database");
    // The control: the same URL with another agent's token is refused at authentication.
    const other = await run(["--agent", "one", "--", "sh", "-c", `psql "postgresql://orders:${tokens.none}@localhost:${cg.dbPort}/orders_db?sslmode=disable" -c "select 1"`]);
    expect(other.stderr).toContain('credgate: no database credential "orders" for this agent');
    for (const r of [byUrl, byEnv]) expect(r.stderr + r.stdout).not.toContain("real-password");
  });

  test("two credentials: one URL each (names made variable names), no PG* variables", async () => {
    const r = await run(["--", "env", "-0"], { PGHOST: "", PGUSER: "" });
    const env = envOf(r.stdout);
    const token = tokens.default!;
    expect(env.CREDGATE_DB_ORDERS_URL).toBe(`postgresql://orders:${token}@localhost:${cg.dbPort}/orders_db?sslmode=disable`);
    expect(env.CREDGATE_DB_REPORTING_EU_URL).toBe(`postgresql://Reporting-EU:${token}@localhost:${cg.dbPort}/?sslmode=disable`);
    expect(env.PGHOST).toBe("");
    expect(env.PGPASSWORD).toBeUndefined();
  });

  test("no database credential: nothing added, the user's own PG* variables kept", async () => {
    const r = await run(["--agent", "none", "--", "env", "-0"], { PGHOST: "mine.example", PGUSER: "me" });
    const env = envOf(r.stdout);
    expect(Object.keys(env).filter((k) => /^CREDGATE_DB_.*_URL$/.test(k))).toEqual([]);
    expect([env.PGHOST, env.PGUSER]).toEqual(["mine.example", "me"]);
  });

  test("container-config: the container's host, verified against the CA file", async () => {
    const env = (await cg.api("GET", "/v1/container-config?agent=one")).body.env;
    expect(env.CREDGATE_DB_ORDERS_URL).toBe(`postgresql://orders:${tokens.one}@host.docker.internal:${cg.dbPort}/orders_db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fcredgate-gateway-ca.pem`);
    expect(env).toMatchObject({ PGHOST: "host.docker.internal", PGSSLMODE: "verify-full", PGSSLROOTCERT: "/tmp/credgate-gateway-ca.pem" });
  });
});
