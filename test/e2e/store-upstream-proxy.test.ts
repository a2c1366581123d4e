// Secret stores behind the upstream proxy (docs/injection.md#secret-stores, docs/operations.md#upstream-proxy): real
// credgate processes read a `vault://` value from the fake Vault (test/support/fakeVault.ts), and an `aws-sm://` and
// an `azure-kv://` value (its token minted first) from the fakes of test/support/fakeSecretStores.ts (SigV4 and the
// client credentials checked), through tinyproxy (HTTP CONNECT, Basic auth) and microsocks (SOCKS5, user/password),
// and inject them into curl's requests to a real TLS upstream (reached direct: CREDGATE_UPSTREAM_NO_PROXY names it,
// so everything the proxy hears is a store request). Between the proxy and each store sits a counting relay that
// reads the ClientHello's server name (test/support/sniRelay.ts): the proxy was asked for the address credgate
// resolved and judged, never the name, and the TLS inside the tunnel still names the store. A proxy that refuses
// credgate's credentials makes the read fail — 502 credential_unavailable naming the secret, the relays (reachable
// directly from credgate) hear nothing, so there is no direct fallback, and the secret's Test gives the proxy's
// reason. A store host in CREDGATE_UPSTREAM_NO_PROXY is read direct. In cloud mode a store on a refused address is
// refused before the proxy hears of it. The engine is irrelevant (store values live in
// memory): SQLite only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { startDnsServer, type TestDnsServer } from "../support/dnsServer.ts";
import { startFakeVault, type FakeVault } from "../support/fakeVault.ts";
import { SECRET_STORE_HOSTS, startFakeSecretStores, type FakeSecretStores } from "../support/fakeSecretStores.ts";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { startSniRelay, type SniRelay } from "../support/sniRelay.ts";
import { startMicrosocks, startTinyproxy, type TestProxy } from "../support/upstreamProxies.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.storeproxy.test";
const VAULT_HOST = "vault.storeproxy.test";
/** Vault as a cloud instance sees it: on another loopback address, which cloud mode refuses. */
const CLOUD_VAULT_HOST = "vault-cloud.storeproxy.test";
const AWS_HOST = "secretsmanager.us-east-1.amazonaws.com";
const AWS = { accessKeyId: "AKIASTOREPROXY000001", secretAccessKey: "store/proxy+secret/key0123456789abcdefgh" };
const AZURE = { tenantId: "7d2f3a1b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", clientId: "1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d", clientSecret: "Q~proxy.store-client~secret0123" };
const AZURE_LOGIN = "login.microsoftonline.com";
const AZURE_VAULT = "prodvault.vault.azure.net";
const VALUE = (tag: string) => `sk_${tag}_${crypto.randomUUID().replace(/-/g, "")}`;
const PROXY_USER = "credgate";
const PROXY_PASSWORD = `pw-${crypto.randomUUID().slice(0, 8)}`;
const WRONG_PASSWORD = "not-the-proxy-password";

let pki: TestPki;
let up: TestUpstream;
let vault: FakeVault;
let stores: FakeSecretStores;
let vaultRelay: SniRelay;
let awsRelay: SniRelay;
let dns: TestDnsServer;
let tiny: TestProxy;
let socks: TestProxy;
let viaHttp: RunningCredgate;
let viaSocks: RunningCredgate;
let wrongHttp: RunningCredgate;
let wrongSocks: RunningCredgate;
let bypass: RunningCredgate;
let cloud: RunningCredgate;
let cloudVaultRelay: SniRelay;
const cas = new Map<RunningCredgate, string>();

