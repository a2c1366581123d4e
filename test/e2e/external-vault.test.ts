// External-vault secrets through the real gateway (docs/injection.md#external-vault, docs/agent-errors.md#credential_unavailable
// credential_unavailable, docs/injection.md#external-vault): a real credgate process resolves `op://` references against a
// 1Password Connect stand-in served over HTTPS (reached through CREDGATE_RESOLVE and trusted through
// CREDGATE_UPSTREAM_CA_FILE, like any outbound call), injects the value into requests curl sends to a real
// TLS upstream, caches it (Connect is asked once per reference per minute, once for concurrent requests),
// and refuses with 502 — forwarding nothing — when the value cannot be obtained. Cache expiry is covered
// at unit level (test/unit/vault.test.ts) with an injectable clock. With two gateway processes the cache is the
// instance's (docs/operations.md#gateway-workers-and-caches): one lookup for both, and a Connect outage within
// the minute is invisible on either process (tunnels are placed on both, checked with `ss`).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually, gatewayCa, resolveEntries, run } from "../support/gateway.ts";
import { FakeConnect, startOpConnect, type RunningConnect } from "../support/opConnect.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { openProcessTunnel, roundsOnEveryTunnel, tunnelsOnEveryProcess } from "../support/processTunnels.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.vault.test";
const CONNECT_HOST = "op-connect.test";
const CONNECT_TOKEN = `op-connect-token-${crypto.randomUUID()}`;
const VALUE_1 = `sk_vault_first_${crypto.randomUUID().replace(/-/g, "")}`;
const VALUE_2 = `sk_vault_second_${crypto.randomUUID().replace(/-/g, "")}`;
const PARALLEL_VALUE = `sk_vault_parallel_${crypto.randomUUID().replace(/-/g, "")}`;
const VALUES = [VALUE_1, VALUE_2, PARALLEL_VALUE];

const fake = new FakeConnect(CONNECT_TOKEN);
const prod = fake.vault("Prod");
const stripe = fake.item(prod, "Stripe", { credential: VALUE_1 });
const parallelItem = fake.item(prod, "Parallel", { "API Key": PARALLEL_VALUE });
// A token pasted with a typographic ellipsis (U+2026) and one with a line break: neither can be a header value.
fake.item(prod, "Pasted", { credential: "ghp_abc\u2026" });
fake.item(prod, "Multiline", { credential: "ghp_first\nsecond" });

let connect: RunningConnect;
let pki: TestPki;
let up: TestUpstream;
let cg: RunningCredgate;
let wrongToken: RunningCredgate;
let caFile: string;
let env: Record<string, string>;

beforeAll(async () => {
  // openssl runs (spawnSync) before any in-process server starts.
  pki = makePki([HOST, CONNECT_HOST]);
  up = startUpstream(pki);
  connect = startOpConnect(fake, pki);
  env = {
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: `${resolveEntries([HOST], up.port)},${resolveEntries([CONNECT_HOST], connect.port)}`,
    CREDGATE_OP_CONNECT_HOST: `https://${CONNECT_HOST}:${connect.port}`,
  };
  [cg, wrongToken] = await Promise.all([
    startCredgate({ env: { ...env, CREDGATE_OP_CONNECT_TOKEN: CONNECT_TOKEN } }),
    startCredgate({ env: { ...env, CREDGATE_OP_CONNECT_TOKEN: "not-the-connect-token" } }),
  ]);
  caFile = (await gatewayCa(cg)).file;
}, 40_000);

afterAll(async () => {
  await cg?.stop();
  await wrongToken?.stop();
  await up?.stop();
  await connect?.stop();
});

async function vaultSecret(on: RunningCredgate, name: string, opRef: string, pathPattern: string): Promise<string> {
  const r = await on.api("POST", "/v1/secrets", {
    body: {
      name,
      type: "generic",
      valueSource: "external_vault",
      opRef,
      opDisplay: { vault: "Prod", item: name, field: "credential" },
      hostPattern: HOST,
      pathPattern,
      injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" },
    },
  });
  if (r.status !== 201) throw new Error(`create secret: ${r.status} ${r.text}`);
  return r.body.id;
}

