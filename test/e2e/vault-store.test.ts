// vault:// values through the real gateway (docs/vault.md#kv-version-2-values): real credgate processes read a
// KV version 2 secret from the fake Vault (test/support/fakeVault.ts) over TLS through the egress path
// (CREDGATE_RESOLVE pins vault.test, CREDGATE_UPSTREAM_CA_FILE trusts it) and inject it into requests curl sends
// through the gateway to a real TLS upstream. One process logs in with CREDGATE_VAULT_TOKEN; the other with
// AppRole in a namespace, its token (4 s TTL) renewed with renew-self at half its TTL and never logged in again
// while renewals work. Failures are 502 credential_unavailable naming the secret, never Vault's answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gatewayCa, resolveEntries, run, untilTrue } from "../support/gateway.ts";
import { startFakeVault, type FakeVault } from "../support/fakeVault.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.kv.test";
const VAULT_HOST = "vault.test";
const NS_VAULT_HOST = "ns-vault.test";
const VALUE = `sk_live_kv_${crypto.randomUUID().replace(/-/g, "")}`;
const NS_VALUE = `sk_live_ns_${crypto.randomUUID().replace(/-/g, "")}`;
const approle = { roleId: `role-${crypto.randomUUID()}`, secretId: `secret-${crypto.randomUUID()}`, ttlSeconds: 4, maxTtlSeconds: 3600 };

let pki: TestPki;
let up: TestUpstream;
let plain: FakeVault;
let namespaced: FakeVault;
let withToken: RunningCredgate;
let withApprole: RunningCredgate;
let caFile: string;

beforeAll(async () => {
  pki = makePki([HOST, VAULT_HOST, NS_VAULT_HOST]);
  up = startUpstream(pki);
  plain = await startFakeVault({ names: [VAULT_HOST], pki });
  namespaced = await startFakeVault({ names: [NS_VAULT_HOST], pki, namespace: "team-a", approle });
  plain.putKv("secret", "team/app", { token: VALUE, count: 7 });
  namespaced.putKv("secret", "team/app", { token: NS_VALUE });
  const common = {
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: [resolveEntries([HOST], up.port), resolveEntries([VAULT_HOST], plain.port), resolveEntries([NS_VAULT_HOST], namespaced.port)].join(","),
  };
  [withToken, withApprole] = await Promise.all([
    startCredgate({ env: { ...common, CREDGATE_VAULT_ADDR: `https://${VAULT_HOST}:${plain.port}`, CREDGATE_VAULT_TOKEN: plain.rootToken } }),
    startCredgate({
      env: {
        ...common,
        CREDGATE_VAULT_ADDR: `https://${NS_VAULT_HOST}:${namespaced.port}`,
        CREDGATE_VAULT_ROLE_ID: approle.roleId,
        CREDGATE_VAULT_SECRET_ID: approle.secretId,
        CREDGATE_VAULT_NAMESPACE: "team-a",
      },
    }),
  ]);
  caFile = (await gatewayCa(withToken)).file;
}, 60_000);

afterAll(async () => {
  await withToken?.stop();
  await withApprole?.stop();
  await up?.stop();
  await plain?.stop();
  await namespaced?.stop();
});