beforeAll(async () => {
  pki = makePki([HOST, VAULT_HOST, CLOUD_VAULT_HOST, ...SECRET_STORE_HOSTS]);
  up = startUpstream(pki);
  vault = await startFakeVault({ names: [VAULT_HOST], pki });
  const gcp = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ type: "spki", format: "pem" }).toString();
  stores = startFakeSecretStores(pki, { aws: AWS, gcp: { email: "unused@proxy.iam.gserviceaccount.com", publicKeyPem: gcp }, azure: AZURE });
  [vaultRelay, awsRelay, cloudVaultRelay] = await Promise.all([startSniRelay(vault.port), startSniRelay(stores.port), startSniRelay(vault.port, { host: "127.0.0.2" })]);
  // Vault's name resolves through the test's DNS server: the egress guard judges that answer, the proxy gets it.
  const at = { addresses: ["127.0.0.1"], ttl: 60 };
  dns = await startDnsServer({ [HOST]: at, [VAULT_HOST]: at, [CLOUD_VAULT_HOST]: { addresses: ["127.0.0.2"], ttl: 60 } });
  [tiny, socks] = await Promise.all([
    startTinyproxy({ user: PROXY_USER, password: PROXY_PASSWORD, connectPorts: [vaultRelay.port, awsRelay.port, cloudVaultRelay.port] }),
    startMicrosocks({ user: PROXY_USER, password: PROXY_PASSWORD }),
  ]);
  const common = {
    CREDGATE_DNS_SERVERS: dns.address,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_VAULT_ADDR: `https://${VAULT_HOST}:${vaultRelay.port}`,
    CREDGATE_VAULT_TOKEN: vault.rootToken,
    CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId,
    CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey,
    CREDGATE_AZURE_TENANT_ID: AZURE.tenantId,
    CREDGATE_AZURE_CLIENT_ID: AZURE.clientId,
    CREDGATE_AZURE_CLIENT_SECRET: AZURE.clientSecret,
    // The cloud endpoints are fixed (port 443): they are dialled at the relay, keeping their names for Host and TLS.
    CREDGATE_CONNECT_TO: [AWS_HOST, AZURE_LOGIN, AZURE_VAULT].map((h) => `${h}:443:127.0.0.1:${awsRelay.port}`).join(","),
    CREDGATE_UPSTREAM_NO_PROXY: HOST,
  };
  const http = (password: string) => `http://${PROXY_USER}:${password}@127.0.0.1:${tiny.port}`;
  const socks5 = (password: string) => `socks5://${PROXY_USER}:${password}@127.0.0.1:${socks.port}`;
  [viaHttp, viaSocks, wrongHttp, wrongSocks, bypass, cloud] = await Promise.all([
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: http(PROXY_PASSWORD) } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: socks5(PROXY_PASSWORD) } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: http(WRONG_PASSWORD) } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: socks5(WRONG_PASSWORD) } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: http(PROXY_PASSWORD), CREDGATE_UPSTREAM_NO_PROXY: `${HOST},${VAULT_HOST},${AWS_HOST}` } }),
    // Cloud mode: the agent's upstream (127.0.0.1) is allowed, Vault (127.0.0.2) is not.
    startCredgate({
      env: {
        ...common,
        CREDGATE_MODE: "cloud",
        CREDGATE_EGRESS_ALLOW: "127.0.0.1/32",
        CREDGATE_VAULT_ADDR: `https://${CLOUD_VAULT_HOST}:${cloudVaultRelay.port}`,
        CREDGATE_UPSTREAM_PROXY: http(PROXY_PASSWORD),
      },
    }),
  ]);
  for (const cg of [viaHttp, viaSocks, wrongHttp, wrongSocks, bypass, cloud]) cas.set(cg, (await gatewayCa(cg)).file);
}, 90_000);

afterAll(async () => {
  await Promise.all([viaHttp, viaSocks, wrongHttp, wrongSocks, bypass, cloud].map((cg) => cg?.stop()));
  await Promise.all([tiny?.stop(), socks?.stop(), vaultRelay?.stop(), awsRelay?.stop(), cloudVaultRelay?.stop(), up?.stop(), vault?.stop(), stores?.stop(), dns?.stop()]);
});

/** A store secret for `HOST` under `/<name>/*`, injected as x-api-key. */
async function storeSecret(cg: RunningCredgate, name: string, storeRef: string): Promise<string> {
  const r = await cg.api("POST", "/v1/secrets", { body: { name, type: "generic", valueSource: "vault", storeRef, hostPattern: HOST, pathPattern: `/${name}/*`, injectionConfig: { headerName: "x-api-key" } } });
  if (r.status !== 201) throw new Error(`secret ${name}: ${r.status} ${r.text}`);
  return r.body.id as string;
}

