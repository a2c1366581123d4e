// `credgate rotate-master-key` (docs/operations.md#rotating-the-master-key) on a data dir a real credgate filled with every kind of sealed
// value: an inline secret, API keys and agent tokens, an OAuth app configuration (client secret), an OAuth
// connection (tokens) and an API-key connection. After the rotation and a restart with the new key, the old
// secret is still injected through the real gateway into a TLS upstream, the OAuth token too, and the old API
// key still works. Every sealed value in the store opens with the new key and none with the old one — found
// by scanning every text column of every table, and every `*_sealed` column of the schema must have been
// filled by this fixture, so a sealed column added later fails here until it is covered.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createDecipheriv, generateKeyPairSync } from "node:crypto";
import { readFileSync, statSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { getTableColumns, getTableName, is, sql, Table } from "drizzle-orm";
import * as pgSchema from "../../src/store/schema.pg.ts";
import * as sqliteSchema from "../../src/store/schema.sqlite.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { startFakeGithub } from "../support/fakeGithub.ts";
import { gatewayCa, resolveEntries, until } from "../support/gateway.ts";
import { oauthFlow } from "../support/oauthFlow.ts";
import { startOAuthServer, type OAuthTestServer } from "../support/oauthServer.ts";
import { freePort } from "../support/ports.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.rotate.test";
const SECRET = `sk_rotate_${crypto.randomUUID().replace(/-/g, "")}`;
const RESEND_KEY = `re_rotate_${crypto.randomUUID().replace(/-/g, "")}`;
const CLIENT_ID = "Iv1.credgate-rotate";
const CLIENT_SECRET = `rotate-client-secret-${crypto.randomUUID()}`;

let pki: TestPki;
let up: TestUpstream;
let oauth: OAuthTestServer;
let cg: RunningCredgate;
let apiPort: number;
let publicUrl: string;
let env: Record<string, string>;
let caFile: string;

/** AES-256-GCM `v1:iv:tag:ct` opened with node:crypto directly (not credgate's Sealer): the plaintext, or null. */
function openWith(key: Buffer, sealed: string): string | null {
  const [v, iv, tag, ct] = sealed.split(":");
  if (v !== "v1" || !iv || !tag || ct === undefined) return null;
  try {
    const d = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"));
    d.setAuthTag(Buffer.from(tag, "base64"));
    return Buffer.concat([d.update(Buffer.from(ct, "base64")), d.final()]).toString("utf8");
  } catch {
    return null;
  }
}

/** Every text column of every table (the schema of the engine under test). */
function textColumns(): { table: string; column: string }[] {
  const schema = env.CREDGATE_DATABASE_URL ? pgSchema : sqliteSchema;
  const out: { table: string; column: string }[] = [];
  for (const t of Object.values(schema)) {
    if (!is(t, Table)) continue;
    for (const c of Object.values(getTableColumns(t))) if (c.dataType === "string") out.push({ table: getTableName(t), column: c.name });
  }
  return out;
}

/** Every value in the store that has the sealed format, with where it is. */
async function sealedValues(): Promise<{ table: string; column: string; value: string }[]> {
  const out: { table: string; column: string; value: string }[] = [];
  for (const { table, column } of textColumns()) {
    const rows = await queryStore<{ v: string }>(cg, sql`SELECT ${sql.identifier(column)} AS v FROM ${sql.identifier(table)} WHERE ${sql.identifier(column)} LIKE ${"v1:%"}`);
    for (const r of rows) out.push({ table, column, value: r.v });
  }
  return out;
}

const { connectFlow, expectSuccess, apiGet, lastIssued } = oauthFlow(() => ({ cg, oauth, publicUrl, caFile, agentToken: cg.keys.defaultAgentToken }));

beforeAll(async () => {
  pki = makePki([HOST]);
  up = startUpstream(pki);
  apiPort = await freePort();
  publicUrl = `http://127.0.0.1:${apiPort}`;
  oauth = await startOAuthServer({
    clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${publicUrl}/v1/apps/github/callback`] }],
    user: { login: "octo-rotate", id: 77 },
  });
  // A fake GitHub for the GitHub App token the fixture mints (its api.github.com is the OAuth server's later).
  const githubPki = makePki(["api.github.com", "github.com"]);
  const app = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const github = startFakeGithub(githubPki, { appId: 4242, publicKeyPem: app.publicKey.export({ type: "spki", format: "pem" }).toString() }, () => undefined);
  const trusted = join(tempDir(), "upstream-cas.pem");
  writeFileSync(trusted, readFileSync(pki.caFile, "utf8") + readFileSync(oauth.caFile, "utf8") + readFileSync(githubPki.caFile, "utf8"));
  env = {
    // Cloud mode: claim links (team provisions) are sealed values too. Loopback upstreams are allowed explicitly.
    CREDGATE_MODE: "cloud",
    CREDGATE_EGRESS_ALLOW: "127.0.0.1/32",
    CREDGATE_PUBLIC_URL: publicUrl,
    CREDGATE_UPSTREAM_CA_FILE: trusted,
    CREDGATE_RESOLVE: resolveEntries([HOST], up.port),
    CREDGATE_CONNECT_TO: `github.com:443:127.0.0.1:${oauth.port},api.github.com:443:127.0.0.1:${oauth.port}`,
  };
  // First run: a GitHub App secret (only for HOST's /gh-app/ paths, so that it never meets the OAuth server)
  // mints an installation token, kept sealed in minted_tokens; then the same data dir runs on with the OAuth
  // server as api.github.com.
  const minting = await startCredgate({ apiPort, env: { ...env, CREDGATE_CONNECT_TO: `api.github.com:443:127.0.0.1:${github.port}` } });
  const appSecret = await minting.api("POST", "/v1/secrets", {
    body: { name: "App", type: "generic", value: app.privateKey.export({ type: "pkcs1", format: "pem" }).toString(), hostPattern: HOST, pathPattern: "/gh-app/*", injectionConfig: { githubApp: { appId: 4242, installationId: 99 } } },
  });
  expect(appSecret.status).toBe(201);
  expect((await curlThroughGateway(minting, `https://${HOST}:${up.port}/gh-app/repos`, { caFile: (await gatewayCa(minting)).file })).status).toBe(200);
  expect(github.mints.length).toBe(1);
  expect(up.seen.at(-1)!.headers.authorization).toBe(`Bearer ${github.mints[0]!.token}`);
  expect(await minting.stop()).toBe(0);
  github.stop();
  cg = await startCredgate({ dataDir: minting.dataDir, apiPort, env });
  env = { ...cg.env, ...env };
  caFile = (await gatewayCa(cg)).file;

  // Every kind of sealed value.
  const secret = await cg.api("POST", "/v1/secrets", { body: { name: "Rotated", type: "generic", value: SECRET, hostPattern: HOST, injectionConfig: { headerName: "x-api-key" } } });
  expect(secret.status).toBe(201);
  expect((await cg.api("POST", "/v1/apps/github/config", { body: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } })).status).toBe(200);
  expectSuccess(await connectFlow());
  expect((await cg.api("POST", "/v1/apps/resend/connect", { body: { fields: { apiKey: RESEND_KEY } } })).status).toBe(200);
  expect((await cg.api("GET", "/v1/user/api-key")).status).toBe(200);
  // MCP servers: a static token (sealed credential; HOST answers no MCP, so the server is left in error) and an
  // operator's OAuth client (sealed client, kept until a login).
  expect((await cg.api("POST", "/v1/mcp-servers", { body: { name: "Static", url: `https://${HOST}:${up.port}/mcp`, auth: { bearer: "mcp-static-token-rotated" } } })).status).toBe(201);
  expect((await cg.api("POST", "/v1/mcp-servers", { body: { name: "OAuth", url: `https://${HOST}:${up.port}/mcp2`, auth: { clientId: "mcp-client", clientSecret: "mcp-client-secret" } } })).status).toBe(201);
  expect((await cg.api("POST", "/v1/team/provisions", { key: cg.keys.orgApiKey, body: {} })).status).toBe(201);
  // A webhook channel (sealed URL and signing secret) and a delivery of a held request (sealed payload).
  expect((await cg.api("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: "https://hooks.rotate.test/credgate" } })).status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/rules", { body: { name: "ask", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST, pathPattern: "/held" }] } })).status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
  const held = curlThroughGateway(cg, `https://${HOST}:${up.port}/held`, { caFile, method: "POST", data: "{}" });
  const approval = await until(async () => {
    const pending = (await cg.api("GET", "/v1/approvals/pending")).body.requests[0];
    if (!pending) throw new Error("not held yet");
    return pending;
  });
  await until(async () => {
    if ((await cg.api("GET", "/v1/notifications/deliveries")).body.data.length === 0) throw new Error("not queued yet");
  });
  expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
  expect((await held).status).toBe(403);
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  await oauth?.close();
});

async function injectedSecret(): Promise<string | undefined> {
  const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}/whoami`, { caFile });
  expect(r.status).toBe(200);
  return up.seen.at(-1)!.headers["x-api-key"];
}

describe("rotate-master-key", () => {
  let oldKey: Buffer;
  let newKey: Buffer;
  let before: { table: string; column: string; value: string }[];
  let oauthToken: string;

  test("before: the fixture fills every sealed column of the schema", async () => {
    expect(await injectedSecret()).toBe(SECRET);
    oauthToken = lastIssued().accessToken;
    expect((await apiGet()).seenAuth).toBe(`Bearer ${oauthToken}`);
    expect(await cg.stop()).toBe(0);
    oldKey = Buffer.from(readFileSync(join(cg.dataDir, "master.key"), "utf8").trim(), "base64");
    before = await sealedValues();
    const sealedColumns = textColumns().filter((c) => c.column.endsWith("_sealed"));
    expect(sealedColumns.length).toBeGreaterThanOrEqual(5);
    for (const { table, column } of sealedColumns) {
      expect({ column: `${table}.${column}`, filled: before.some((v) => v.table === table && v.column === column) }).toEqual({ column: `${table}.${column}`, filled: true });
    }
    for (const v of before) expect({ at: `${v.table}.${v.column}`, opens: openWith(oldKey, v.value) !== null }).toEqual({ at: `${v.table}.${v.column}`, opens: true });
  });

  test("a wrong current key changes nothing", async () => {
    const file = join(cg.dataDir, "master.key");
    const right = readFileSync(file, "utf8");
    writeFileSync(file, Buffer.alloc(32, 7).toString("base64") + "\n");
    try {
      const r = await runCli(["rotate-master-key", "--data-dir", cg.dataDir], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^credgate: a value in [a-z_]+\.[a-z_]+_sealed does not open with the current master key; nothing was changed\n$/);
    } finally {
      writeFileSync(file, right);
    }
    expect(await sealedValues()).toEqual(before);
    expect(existsSync(`${file}.new`)).toBe(false);
    expect(existsSync(`${file}.old`)).toBe(false);
  });

  test("rotates every sealed value in one run; master.key is replaced, the old one kept as master.key.old (0600)", async () => {
    const r = await runCli(["rotate-master-key", "--data-dir", cg.dataDir], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith(`credgate: re-encrypted ${new Set(before.map((v) => v.value)).size} sealed values under the new master key (`);
    const file = join(cg.dataDir, "master.key");
    newKey = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
    expect(newKey.length).toBe(32);
    expect(newKey.equals(oldKey)).toBe(false);
    expect(Buffer.from(readFileSync(`${file}.old`, "utf8").trim(), "base64").equals(oldKey)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(`${file}.old`).mode & 0o777).toBe(0o600);
    expect(r.stdout).not.toContain(newKey.toString("base64"));

    const after = await sealedValues();
    expect(after.length).toBe(before.length);
    for (const v of after) {
      expect({ at: `${v.table}.${v.column}`, old: openWith(oldKey, v.value) }).toEqual({ at: `${v.table}.${v.column}`, old: null });
      expect(openWith(newKey, v.value)).not.toBeNull();
    }
    // Same plaintexts, in the same places.
    const plain = (list: typeof before, key: Buffer) => list.map((v) => `${v.table}.${v.column}=${openWith(key, v.value)}`).sort();
    expect(plain(after, newKey)).toEqual(plain(before, oldKey));
  });

  test("after a restart with the new key: the old secret and the OAuth token are injected, the old API key works", async () => {
    cg = await startCredgate({ dataDir: cg.dataDir, apiPort, env });
    expect(await injectedSecret()).toBe(SECRET);
    expect((await apiGet()).seenAuth).toBe(`Bearer ${oauthToken}`);
    const agents = await cg.api("GET", "/v1/agents");
    expect(agents.status).toBe(200);
    expect(agents.body.find((a: any) => a.isDefault).accessToken).toBe(cg.keys.defaultAgentToken);
    expect((await cg.api("GET", "/v1/apps/resend")).body.connections[0].status).toBe("connected");
    // The OAuth client secret (app configuration) opens too: a new connect flow exchanges a code with it.
    expectSuccess(await connectFlow());
  });
});

test("a key from CREDGATE_MASTER_KEY: the new one is printed once, and the data opens only with it", async () => {
  const key = Buffer.alloc(32, 3).toString("base64");
  const c = await startCredgate({ env: { CREDGATE_MASTER_KEY: key } });
  const keysBefore = c.keys;
  expect(await c.stop()).toBe(0);
  const r = await runCli(["rotate-master-key", "--data-dir", c.dataDir], { ...c.env, CREDGATE_MASTER_KEY: key });
  expect(r.code).toBe(0);
  const printed = r.stdout.trimEnd().split("\n").at(-1)!;
  expect(r.stdout).toContain("Set CREDGATE_MASTER_KEY to this new key before starting credgate again (it is shown only now):\n");
  expect(Buffer.from(printed, "base64").length).toBe(32);
  expect(existsSync(join(c.dataDir, "master.key"))).toBe(false);
  const again = await startCredgate({ dataDir: c.dataDir, env: { ...c.env, CREDGATE_MASTER_KEY: printed } });
  try {
    expect(again.keys).toEqual(keysBefore);
    expect((await again.api("GET", "/v1/agents")).status).toBe(200);
  } finally {
    await again.stop();
  }
  // The old key no longer opens the stored keys.
  const old = await runCli(["keys", "--data-dir", c.dataDir, "--json"], { ...c.env, CREDGATE_MASTER_KEY: key });
  expect(old.code).not.toBe(0);
});

test("CREDGATE_NEW_MASTER_KEY is used when given, and must be a 32-byte base64 key", async () => {
  const c = await startCredgate();
  expect(await c.stop()).toBe(0);
  const bad = await runCli(["rotate-master-key", "--data-dir", c.dataDir], { ...c.env, CREDGATE_NEW_MASTER_KEY: "c2hvcnQ=" });
  expect(bad).toMatchObject({ code: 1, stderr: "credgate: CREDGATE_NEW_MASTER_KEY must be the base64 encoding of 32 bytes\n" });
  const chosen = Buffer.alloc(32, 9).toString("base64");
  const ok = await runCli(["rotate-master-key", "--data-dir", c.dataDir], { ...c.env, CREDGATE_NEW_MASTER_KEY: chosen });
  expect(ok.code).toBe(0);
  expect(readFileSync(join(c.dataDir, "master.key"), "utf8").trim()).toBe(chosen);
  const again = await startCredgate({ dataDir: c.dataDir, env: c.env });
  try {
    expect(again.keys).toEqual(c.keys);
  } finally {
    await again.stop();
  }
});