/** curl through the gateway (CONNECT + MITM) as the default agent. */
async function curl(on: RunningCredgate, ca: string, path: string, headers: string[] = []): Promise<{ status: number; body: string }> {
  const proxy = `http://x:${on.keys.defaultAgentToken}@127.0.0.1:${on.gatewayPort}`;
  const extra = headers.flatMap((h) => ["-H", h]);
  const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", ca, "-H", "Authorization: Bearer credgate-managed", ...extra, "-w", "\n%{http_code}", `https://${HOST}:${up.port}${path}`]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

const seenAt = (path: string) => up.seen.filter((s) => s.url === path);
/** The 502 for a vault value that could not be read names the secret (docs/agent-errors.md#credential_unavailable). */
const unavailable = (secretName: string) =>
  JSON.stringify({ error: "credential_unavailable", message: `credgate could not obtain the credential for ${HOST}, so the request was not forwarded.`, secret_name: secretName });

describe("resolution and caching", () => {
  test("the upstream receives the vault value; Connect is asked once (with the bearer token), then not again within 60 s", async () => {
    await vaultSecret(cg, "Stripe", "op://Prod/Stripe/credential", "/stripe/*");
    const before = fake.requests.length;
    const first = await curl(cg, caFile, "/stripe/1");
    expect(first.status).toBe(200);
    expect(seenAt("/stripe/1")[0]!.headers.authorization).toBe(`Bearer ${VALUE_1}`);
    const calls = fake.since(before);
    expect(calls.map((c) => c.url)).toEqual([`/v1/vaults?filter=name eq "Prod"`, `/v1/vaults/${prod.id}/items?filter=title eq "Stripe"`, `/v1/vaults/${prod.id}/items/${stripe.id}`]);
    expect(calls.every((c) => c.authorization === `Bearer ${CONNECT_TOKEN}`)).toBe(true);

    const second = await curl(cg, caFile, "/stripe/2");
    expect(second.status).toBe(200);
    expect(seenAt("/stripe/2")[0]!.headers.authorization).toBe(`Bearer ${VALUE_1}`);
    expect(fake.requests.length).toBe(before + 3);

    // A new value in 1Password is not fetched while the cached one is fresh (expiry: unit tests).
    stripe.fields[0]!.value = VALUE_2;
    const third = await curl(cg, caFile, "/stripe/3");
    expect(third.status).toBe(200);
    expect(seenAt("/stripe/3")[0]!.headers.authorization).toBe(`Bearer ${VALUE_1}`);
    expect(fake.requests.length).toBe(before + 3);
  });

  test("concurrent requests for an uncached reference (by vault and item id, field by label) share one lookup", async () => {
    await vaultSecret(cg, "Parallel", `op://${prod.id}/${parallelItem.id}/API Key`, "/parallel/*");
    const before = fake.requests.length;
    fake.delayMs = 300;
    try {
      const results = await Promise.all([1, 2, 3, 4, 5].map((i) => curl(cg, caFile, `/parallel/${i}`)));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    } finally {
      fake.delayMs = 0;
    }
    for (const i of [1, 2, 3, 4, 5]) expect(seenAt(`/parallel/${i}`)[0]!.headers.authorization).toBe(`Bearer ${PARALLEL_VALUE}`);
    expect(fake.since(before).map((c) => c.url)).toEqual([`/v1/vaults/${prod.id}`, `/v1/vaults/${prod.id}/items/${parallelItem.id}`]);
  });
});

describe("failures → 502 credential_unavailable, nothing forwarded", () => {
  test("a missing item: 502 with the docs/agent-errors.md#credential_unavailable body; the failure is cached (Connect not asked again at once)", async () => {
    await vaultSecret(cg, "Missing", "op://Prod/Missing/credential", "/missing/*");
    const before = fake.requests.length;
    const r = await curl(cg, caFile, "/missing/1");
    expect(r.status).toBe(502);
    expect(r.body).toBe(unavailable("Missing"));
    expect(seenAt("/missing/1")).toHaveLength(0);
    expect(fake.requests.length).toBe(before + 2);

    const again = await curl(cg, caFile, "/missing/2");
    expect(again.status).toBe(502);
    expect(seenAt("/missing/2")).toHaveLength(0);
    expect(fake.requests.length).toBe(before + 2);
  });

  test("a Connect token the server rejects: 502, the upstream sees nothing", async () => {
    const ca = (await gatewayCa(wrongToken)).file;
    await vaultSecret(wrongToken, "Stripe", "op://Prod/Stripe/credential", "/wrong-token/*");
    const before = fake.requests.length;
    const r = await curl(wrongToken, ca, "/wrong-token/1");
    expect(r.status).toBe(502);
    expect(r.body).toBe(unavailable("Stripe"));
    expect(seenAt("/wrong-token/1")).toHaveLength(0);
    expect(fake.since(before).map((c) => c.authorization)).toEqual(["Bearer not-the-connect-token"]);
  });

  test("a vault value that cannot go into a header: 502 naming the reason, nothing forwarded, the log names the reference", async () => {
    const notHeaderSafe = (secretName: string) =>
      JSON.stringify({
        error: "credential_unavailable",
        message:
          `credgate could not obtain the credential for ${HOST}, so the request was not forwarded. ` +
          "The value in the external vault cannot be sent in an HTTP header: it must contain only printable ASCII characters (no line breaks, control or non-ASCII characters).",
        secret_name: secretName,
      });
    await vaultSecret(cg, "Pasted", "op://Prod/Pasted/credential", "/pasted/*");
    await vaultSecret(cg, "Multiline", "op://Prod/Multiline/credential", "/multiline/*");
    for (const [path, name] of [["/pasted/1", "Pasted"], ["/multiline/1", "Multiline"]] as const) {
      const r = await curl(cg, caFile, path, [`x-request-id: vault-${path.slice(1, -2)}`]);
      expect(r.status).toBe(502);
      expect(r.body).toBe(notHeaderSafe(name));
      expect(seenAt(path)).toHaveLength(0);
    }
    expect(cg.output()).toContain('"opRef":"op://Prod/Pasted/credential","reason":"not_printable_ascii"');
    // Written deep inside the request's pipeline, the line still carries the request's id.
    const line = cg
      .output()
      .split("\n")
      .find((l) => l.includes('"opRef":"op://Prod/Pasted/credential"') && l.includes("not_printable_ascii"));
    expect(JSON.parse(line!)).toMatchObject({ level: "warn", requestId: "vault-pasted" });
  });

  test("Connect no longer configured (restart without CREDGATE_OP_CONNECT_*): the stored vault secret gives 502, Connect is not contacted", async () => {
    await wrongToken.stop();
    const restarted = await startCredgate({ dataDir: wrongToken.dataDir, env: { CREDGATE_UPSTREAM_CA_FILE: env.CREDGATE_UPSTREAM_CA_FILE!, CREDGATE_RESOLVE: env.CREDGATE_RESOLVE! } });
    wrongToken = restarted;
    const ca = (await gatewayCa(restarted)).file;
    const before = fake.requests.length;
    const r = await curl(restarted, ca, "/wrong-token/2");
    expect(r.status).toBe(502);
    expect(r.body).toBe(unavailable("Stripe"));
    expect(seenAt("/wrong-token/2")).toHaveLength(0);
    expect(fake.requests.length).toBe(before);
  }, 30_000);
});

describe("the value stays secret", () => {
  test("never in credgate's stdout/stderr nor in the request log API; the log rows record 200 and 502", async () => {
    const rows = await eventually(async () => {
      const r = await cg.api("GET", "/v1/logs?limit=500");
      const data = (r.body?.data ?? []) as any[];
      return data.some((row) => row.path === "/missing/2") && data.some((row) => row.path === "/stripe/3") ? { data, text: r.text } : null;
    }, 12_000);
    expect(rows).not.toBeNull();
    const byPath = (p: string) => rows!.data.find((row) => row.path === p);
    expect(byPath("/stripe/1")).toMatchObject({ status: 200, decision: "allowed", injectionCount: 1 });
    expect(byPath("/missing/1")).toMatchObject({ status: 502, decision: "error", injectionCount: 0 });
    // The secrets API shows the reference, never a value.
    const secrets = await cg.api("GET", "/v1/secrets");
    const out = cg.output() + rows!.text + secrets.text;
    for (const v of VALUES) expect(out).not.toContain(v);
    expect(out).not.toContain(CONNECT_TOKEN);
    expect(cg.output()).toContain('"reason":"item_not_found"');
  }, 20_000);
});

describe("two gateway processes share one vault cache (docs/operations.md#gateway-workers-and-caches)", () => {
  const OUTAGE_VALUE = `sk_vault_outage_${crypto.randomUUID().replace(/-/g, "")}`;
  const outageFake = new FakeConnect(CONNECT_TOKEN);
  outageFake.item(outageFake.vault("Prod"), "Outage", { credential: OUTAGE_VALUE });
  let outageConnect: RunningConnect;
  let multi: RunningCredgate;
  let multiCa: string;

  beforeAll(async () => {
    outageConnect = startOpConnect(outageFake, pki);
    multi = await startCredgate({
      env: {
        CREDGATE_GATEWAY_WORKERS: "2",
        CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
        CREDGATE_RESOLVE: `${resolveEntries([HOST], up.port)},${resolveEntries([CONNECT_HOST], outageConnect.port)}`,
        CREDGATE_OP_CONNECT_HOST: `https://${CONNECT_HOST}:${outageConnect.port}`,
        CREDGATE_OP_CONNECT_TOKEN: CONNECT_TOKEN,
      },
    });
    multiCa = (await gatewayCa(multi)).pem;
  }, 40_000);

  afterAll(async () => {
    await multi?.stop();
    await outageConnect?.stop();
  });

  /** A CONNECT tunnel with TLS inside, and the process that holds it. */
  const tunnel = () => openProcessTunnel(multi.gatewayPort, multi.keys.defaultAgentToken, multiCa, HOST, up.port);

  test("one Connect lookup for both processes; Connect stopped: every request on either process within the minute still gets the value", async () => {
    await vaultSecret(multi, "Outage", "op://Prod/Outage/credential", "/outage/*");
    // Tunnels until each of the two processes holds at least three.
    const tunnels = await tunnelsOnEveryProcess(tunnel, 2, 3);
    try {
      const { round: everywhere, paths } = roundsOnEveryTunnel(tunnels, "/outage/");
      await everywhere();
      // Three Connect calls (vault by name, item by title, the item): one lookup for the instance.
      expect(outageFake.requests.length).toBe(3);
      await everywhere();
      expect(outageFake.requests.length).toBe(3);

      await outageConnect.stop();
      await everywhere();
      await everywhere();
      for (const path of paths) expect(seenAt(path)[0]?.headers.authorization).toBe(`Bearer ${OUTAGE_VALUE}`);
      expect(outageFake.requests.length).toBe(3);
      // Neither process logged a lookup failure: the outage was invisible. The value crossed to the worker over
      // IPC, never into a log line.
      expect(multi.output()).not.toContain('"opRef":"op://Prod/Outage/credential","reason"');
      expect(multi.output()).not.toContain(OUTAGE_VALUE);
    } finally {
      for (const t of tunnels) t.close();
    }
  }, 60_000);
});