/** curl through the gateway as the default agent. */
async function curl(cg: RunningCredgate, path: string): Promise<{ status: number; body: any; text: string }> {
  const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}${path}`, { caFile: cas.get(cg)! });
  return { status: r.status, body: r.json, text: r.text };
}

const seen = (path: string) => up.seen.filter((s) => s.url === path);
/** AWS reads the fake answered with a value (SigV4 verified). */
const awsReads = () => stores.calls.filter((c) => c.host === AWS_HOST && c.status === 200 && c.auth === "sigv4").length;

/** What a read through `cg` did: the proxy's new targets and each relay's new connections. */
async function observe(proxy: TestProxy, act: () => Promise<void>): Promise<{ targets: string[]; vault: (string | null)[]; aws: (string | null)[] }> {
  const [t, v, a] = [proxy.targets().length, vaultRelay.connections.length, awsRelay.connections.length];
  await act();
  return { targets: proxy.targets().slice(t), vault: vaultRelay.connections.slice(v).map((c) => c.sni), aws: awsRelay.connections.slice(a).map((c) => c.sni) };
}

for (const kind of ["HTTP CONNECT (tinyproxy)", "SOCKS5 (microsocks)"] as const) {
  const http = kind.startsWith("HTTP");
  const via = () => (http ? viaHttp : viaSocks);
  const wrong = () => (http ? wrongHttp : wrongSocks);
  const proxy = () => (http ? tiny : socks);
  const tag = http ? "http" : "socks";

  describe(`store reads through an upstream proxy: ${kind}`, () => {
    test("vault://: the proxy is asked for Vault's judged address, TLS inside names Vault, the upstream gets the value", async () => {
      const value = VALUE(`vault_${tag}`);
      vault.putKv("secret", `proxied/${tag}`, { token: value });
      await storeSecret(via(), `vault-${tag}`, `vault://secret/proxied/${tag}#token`);
      const before = vault.callsTo(`/v1/secret/data/proxied/${tag}`, "GET").length;
      const o = await observe(proxy(), async () => {
        const r = await curl(via(), `/vault-${tag}/1`);
        expect(r.status).toBe(200);
      });
      expect(seen(`/vault-${tag}/1`)[0]!.headers["x-api-key"]).toBe(value);
      expect(vault.callsTo(`/v1/secret/data/proxied/${tag}`, "GET").length - before).toBe(1);
      expect(o).toEqual({ targets: [`127.0.0.1:${vaultRelay.port}`], vault: [VAULT_HOST], aws: [] });
      expect(proxy().output()).not.toContain(VAULT_HOST);
    });

    test("aws-sm://: the proxy is asked for the address CREDGATE_CONNECT_TO gives, TLS inside names AWS, SigV4 accepted", async () => {
      const value = VALUE(`aws_${tag}`);
      stores.aws.set(`proxied/${tag}`, { string: value });
      await storeSecret(via(), `aws-${tag}`, `aws-sm://us-east-1/proxied/${tag}`);
      const reads = awsReads();
      const o = await observe(proxy(), async () => {
        const r = await curl(via(), `/aws-${tag}/1`);
        expect(r.status).toBe(200);
      });
      expect(seen(`/aws-${tag}/1`)[0]!.headers["x-api-key"]).toBe(value);
      expect(awsReads() - reads).toBe(1);
      expect(o).toEqual({ targets: [`127.0.0.1:${awsRelay.port}`], vault: [], aws: [AWS_HOST] });
      expect(proxy().output()).not.toContain("amazonaws");
    });

    test("azure-kv://: the token mint and the Key Vault read are two tunnels through the proxy, each TLS naming its host", async () => {
      const value = VALUE(`azure_${tag}`);
      stores.azure.set(`prodvault/proxied-${tag}`, value);
      await storeSecret(via(), `azure-${tag}`, `azure-kv://prodvault/proxied-${tag}`);
      const o = await observe(proxy(), async () => {
        const r = await curl(via(), `/azure-${tag}/1`);
        expect(r.status).toBe(200);
      });
      expect(seen(`/azure-${tag}/1`)[0]!.headers["x-api-key"]).toBe(value);
      expect(o).toEqual({ targets: [`127.0.0.1:${awsRelay.port}`, `127.0.0.1:${awsRelay.port}`], vault: [], aws: [AZURE_LOGIN, AZURE_VAULT] });
      expect(stores.mints.filter((m) => m.issuer === "azure").length).toBeGreaterThanOrEqual(1);
    });

    test("a proxy that refuses credgate's credentials: 502 credential_unavailable naming the secret, no direct fallback", async () => {
      vault.putKv("secret", `refused/${tag}`, { token: VALUE("refused") });
      stores.aws.set(`refused/${tag}`, { string: VALUE("refused") });
      stores.azure.set(`prodvault/refused-${tag}`, VALUE("refused"));
      const ids = [
        await storeSecret(wrong(), `vault-refused-${tag}`, `vault://secret/refused/${tag}#token`),
        await storeSecret(wrong(), `aws-refused-${tag}`, `aws-sm://us-east-1/refused/${tag}`),
        await storeSecret(wrong(), `azure-refused-${tag}`, `azure-kv://prodvault/refused-${tag}`),
      ];
      const vaultCalls = vault.calls.length;
      const awsCalls = stores.calls.length;
      const o = await observe(proxy(), async () => {
        for (const name of [`vault-refused-${tag}`, `aws-refused-${tag}`, `azure-refused-${tag}`]) {
          const r = await curl(wrong(), `/${name}/1`);
          expect(r.status).toBe(502);
          expect(r.body).toMatchObject({ error: "credential_unavailable", secret_name: name });
          expect(r.text).not.toContain(WRONG_PASSWORD);
          expect(seen(`/${name}/1`)).toEqual([]);
        }
      });
      // The operator's Test says it was the proxy, in the words the gateway gives agents (never its credentials).
      const why = http ? "the upstream proxy refused the tunnel: 401 Unauthorized (the proxy refused the credentials of CREDGATE_UPSTREAM_PROXY)" : "the upstream proxy refused the user name or password of CREDGATE_UPSTREAM_PROXY";
      const tested = await Promise.all(ids.map(async (id) => (await wrong().api("POST", `/v1/secrets/${id}/test`)).body));
      expect(tested).toEqual([
        { ok: false, message: `HashiCorp Vault at ${VAULT_HOST}:${vaultRelay.port} could not be reached through the upstream proxy: ${why}` },
        { ok: false, message: `AWS Secrets Manager could not be reached (${AWS_HOST}) through the upstream proxy: ${why}` },
        { ok: false, message: `Azure AD could not be reached for a token (${AZURE_LOGIN}) through the upstream proxy: ${why}` },
      ]);
      // The relays are reachable from credgate directly: a fallback would have shown here.
      expect(o.vault).toEqual([]);
      expect(o.aws).toEqual([]);
      expect(vault.calls.length).toBe(vaultCalls);
      expect(stores.calls.length).toBe(awsCalls);
      const out = wrong().output();
      expect(out).toContain('"reason":"unreachable"');
      expect(out).toContain(`vault://secret/refused/${tag}#token`);
      expect(out).toContain(`aws-sm://us-east-1/refused/${tag}`);
      expect(out).toContain('"reason":"token_unreachable"');
      expect(out).not.toContain(WRONG_PASSWORD);
      expect(out).not.toContain(PROXY_PASSWORD);
    });
  });
}