async function kvSecret(on: RunningCredgate, name: string, storeRef: string, pathPattern: string): Promise<string> {
  const r = await on.api("POST", "/v1/secrets", {
    body: { name, type: "generic", valueSource: "vault", storeRef, hostPattern: HOST, pathPattern, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
  });
  if (r.status !== 201) throw new Error(`create secret: ${r.status} ${r.text}`);
  expect(r.body.storeRef).toBe(storeRef);
  expect(r.body.preview).toBeUndefined();
  return r.body.id;
}

async function curl(on: RunningCredgate, path: string): Promise<{ status: number; body: string }> {
  const ca = (await gatewayCa(on)).file;
  const proxy = `http://x:${on.keys.defaultAgentToken}@127.0.0.1:${on.gatewayPort}`;
  const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", ca, "-H", "Authorization: Bearer credgate-managed", "-w", "\n%{http_code}", `https://${HOST}:${up.port}${path}`]);
  expect(r.code).toBe(0);
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

const seenAt = (path: string) => up.seen.filter((s) => s.url === path);

describe("token login", () => {
  test("the upstream receives the KV v2 field; Vault is asked with credgate's token and X-Vault-Request", async () => {
    await kvSecret(withToken, "kv-token", "vault://secret/team/app#token", "/token/*");
    const r = await curl(withToken, "/token/1");
    expect(r.status).toBe(200);
    expect(seenAt("/token/1")[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
    const reads = plain.callsTo("/v1/secret/data/team/app", "GET");
    expect(reads.length).toBe(1);
    expect(reads[0]!.status).toBe(200);
    expect(reads[0]!.vaultRequest).toBe("true");
    // Cached: the second request does not ask Vault again.
    expect((await curl(withToken, "/token/2")).status).toBe(200);
    expect(plain.callsTo("/v1/secret/data/team/app", "GET").length).toBe(1);
    expect(withToken.output()).not.toContain(VALUE);
  });

  test("a field that is missing: 502 credential_unavailable naming the secret, nothing forwarded; the test endpoint says why", async () => {
    const id = await kvSecret(withToken, "kv-missing", "vault://secret/team/app#nope", "/missing/*");
    const r = await curl(withToken, "/missing/1");
    expect(r.status).toBe(502);
    const body = JSON.parse(r.body);
    expect(body.error).toBe("credential_unavailable");
    expect(body.secret_name).toBe("kv-missing");
    expect(seenAt("/missing/1")).toEqual([]);
    const tested = await withToken.api("POST", `/v1/secrets/${id}/test`);
    expect(tested.status).toBe(200);
    expect(tested.body).toEqual({ ok: false, message: 'the secret at secret/team/app has no field "nope"' });
  });

  test("the test endpoint reads once: ok, never the value", async () => {
    const id = await kvSecret(withToken, "kv-tested", "vault://secret/team/app#token", "/tested/*");
    const tested = await withToken.api("POST", `/v1/secrets/${id}/test`);
    expect(tested.status).toBe(200);
    expect(tested.body.ok).toBe(true);
    expect(tested.text).not.toContain(VALUE);
  });

  test("Vault sealed on a value not cached: 502 credential_unavailable naming the secret, Vault's answer nowhere", async () => {
    plain.putKv("secret", "team/sealed", { token: `${VALUE}-sealed` });
    await kvSecret(withToken, "kv-sealed", "vault://secret/team/sealed#token", "/sealed/*");
    plain.seal();
    try {
      const r = await curl(withToken, "/sealed/1");
      expect(r.status).toBe(502);
      expect(JSON.parse(r.body)).toMatchObject({ error: "credential_unavailable", secret_name: "kv-sealed" });
      expect(r.body).not.toContain("sealed\"]");
      expect(seenAt("/sealed/1")).toEqual([]);
    } finally {
      plain.unseal();
    }
  });
});

describe("AppRole login in a namespace", () => {
  test("one login, the namespace on every call, the 4 s token renewed with renew-self and no new login", async () => {
    await kvSecret(withApprole, "kv-approle", "vault://secret/team/app#token", "/approle/*");
    const r = await curl(withApprole, "/approle/1");
    expect(r.status).toBe(200);
    expect(seenAt("/approle/1")[0]!.headers.authorization).toBe(`Bearer ${NS_VALUE}`);
    expect(namespaced.callsTo("/v1/auth/approle/login", "POST").map((c) => c.status)).toEqual([200]);
    // Renewed at half its TTL (2 s), again and again: the token outlives its first TTL.
    await untilTrue(() => namespaced.callsTo("/v1/auth/token/renew-self").filter((c) => c.status === 200).length >= 2, 15_000);
    expect(namespaced.callsTo("/v1/auth/approle/login").length).toBe(1);
    expect(namespaced.calls.every((c) => c.namespace === "team-a" && c.vaultRequest === "true")).toBe(true);
    // A read after the first TTL uses the renewed token (the test endpoint bypasses the cache).
    const secrets = (await withApprole.api("GET", "/v1/secrets")).body;
    const id = (secrets.data ?? secrets).find((s: { name: string }) => s.name === "kv-approle").id;
    const tested = await withApprole.api("POST", `/v1/secrets/${id}/test`);
    expect(tested.body.ok).toBe(true);
    expect(namespaced.callsTo("/v1/auth/approle/login").length).toBe(1);
    expect(withApprole.output()).not.toContain(approle.secretId);
  });
});
