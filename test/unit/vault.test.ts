// External vault resolution (docs/injection.md#external-vault): the op:// reference grammar, field selection,
// the 1Password Connect wire calls (against the stand-in server model, no network), the 60 s / 30 s cache
// with an injectable clock, single flight, the 15 s timeout (shortened here), and log hygiene. The cache itself
// (shared by the gateway processes) is covered in test/unit/sharedCache.test.ts.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { log } from "../../src/observability/log.ts";
import { connectBaseUrl, parseOpRef, pickField } from "../../src/vault/onePasswordConnect.ts";
import { VaultResolver, VAULT_FAILURE_TTL_MS, VAULT_SUCCESS_TTL_MS, VAULT_TIMEOUT_MS } from "../../src/vault/resolver.ts";
import { Outbound } from "../../src/services/outbound.ts";
import { FakeConnect, fakeFetch, opId, startOpConnect } from "../support/opConnect.ts";

const TOKEN = "connect-token-abc";

beforeAll(() => log.setQuiet(true));

function setup(opts: { token?: string | null; host?: string | null; timeoutMs?: number } = {}) {
  const fake = new FakeConnect(TOKEN);
  let now = 1_000_000;
  const resolver = new VaultResolver({
    host: opts.host === undefined ? "http://op-connect.test:8080" : opts.host,
    token: opts.token === undefined ? TOKEN : opts.token,
    fetch: fakeFetch(fake),
    now: () => now,
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
  });
  return {
    fake,
    resolver,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe("op:// references", () => {
  test("three non-empty segments; surrounding whitespace trimmed", async () => {
    expect(parseOpRef("op://Prod/Stripe/credential")).toEqual({ vault: "Prod", item: "Stripe", field: "credential" });
    expect(parseOpRef(" op://My Vault/My Item/api key ")).toEqual({ vault: "My Vault", item: "My Item", field: "api key" });
    for (const bad of ["op://v/i", "op://v//f", "op://v/i/s/f", "vault/item/field", "op:// /i/f", "https://v/i/f"]) expect(parseOpRef(bad)).toBeNull();
  });

  test("Connect base URL: trailing slashes dropped, a bare host:port means http, other schemes refused", async () => {
    expect(connectBaseUrl("http://localhost:8080/")).toBe("http://localhost:8080");
    expect(connectBaseUrl("https://connect.internal")).toBe("https://connect.internal");
    expect(connectBaseUrl("op-connect:8080")).toBe("http://op-connect:8080");
    expect(connectBaseUrl("ftp://x")).toBeNull();
  });
});

describe("field selection", () => {
  const item = {
    fields: [
      { id: "username", label: "username", value: "alice" },
      { id: "password", label: "password", value: "pw-1" },
      { id: "k1x", label: "API Key", value: "key-1", section: { id: "s1" } },
      { id: "dup1", label: "token", value: "t-a", section: { id: "a" } },
      { id: "dup2", label: "token", value: "t-b", section: { id: "b" } },
      { id: "notes", label: "notes" },
    ],
  };
  test("by id, then exact label, then case-insensitive label, in any section", async () => {
    expect(pickField(item, "password")).toBe("pw-1");
    expect(pickField(item, "k1x")).toBe("key-1");
    expect(pickField(item, "API Key")).toBe("key-1");
    expect(pickField(item, "api key")).toBe("key-1");
    expect(pickField(item, "dup2")).toBe("t-b");
  });
  test("a label used twice is ambiguous; missing and empty fields fail", async () => {
    expect(() => pickField(item, "token")).toThrow("field_ambiguous");
    expect(() => pickField(item, "nope")).toThrow("field_not_found");
    expect(() => pickField(item, "notes")).toThrow("field_empty");
    expect(() => pickField({}, "x")).toThrow("field_not_found");
  });
});

describe("Connect lookups", () => {
  test("by names: vault filter, item filter, item details, with the bearer token", async () => {
    const { fake, resolver } = setup();
    const v = fake.vault("Prod");
    const it = fake.item(v, "Stripe", { credential: "sk_live_123" });
    expect(await resolver.resolve("op://Prod/Stripe/credential")).toEqual({ ok: true, value: "sk_live_123" });
    expect(fake.requests.map((r) => r.url)).toEqual([`/v1/vaults?filter=name eq "Prod"`, `/v1/vaults/${v.id}/items?filter=title eq "Stripe"`, `/v1/vaults/${v.id}/items/${it.id}`]);
    expect(fake.requests.every((r) => r.authorization === `Bearer ${TOKEN}` && r.method === "GET")).toBe(true);
  });

  test("by ids: two direct GETs; an id-shaped name falls back to the name filter", async () => {
    const { fake, resolver } = setup();
    const v = fake.vault("Prod");
    const it = fake.item(v, "Stripe", { credential: "v-by-id" });
    expect(await resolver.resolve(`op://${v.id}/${it.id}/credential`)).toEqual({ ok: true, value: "v-by-id" });
    expect(fake.requests.map((r) => r.url)).toEqual([`/v1/vaults/${v.id}`, `/v1/vaults/${v.id}/items/${it.id}`]);

    const named = "abcdefghijklmnopqrstuvwxyz";
    const v2 = fake.vault(named);
    fake.item(v2, "Item", { field: "v-named" });
    expect(await resolver.resolve(`op://${named}/Item/field`)).toEqual({ ok: true, value: "v-named" });
  });

  test("names with quotes and backslashes are escaped in the SCIM filter", async () => {
    const { fake, resolver } = setup();
    const v = fake.vault('Team "A" \\ ops');
    fake.item(v, 'Key "1"', { value: "escaped-ok" });
    expect(await resolver.resolve('op://Team "A" \\ ops/Key "1"/value')).toEqual({ ok: true, value: "escaped-ok" });
    expect(fake.requests[0]!.url).toBe('/v1/vaults?filter=name eq "Team \\"A\\" \\\\ ops"');
  });

  test("failures carry a reason: missing vault, item, field; duplicates; wrong token; other statuses", async () => {
    const { fake, resolver } = setup();
    const v = fake.vault("Prod");
    fake.item(v, "Stripe", { credential: "x" });
    fake.item(v, "Twin", { a: "1" });
    fake.item(v, "Twin", { a: "2" });
    fake.vault("Double");
    fake.vault("Double");
    expect(await resolver.resolve("op://Nope/Stripe/credential")).toEqual({ ok: false, reason: "vault_not_found" });
    expect(await resolver.resolve("op://Prod/Nope/credential")).toEqual({ ok: false, reason: "item_not_found" });
    expect(await resolver.resolve("op://Prod/Stripe/nope")).toEqual({ ok: false, reason: "field_not_found" });
    expect(await resolver.resolve("op://Prod/Twin/a")).toEqual({ ok: false, reason: "item_ambiguous" });
    expect(await resolver.resolve("op://Double/x/y")).toEqual({ ok: false, reason: "vault_ambiguous" });
    expect(await resolver.resolve("not-a-ref")).toEqual({ ok: false, reason: "invalid_reference" });
    fake.token = "rotated";
    expect(await resolver.resolve("op://Prod/Stripe/other")).toEqual({ ok: false, reason: "unauthorized" });
  });

  test("a network error is `unreachable`; a slow server hits the timeout (15 s by default)", async () => {
    expect(VAULT_TIMEOUT_MS).toBe(15_000);
    const down = new VaultResolver({ host: "http://127.0.0.1:1", token: TOKEN, fetch: () => Promise.reject(new Error("connection refused")) });
    expect(await down.resolve("op://a/b/c")).toEqual({ ok: false, reason: "unreachable" });

    const { fake, resolver } = setup({ timeoutMs: 50 });
    fake.item(fake.vault("Slow"), "I", { f: "late" });
    fake.delayMs = 300;
    const started = performance.now();
    expect(await resolver.resolve("op://Slow/I/f")).toEqual({ ok: false, reason: "timeout" });
    expect(performance.now() - started).toBeLessThan(250);
  });

  test("over real HTTP through Outbound (CREDGATE_RESOLVE pins the Connect host); the timeout aborts a hung server", async () => {
    const fake = new FakeConnect(TOKEN);
    fake.item(fake.vault("Prod"), "Svc", { key: "over-the-wire" });
    const server = startOpConnect(fake);
    try {
      const outbound = new Outbound({ resolve: new Map([[`op-connect.test:${server.port}`, "127.0.0.1"]]), upstreamCaFile: null });
      const make = (timeoutMs?: number) =>
        new VaultResolver({ host: `http://op-connect.test:${server.port}`, token: TOKEN, fetch: (u, i) => outbound.fetch(u, i), ...(timeoutMs ? { timeoutMs } : {}) });
      expect(await make().resolve("op://Prod/Svc/key")).toEqual({ ok: true, value: "over-the-wire" });
      expect(fake.requests[0]!.url).toBe('/v1/vaults?filter=name eq "Prod"');
      fake.delayMs = 2_000;
      const started = performance.now();
      expect(await make(100).resolve("op://Prod/Svc/key")).toEqual({ ok: false, reason: "timeout" });
      expect(performance.now() - started).toBeLessThan(1_500);
    } finally {
      fake.delayMs = 0;
      await server.stop();
    }
  });

  test("not configured (no host, no token, or an unusable host): every reference fails synchronously, no request", async () => {
    for (const opts of [{ host: null }, { token: null }, { host: "ftp://x" }]) {
      const { fake, resolver } = setup(opts);
      expect(resolver.configured).toBe(false);
      expect(resolver.peek("op://a/b/c")).toEqual({ ok: false, reason: "not_configured" });
      expect(await resolver.resolve("op://a/b/c")).toEqual({ ok: false, reason: "not_configured" });
      expect(fake.requests).toHaveLength(0);
    }
  });
});

describe("cache", () => {
  test("a success is served from the cache (synchronously via peek) for 60 s, then looked up again", async () => {
    expect(VAULT_SUCCESS_TTL_MS).toBe(60_000);
    const { fake, resolver, advance } = setup();
    const it = fake.item(fake.vault("Prod"), "Stripe", { credential: "v1" });
    const ref = "op://Prod/Stripe/credential";
    expect(resolver.peek(ref)).toBeUndefined();
    expect(await resolver.resolve(ref)).toEqual({ ok: true, value: "v1" });
    const calls = fake.requests.length;
    it.fields[0]!.value = "v2";
    advance(VAULT_SUCCESS_TTL_MS - 1);
    expect(resolver.peek(ref)).toEqual({ ok: true, value: "v1" });
    expect(await resolver.resolve(ref)).toEqual({ ok: true, value: "v1" });
    expect(fake.requests.length).toBe(calls);
    advance(1);
    expect(resolver.peek(ref)).toBeUndefined();
    expect(await resolver.resolve(ref)).toEqual({ ok: true, value: "v2" });
    expect(fake.requests.length).toBe(calls * 2);
  });

  test("a failure is cached for 30 s, then retried", async () => {
    expect(VAULT_FAILURE_TTL_MS).toBe(30_000);
    const { fake, resolver, advance } = setup();
    const v = fake.vault("Prod");
    const ref = "op://Prod/Later/key";
    expect(await resolver.resolve(ref)).toEqual({ ok: false, reason: "item_not_found" });
    const calls = fake.requests.length;
    fake.item(v, "Later", { key: "now-there" });
    advance(VAULT_FAILURE_TTL_MS - 1);
    expect(resolver.peek(ref)).toEqual({ ok: false, reason: "item_not_found" });
    expect(await resolver.resolve(ref)).toEqual({ ok: false, reason: "item_not_found" });
    expect(fake.requests.length).toBe(calls);
    advance(1);
    expect(await resolver.resolve(ref)).toEqual({ ok: true, value: "now-there" });
  });

  test("concurrent lookups of one reference share one in-flight request set; other references do not", async () => {
    const { fake, resolver } = setup();
    const v = fake.vault("Prod");
    fake.item(v, "A", { f: "va" });
    fake.item(v, "B", { f: "vb" });
    fake.delayMs = 30;
    const results = await Promise.all([...Array(8)].map(() => resolver.resolve("op://Prod/A/f")));
    expect(results.every((r) => r.ok && r.value === "va")).toBe(true);
    expect(fake.requests).toHaveLength(3);
    const [a, b] = await Promise.all([resolver.resolve(`op://${v.id}/A/f`), resolver.resolve("op://Prod/B/f")]);
    expect(a).toEqual({ ok: true, value: "va" });
    expect(b).toEqual({ ok: true, value: "vb" });
  });
});

describe("log hygiene", () => {
  afterEach(() => log.setQuiet(true));
  test("lookups log the reference and a reason, never the value or the token", async () => {
    log.setQuiet(false);
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      const { fake, resolver } = setup();
      const secret = `vault-value-${opId()}`;
      fake.item(fake.vault("Prod"), "Svc", { key: secret });
      expect(await resolver.resolve("op://Prod/Svc/key")).toEqual({ ok: true, value: secret });
      expect(await resolver.resolve("op://Prod/Gone/key")).toEqual({ ok: false, reason: "item_not_found" });
      fake.token = "other";
      await resolver.resolve("op://Prod/Svc/other");
    } finally {
      process.stdout.write = write;
    }
    const out = lines.join("");
    expect(out).toContain("op://Prod/Svc/key");
    expect(out).toContain('"reason":"item_not_found"');
    expect(out).toContain('"reason":"unauthorized"');
    expect(out).not.toContain("vault-value-");
    expect(out).not.toContain(TOKEN);
  });
});