describe("CREDGATE_UPSTREAM_NO_PROXY naming the stores", () => {
  test("vault:// and aws-sm:// are read direct: the proxy hears nothing, the stores still see their names in TLS", async () => {
    const values = { vault: VALUE("vault_direct"), aws: VALUE("aws_direct") };
    vault.putKv("secret", "direct", { token: values.vault });
    stores.aws.set("direct", { string: values.aws });
    await storeSecret(bypass, "vault-direct", "vault://secret/direct#token");
    await storeSecret(bypass, "aws-direct", "aws-sm://us-east-1/direct");
    const o = await observe(tiny, async () => {
      for (const name of ["vault-direct", "aws-direct"]) expect((await curl(bypass, `/${name}/1`)).status).toBe(200);
    });
    expect(seen("/vault-direct/1")[0]!.headers["x-api-key"]).toBe(values.vault);
    expect(seen("/aws-direct/1")[0]!.headers["x-api-key"]).toBe(values.aws);
    expect(o).toEqual({ targets: [], vault: [VAULT_HOST], aws: [AWS_HOST] });
  });
});

describe("the egress guard comes before the proxy", () => {
  test("cloud mode: a store on a loopback address is refused, the proxy never asked: 502 naming the secret, the Test names the address", async () => {
    const org = cloud.keys.organizationId;
    vault.putKv("secret", `${org}/cloud`, { token: VALUE("cloud") });
    const id = await storeSecret(cloud, "vault-cloud", `vault://secret/${org}/cloud#token`);
    const before = { targets: tiny.targets().length, relay: cloudVaultRelay.connections.length, calls: vault.calls.length };
    const r = await curl(cloud, "/vault-cloud/1");
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: "credential_unavailable", secret_name: "vault-cloud" });
    expect(seen("/vault-cloud/1")).toEqual([]);
    const tested = await cloud.api("POST", `/v1/secrets/${id}/test`);
    expect(tested.body).toEqual({ ok: false, message: `credgate does not connect to 127.0.0.2 (${CLOUD_VAULT_HOST}): the destination is an internal or reserved address (CREDGATE_EGRESS_ALLOW)` });
    expect(tiny.targets().length).toBe(before.targets);
    expect(tiny.output()).not.toContain("127.0.0.2");
    expect(cloudVaultRelay.connections.length).toBe(before.relay);
    expect(vault.calls.length).toBe(before.calls);
    expect(cloud.output()).toContain('"reason":"egress_denied"');
  });
});
