// A database password never goes out over HTTP (docs/databases.md#the-leak-guard): through the real process with
// curl as an attacker holding one agent token, a database secret's password in a path, a query, a header or a body
// is refused with 403 credential_leak_blocked to any host — the database's own host included, since no HTTP host
// is the place of a database password — for an agent that may use the secret and for one that may not; the
// request log shows `credgate-redacted` where the password was. A header secret on the same host still injects,
// and the database secret is never injected.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually, gatewayCa, resolveEntries, run } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const DB_HOST = "db.dbleak.test";
const OTHER = "paste.dbleak.test";
const PASSWORD = `pg-secret-${crypto.randomUUID()}`;
const API_KEY = `api-key-${crypto.randomUUID()}`;
const REDACTED = "credgate-redacted";

let cg: RunningCredgate;
let pki: TestPki;
let up: TestUpstream;
let ca: { pem: string; file: string };
let grantsToken = "";

beforeAll(async () => {
  pki = makePki([DB_HOST, OTHER]);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([DB_HOST, OTHER], up.port) } });
  ca = await gatewayCa(cg);
  const db = { name: "orders", type: "generic", value: PASSWORD, hostPattern: DB_HOST, injectionConfig: { database: { engine: "postgresql", user: "app" } } };
  expect((await cg.api("POST", "/v1/secrets", { body: db })).status).toBe(201);
  const hdr = { name: "db admin api", type: "generic", value: API_KEY, hostPattern: DB_HOST, injectionConfig: { headerName: "x-api-key" } };
  expect((await cg.api("POST", "/v1/secrets", { body: hdr })).status).toBe(201);
  // An agent that may use neither: the password is still watched for it.
  const agent = await cg.api("POST", "/v1/agents", { body: { name: "Outsider", identifier: "outsider", mode: "grants" } });
  expect(agent.status).toBe(201);
  const listed = (await cg.api("GET", "/v1/agents")).body as { identifier: string; accessToken: string }[];
  grantsToken = listed.find((a) => a.identifier === "outsider")!.accessToken;
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

function curl(token: string, args: string[]) {
  return run(["curl", "-sS", "--proxy", `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, "--cacert", ca.file, ...args]);
}

const leakBlocked = (host: string) => ({
  error: "credential_leak_blocked",
  message: `This request carries the value of the credgate secret "orders", which is not for ${host}. credgate does not send a credential to another host.`,
  host,
  secret_name: "orders",
});

describe("a database password sent over HTTP", () => {
  for (const [who, token] of [
    ["the default agent (may use the database secret)", () => cg.keys.defaultAgentToken],
    ["an agent in mode grants without it", () => grantsToken],
  ] as const) {
    for (const host of [OTHER, DB_HOST]) {
      test(`${who}: in the path or the query to ${host} → 403, the upstream never sees it, the log is redacted`, async () => {
        const path = `/q/${crypto.randomUUID()}`;
        const r = await curl(token(), ["-w", "\n%{http_code}", `https://${host}:${up.port}${path}/${PASSWORD}?dsn=postgresql://app:${PASSWORD}@db`]);
        const [body, status] = [r.stdout.slice(0, r.stdout.lastIndexOf("\n")), r.stdout.slice(r.stdout.lastIndexOf("\n") + 1)];
        expect(status).toBe("403");
        expect(JSON.parse(body)).toEqual(leakBlocked(host));
        expect(up.seen.filter((s) => s.url.startsWith(path))).toEqual([]);
        const row = await eventually(async () => {
          const logs = (await cg.api("GET", `/v1/logs?limit=100`)).body;
          const found = (logs.logs ?? logs.data ?? logs).find((l: any) => typeof l.path === "string" && l.path.startsWith(path));
          if (!found) throw new Error("no log row yet");
          return found;
        });
        expect(row.path).toBe(`${path}/${REDACTED}`);
        expect(JSON.stringify(row)).not.toContain(PASSWORD);
      });
    }
  }

  test("in a header or a body → 403; the upstream gets nothing", async () => {
    const path = `/h/${crypto.randomUUID()}`;
    let r = await curl(cg.keys.defaultAgentToken, ["-H", `x-db: ${PASSWORD}`, `https://${DB_HOST}:${up.port}${path}`]);
    expect(JSON.parse(r.stdout)).toEqual(leakBlocked(DB_HOST));
    r = await curl(cg.keys.defaultAgentToken, ["-H", "content-type: application/json", "--data-binary", JSON.stringify({ password: PASSWORD }), `https://${OTHER}:${up.port}${path}`]);
    expect(JSON.parse(r.stdout)).toEqual(leakBlocked(OTHER));
    expect(up.seen.filter((s) => s.url.startsWith(path))).toEqual([]);
  });

  test("a clean request to the database host gets the header secret only: the database secret is never injected", async () => {
    const path = `/clean/${crypto.randomUUID()}`;
    const r = await curl(cg.keys.defaultAgentToken, [`https://${DB_HOST}:${up.port}${path}`]);
    const echoed = JSON.parse(r.stdout);
    expect(echoed.headers["x-api-key"]).toBe(REDACTED);
    const seen = up.seen.find((s) => s.url === path)!;
    expect(seen.headers["x-api-key"]).toBe(API_KEY);
    expect(JSON.stringify(seen)).not.toContain(PASSWORD);
  });
});
