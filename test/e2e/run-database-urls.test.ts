// `credgate run` hands an agent its database URLs (docs/databases.md#connecting, docs/configuration.md#credgate-run):
// through the real process, an agent with one database credential gets CREDGATE_DB_<NAME>_URL and the PG* variables
// on the gateway's loopback host with sslmode=disable, and the real psql (libpq) reads them: it dials the database
// listener's port as the secret's name and sends the agent's token as the password (to a stand-in that records
// them and refuses: this test needs no broker to show where libpq goes). Two credentials: one URL each, no PG*
// variables. An agent with none keeps the user's own PG* variables. container-config: the container's host, TLS
// verified against the CA file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { credgateCommand, startCredgate, type RunningCredgate } from "../support/process.ts";
import { freePort } from "../support/ports.ts";
import { until } from "../support/gateway.ts";

let cg: RunningCredgate;
/** Stands in for the database listener: asks for a cleartext password, records the startup and the password, then refuses. */
let listener: Server;
const seen: { params: Record<string, string>; password: string }[] = [];
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

/** The key=value parameters of a v3 StartupMessage. */
function startupParams(b: Buffer): Record<string, string> {
  const parts = b.subarray(8).toString("utf8").split("\0");
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < parts.length && parts[i] !== ""; i += 2) out[parts[i]!] = parts[i + 1]!;
  return out;
}

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}

beforeAll(async () => {
  const dbPort = await freePort();
  listener = createServer((s: Socket) => {
    let buf = Buffer.alloc(0);
    let params: Record<string, string> | null = null;
    s.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (params === null) {
        if (buf.length < 4 || buf.length < buf.readInt32BE(0)) return;
        params = startupParams(buf.subarray(0, buf.readInt32BE(0)));
        buf = buf.subarray(buf.readInt32BE(0));
        // AuthenticationCleartextPassword.
        s.write(message("R", Buffer.from([0, 0, 0, 3])));
      }
      if (buf.length < 5 || buf.length < 1 + buf.readInt32BE(1)) return;
      seen.push({ params, password: buf.subarray(5, buf.readInt32BE(1)).toString("utf8").replace(/\0$/, "") });
      s.end(message("E", Buffer.from("SFATAL\0C28000\0Mstand-in listener\0\0")));
    });
  });
  await new Promise<void>((r) => listener.listen(dbPort, "127.0.0.1", r));
  cg = await startCredgate({ dbPort });
  const secret = async (name: string, cfg: Record<string, unknown>) => {
    const r = await cg.api("POST", "/v1/secrets", { body: { name, type: "generic", value: `${name}-real-password-123`, hostPattern: "db.run.test", injectionConfig: { database: { engine: "postgresql", user: "app", ...cfg } } } });
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
  listener?.close();
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

  test("psql reads them: by URL and by the PG* variables alone, it dials the listener as the secret, with the agent's token", async () => {
    const before = seen.length;
    const byUrl = await run(["--agent", "one", "--", "sh", "-c", 'psql "$CREDGATE_DB_ORDERS_URL" -c "select 1"']);
    expect(byUrl.code).not.toBe(0);
    expect(byUrl.stderr).toContain("stand-in listener");
    const byEnv = await run(["--agent", "one", "--", "psql", "-c", "select 1"]);
    expect(byEnv.stderr).toContain("stand-in listener");
    await until(() => seen.length >= before + 2);
    for (const s of seen.slice(before)) {
      expect(s.params).toMatchObject({ user: "orders", database: "orders_db" });
      expect(s.password).toBe(tokens.one!);
    }
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
