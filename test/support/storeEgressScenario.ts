// Runs inside its own network namespace (test/e2e/store-egress-netns.test.ts starts it with `unshare -n`): loopback
// up, 169.254.169.254 (cloud metadata), 10.1.2.3 (private) and 203.0.113.7 (public-looking) added to `lo`. The fake
// Vault and the fake AWS Secrets Manager listen on 127.0.0.1; counting relays that read the TLS server name
// (test/support/sniRelay.ts) put them at 169.254.169.254 and 10.1.2.3 (Vault on :8200, AWS on :443), and the
// agent's TLS upstream at 203.0.113.7:443. Nothing can leave the namespace. credgate instances in cloud and
// self-hosted mode read a `vault://` and an `aws-sm://` secret whose stores sit at those addresses (pinned with
// CREDGATE_RESOLVE / CREDGATE_CONNECT_TO, or named through a DNS server on loopback); curl sends an agent's request
// that needs each value, then `POST /v1/secrets/{id}/test` reads it once more. Prints one JSON document: each
// request's status and body, the test call's answer, each relay's new connections during both, and the reasons
// credgate logged.
import { generateKeyPairSync } from "node:crypto";
import { startDnsServer } from "./dnsServer.ts";
import { startFakeVault } from "./fakeVault.ts";
import { SECRET_STORE_HOSTS, startFakeSecretStores } from "./fakeSecretStores.ts";
import { gatewayCa, run } from "./gateway.ts";
import { startCredgate, type RunningCredgate } from "./process.ts";
import { startSniRelay, type SniRelay } from "./sniRelay.ts";
import { makePki, startUpstream } from "./upstream.ts";

const HOST = "api.storeegress.test";
const AWS_HOST = "secretsmanager.us-east-1.amazonaws.com";
const AWS = { accessKeyId: "AKIASTOREEGRESS00001", secretAccessKey: "store/egress+secret/key0123456789abcdefg" };
const VAULT_NAMES = ["vault.meta.test", "vault.dns-meta.test", "vault.dns-private.test"];

const pki = makePki([HOST, ...VAULT_NAMES, ...SECRET_STORE_HOSTS]);
const up = startUpstream(pki);
const vault = await startFakeVault({ names: VAULT_NAMES, pki });
const gcp = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ type: "spki", format: "pem" }).toString();
const stores = startFakeSecretStores(pki, { aws: AWS, gcp: { email: "unused@egress.iam.gserviceaccount.com", publicKeyPem: gcp }, azure: { tenantId: "t", clientId: "c", clientSecret: "s" } });
const relays: Record<string, SniRelay> = {
  "169.254.169.254:8200": await startSniRelay(vault.port, { host: "169.254.169.254", port: 8200 }),
  "169.254.169.254:443": await startSniRelay(stores.port, { host: "169.254.169.254", port: 443 }),
  "10.1.2.3:8200": await startSniRelay(vault.port, { host: "10.1.2.3", port: 8200 }),
  "10.1.2.3:443": await startSniRelay(stores.port, { host: "10.1.2.3", port: 443 }),
};
const agentUpstream = await startSniRelay(up.port, { host: "203.0.113.7", port: 443 });
const dns = await startDnsServer({
  "vault.dns-meta.test": { addresses: ["169.254.169.254"], ttl: 60 },
  "vault.dns-private.test": { addresses: ["10.1.2.3"], ttl: 60 },
});

interface Attempt {
  status: number;
  body: unknown;
  /** The TLS server names each store relay heard during the request and the test call. */
  heard: Record<string, (string | null)[]>;
  /** What the agent's upstream received for this request's path. */
  forwarded: string | null;
  /** POST /v1/secrets/{id}/test afterwards. */
  tested: unknown;
}

const results: Record<string, Attempt> = {};
const logs: Record<string, string> = {};
const values: string[] = [];

/**
 * Starts an instance whose Vault is `vaultAddr` and whose AWS endpoint is dialled at `awsAt` (CREDGATE_CONNECT_TO),
 * writes a vault:// and an aws-sm:// secret (under the organization's prefix, which cloud mode requires) and sends a
 * request needing each.
 */
async function scenario(label: string, opts: { env: Record<string, string>; vaultAddr: string; awsAt: string }): Promise<void> {
  const cg: RunningCredgate = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_DNS_SERVERS: dns.address,
      CREDGATE_VAULT_ADDR: opts.vaultAddr,
      CREDGATE_VAULT_TOKEN: vault.rootToken,
      CREDGATE_AWS_ACCESS_KEY_ID: AWS.accessKeyId,
      CREDGATE_AWS_SECRET_ACCESS_KEY: AWS.secretAccessKey,
      CREDGATE_CONNECT_TO: `${AWS_HOST}:443:${opts.awsAt}`,
      ...opts.env,
      CREDGATE_RESOLVE: [`${HOST}:443:203.0.113.7`, opts.env.CREDGATE_RESOLVE].filter(Boolean).join(","),
    },
  });
  try {
    const org = cg.keys.organizationId;
    const ca = (await gatewayCa(cg)).file;
    for (const kind of ["vault", "aws"] as const) {
      const name = `${label}-${kind}`;
      const value = `sk_${kind}_${crypto.randomUUID().replace(/-/g, "")}`;
      let storeRef: string;
      if (kind === "vault") {
        vault.putKv("secret", `${org}/${label}`, { token: value });
        storeRef = `vault://secret/${org}/${label}#token`;
      } else {
        stores.aws.set(`${org}/${label}`, { string: value });
        storeRef = `aws-sm://us-east-1/${org}/${label}`;
      }
      const created = await cg.api("POST", "/v1/secrets", { body: { name, type: "generic", valueSource: "vault", storeRef, hostPattern: HOST, pathPattern: `/${name}/*`, injectionConfig: { headerName: "x-api-key" } } });
      if (created.status !== 201) throw new Error(`secret ${name}: ${created.status} ${created.text}`);
      const before = Object.fromEntries(Object.entries(relays).map(([k, r]) => [k, r.connections.length]));
      const proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
      const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", ca, "--max-time", "30", "-w", "\n%{http_code}", `https://${HOST}/${name}/1`]);
      const tested = (await cg.api("POST", `/v1/secrets/${created.body.id}/test`)).body;
      const heard = Object.fromEntries(Object.entries(relays).map(([k, relay]) => [k, relay.connections.slice(before[k]).map((c) => c.sni)]));
      values.push(value);
      const cut = r.stdout.lastIndexOf("\n");
      let body: unknown = r.stdout.slice(0, cut);
      try {
        body = JSON.parse(body as string);
      } catch {}
      const seen = up.seen.find((s) => s.url === `/${name}/1`);
      const forwarded = seen ? (seen.headers["x-api-key"] === value ? "the value" : `something else: ${seen.headers["x-api-key"]}`) : null;
      results[name] = { status: Number(r.stdout.slice(cut + 1)), body, heard, forwarded, tested };
    }
  } finally {
    await cg.stop();
    logs[label] = cg.output();
  }
}

// Cloud mode: both stores pinned by the operator, Vault at the metadata address, AWS at a private one.
const pinned = { vaultAddr: "https://vault.meta.test:8200", awsAt: "10.1.2.3:443" };
await scenario("cloud", { ...pinned, env: { CREDGATE_MODE: "cloud", CREDGATE_RESOLVE: "vault.meta.test:8200:169.254.169.254" } });
await scenario("cloud-allowed", { ...pinned, env: { CREDGATE_MODE: "cloud", CREDGATE_RESOLVE: "vault.meta.test:8200:169.254.169.254", CREDGATE_EGRESS_ALLOW: "169.254.169.254/32,10.1.2.3/32" } });
// Self-hosted defaults: Vault's name resolves (DNS) to the metadata address, then to a private one; AWS is pinned by
// the operator (CREDGATE_CONNECT_TO) at a private address, then at the metadata address.
await scenario("self-metadata", { vaultAddr: "https://vault.dns-meta.test:8200", awsAt: "10.1.2.3:443", env: {} });
await scenario("self-private", { vaultAddr: "https://vault.dns-private.test:8200", awsAt: "169.254.169.254:443", env: {} });

const agentHeard = agentUpstream.connections.map((c) => c.sni);
await Promise.all([...Object.values(relays), agentUpstream].map((r) => r.stop()));
await Promise.all([vault.stop(), stores.stop(), up.stop(), dns.stop()]);
const reasons = Object.fromEntries(Object.entries(logs).map(([k, out]) => [k, [...out.matchAll(/"msg":"secret store read failed"[^\n]*"reason":"([a-z_]+)"/g)].map((m) => m[1])]));
const valueLogged = values.some((v) => Object.values(logs).some((out) => out.includes(v)));
console.log(JSON.stringify({ results, reasons, agentHeard, valueLogged }));
process.exit(0);
