// Injection through the real gateway (docs/injection.md#host-and-path-patterns, docs/injection.md#precedence, docs/injection.md#injection-variants, docs/gateway.md#proxy-authentication in-tunnel re-checks, docs/gateway.md#guidance-rewrite;
// docs/injection.md#injection-variants, docs/injection.md#host-and-path-patterns, docs/injection.md#precedence, docs/gateway.md#guidance-rewrite): every injection variant as the upstream receives it, precedence between organization
// and project secrets, the host and path pattern tables, adversarial hosts, changes that apply inside an
// already-open tunnel, and the uncredentialed-response guidance.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type SeenRequest, type TestUpstream } from "../support/upstream.ts";
import * as tls from "node:tls";
import { PROXY_AUTH_BODY, ResponseReader, basic, gatewayCa, openConnect, openTlsTunnel, startRawUpstream, type RawUpstream, rawRequest, resolveEntries, run, type RawResponse } from "../support/gateway.ts";

const PUBLIC_URL = "https://credgate.example";
const EXAMPLE_HOSTS = ["api.example.com", "a.example.com", "a.b.example.com", "example.com", "api.example.com.evil.test", "notexample.com"];
const INJ_HOSTS = [
  "hdr.inj.test",
  "xkey.inj.test",
  "param.inj.test",
  "tmpl.inj.test",
  "regex.inj.test",
  "llma.inj.test",
  "llmaoauth.inj.test",
  "llmaexplicit.inj.test",
  "llmb.inj.test",
  "llmboauth.inj.test",
  "prec.inj.test",
  "tier.inj.test",
  "paths.inj.test",
  "change.inj.test",
  "regen.inj.test",
  "guide.inj.test",
  "guidecred.inj.test",
  "restricted.inj.test",
  "verbatim.inj.test",
];

let cg: RunningCredgate;
let up: TestUpstream;
let up2: TestUpstream;
let rawUp: RawUpstream;
let ca: { pem: string; file: string };
let token: string;

beforeAll(async () => {
  const pki = makePki([...INJ_HOSTS, ...EXAMPLE_HOSTS, "*.example.com", "::1"]);
  up = startUpstream(pki);
  // A second upstream on another port, for "the request port is ignored".
  up2 = startUpstream(pki);
  up.handle(guidanceAnswers);
  rawUp = await startRawUpstream(pki);
  cg = await startCredgate({
    env: {
      CREDGATE_PUBLIC_URL: PUBLIC_URL,
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: `${resolveEntries([...INJ_HOSTS, ...EXAMPLE_HOSTS], up.port)},${resolveEntries(["api.example.com"], up2.port)},[::1]:${up.port}:127.0.0.1,verbatim.inj.test:${rawUp.port}:127.0.0.1`,
    },
  });
  ca = await gatewayCa(cg);
  token = cg.keys.defaultAgentToken;
}, 30_000);

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  await up2?.stop();
  rawUp?.close();
});

// ————— helpers —————

async function createSecret(body: Record<string, unknown>, org = false): Promise<string> {
  const r = await cg.api("POST", org ? "/v1/org/secrets" : "/v1/secrets", { body, ...(org ? { key: cg.keys.orgApiKey } : {}) });
  if (r.status !== 201) throw new Error(`create secret: ${r.status} ${r.text}`);
  return r.body.id;
}

const headerSecret = (name: string, host: string, value: string, headerName: string, extra: Record<string, unknown> = {}) =>
  createSecret({ name, type: "generic", value, hostPattern: host, injectionConfig: { headerName }, ...extra });

async function createAgent(identifier: string, mode: "all" | "grants"): Promise<{ id: string; token: string }> {
  const c = await cg.api("POST", "/v1/agents", { body: { name: identifier, identifier, mode } });
  expect(c.status).toBe(201);
  const list = await cg.api("GET", "/v1/agents");
  const agent = list.body.find((a: any) => a.id === c.body.id);
  return { id: c.body.id, token: agent.accessToken };
}

/** One request through a fresh MITM tunnel: CONNECT `authority`, TLS for `servername`, raw HTTP/1.1. */
async function viaGateway(
  host: string,
  path: string,
  opts: { headers?: string[]; method?: string; body?: string; token?: string; authority?: string; servername?: string; upstream?: TestUpstream } = {},
): Promise<{ res: RawResponse; seen: SeenRequest | undefined }> {
  const u = opts.upstream ?? up;
  const authority = opts.authority ?? `${host}:${u.port}`;
  const t = await openTlsTunnel(cg.gatewayPort, authority, opts.token ?? token, ca.pem, opts.servername ?? host);
  const before = u.seen.length;
  t.tls.write(rawRequest(opts.method ?? "GET", path, authority, opts.headers ?? [], opts.body));
  const res = await t.reader.response();
  t.tls.destroy();
  const fresh = u.seen.slice(before);
  return { res, seen: fresh.find((s) => s.url === path) ?? fresh[fresh.length - 1] };
}

/** The upstream request recorded for exactly this path+query, after `since`. */
function seenFor(u: TestUpstream, url: string, since = 0): SeenRequest[] {
  return u.seen.slice(since).filter((s) => s.url === url);
}

// ————— docs/injection.md#injection-variants—————

describe("injection variants (docs/injection.md#injection-variants)", () => {
  test("header with valueFormat: every Authorization header is replaced by `Bearer <value>` (docs/injection.md#injection-variants)", async () => {
    await createSecret({ name: "bearer", type: "generic", value: "HDR-S3CR3T", hostPattern: "hdr.inj.test", injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } });
    const { res, seen } = await viaGateway("hdr.inj.test", "/v1/me", { headers: ["Authorization: Bearer credgate-managed", "Authorization: Bearer second-copy", `Proxy-Authorization: Basic ${btoa(`x:${token}`)}`] });
    expect(res.status).toBe(200);
    expect(seen!.url).toBe("/v1/me");
    expect(seen!.headers.authorization).toBe("Bearer HDR-S3CR3T");
    expect(seen!.headers["proxy-authorization"]).toBeUndefined();
    expect(JSON.stringify(seen!.headers)).not.toContain(token);
  });

  test("header without valueFormat: added with the raw value when the agent sent none", async () => {
    await headerSecret("xkey", "xkey.inj.test", "XKEY-S3CR3T", "x-api-key");
    const { seen } = await viaGateway("xkey.inj.test", "/v1/things", { headers: ["Accept: application/json"] });
    expect(seen!.headers["x-api-key"]).toBe("XKEY-S3CR3T");
    expect(seen!.headers.accept).toBe("application/json");
  });

  test("query parameter: the first same-named parameter is replaced, other bytes verbatim; else form-urlencoded and appended (docs/injection.md#injection-variants)", async () => {
    await createSecret({ name: "param", type: "generic", value: "P S&=3", hostPattern: "param.inj.test", injectionConfig: { paramName: "api_key" } });
    const cases: [string, string][] = [
      ["/v1/m?limit=5&api_key=ph", "/v1/m?limit=5&api_key=P+S%26%3D3"],
      ["/v1/m?limit=5", "/v1/m?limit=5&api_key=P+S%26%3D3"],
      ["/v1/m", "/v1/m?api_key=P+S%26%3D3"],
      ["/v1/m?x=%7e%20&api_key=ph&api_key=ph2", "/v1/m?x=%7e%20&api_key=P+S%26%3D3&api_key=ph2"],
    ];
    for (const [sent, expected] of cases) {
      const before = up.seen.length;
      const { res } = await viaGateway("param.inj.test", sent);
      expect(res.status).toBe(200);
      expect(seenFor(up, expected, before).length).toBe(1);
    }
  });

  // A raw upstream shows the exact request line that left the gateway: the request-target goes byte for
  // byte as the agent sent it, only the injected parameter changes (docs/injection.md#injection-variants "other bytes are kept verbatim").
  test("query parameter and request-target: bytes a URL parser would re-encode or normalise are kept verbatim", async () => {
    await createSecret({ name: "verbatim", type: "generic", value: "VERBATIM", hostPattern: "verbatim.inj.test", injectionConfig: { paramName: "api_key" } });
    rawUp.respond((_h, sock) => sock.end("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    const cases: [sent: string, expected: string][] = [
      [`/v1/q/{id}/^/./x?q='x'&s="y"&api_key=ph`, `/v1/q/{id}/^/./x?q='x'&s="y"&api_key=VERBATIM`],
      ["/a/../b/%2F/c%2fd/sp%20ace|pipe?x=1?y=2&api_key=ph&api_key=second", "/a/../b/%2F/c%2fd/sp%20ace|pipe?x=1?y=2&api_key=VERBATIM&api_key=second"],
      // UTF-8 bytes sent raw (no percent-encoding), read here as latin1: they must arrive unchanged.
      [Buffer.from("/caf\u00e9/\u20ac?api_key=ph", "utf8").toString("latin1"), Buffer.from("/caf\u00e9/\u20ac?api_key=VERBATIM", "utf8").toString("latin1")],
    ];
    for (const [sent, expected] of cases) {
      const authority = `verbatim.inj.test:${rawUp.port}`;
      const t = await openTlsTunnel(cg.gatewayPort, authority, token, ca.pem, "verbatim.inj.test");
      const before = rawUp.heads.length;
      t.tls.write(rawRequest("GET", sent, authority));
      const res = await t.reader.response();
      t.tls.destroy();
      expect(res.status).toBe(200);
      expect(rawUp.heads[before]!.split("\r\n")[0]).toBe(`GET ${expected} HTTP/1.1`);
    }
  });

  // The header lines too: what the gateway does not inject or strip leaves as the agent wrote it.
  test("header lines go upstream as sent: names keep their case, repeated fields stay separate lines in order, the injected header takes the placeholder's place", async () => {
    await createSecret({ name: "verbatim header", type: "generic", value: "HDR-S3CR3T", hostPattern: "verbatim.inj.test", injectionConfig: { headerName: "X-Api-Token" } });
    rawUp.respond((_h, sock) => sock.end("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    const authority = `verbatim.inj.test:${rawUp.port}`;
    const t = await openTlsTunnel(cg.gatewayPort, authority, token, ca.pem, "verbatim.inj.test");
    const before = rawUp.heads.length;
    const sent = ["X-Custom-CASE: One", "Accept: text/plain", "x-api-token: placeholder", "Accept: application/json", "Connection: keep-alive, X-Hop", "X-Hop: dropped", "Keep-Alive: timeout=5"];
    t.tls.write(rawRequest("GET", "/h", authority, sent));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(200);
    const lines = rawUp.heads[before]!.split("\r\n").filter(Boolean);
    // (The request line carries the query secret of the test before; the echo guard asks for an identity
    // encoding on every credentialed request, docs/guards.md#echo-guard.)
    expect(lines).toEqual(["GET /h?api_key=VERBATIM HTTP/1.1", `Host: ${authority}`, "X-Custom-CASE: One", "Accept: text/plain", "X-Api-Token: HDR-S3CR3T", "Accept: application/json", "accept-encoding: identity"]);
  });

  test("path template: the hole after the literal prefix becomes the value; other paths are untouched (docs/injection.md#injection-variants)", async () => {
    await createSecret({ name: "tmpl", type: "generic", value: "123:TPL-S3CR3T", hostPattern: "tmpl.inj.test", injectionConfig: { pathTemplate: "/bot{value}" } });
    let before = up.seen.length;
    await viaGateway("tmpl.inj.test", "/botPLACEHOLDER/sendMessage?chat=1");
    expect(seenFor(up, "/bot123:TPL-S3CR3T/sendMessage?chat=1", before).length).toBe(1);
    before = up.seen.length;
    await viaGateway("tmpl.inj.test", "/other/botX");
    expect(seenFor(up, "/other/botX", before).length).toBe(1);
  });

  test("path regex: first match only, $N expanded before the value goes in (a $ in the value stays literal), query untouched", async () => {
    await createSecret({ name: "regex", type: "generic", value: "R$1X", hostPattern: "regex.inj.test", injectionConfig: { pathRegex: "^/proj/([^/]+)/", pathReplacement: "/proj/{value}/$1/" } });
    const before = up.seen.length;
    await viaGateway("regex.inj.test", "/proj/PH/items?x=1");
    expect(seenFor(up, "/proj/R$1X/PH/items?x=1", before).length).toBe(1);
  });

  test("llm_a api-key: x-api-key set, the agent's Authorization removed (docs/injection.md#injection-variants)", async () => {
    await createSecret({ name: "anthropic", type: "llm_a", value: "sk-ant-api03-LLMA", hostPattern: "llma.inj.test" });
    const { seen } = await viaGateway("llma.inj.test", "/v1/messages", { method: "POST", body: "{}", headers: ["Authorization: Bearer x", "Content-Type: application/json", "anthropic-version: 2023-06-01"] });
    expect(seen!.headers["x-api-key"]).toBe("sk-ant-api03-LLMA");
    expect(seen!.headers.authorization).toBeUndefined();
    expect(seen!.headers["anthropic-version"]).toBe("2023-06-01");
  });

  test("llm_a oauth (sk-ant-oat…): Authorization Bearer set, the agent's x-api-key removed, nothing else added", async () => {
    await createSecret({ name: "claude oauth", type: "llm_a", value: "sk-ant-oat01-OAUTH", hostPattern: "llmaoauth.inj.test" });
    const { seen } = await viaGateway("llmaoauth.inj.test", "/v1/messages", { method: "POST", body: "{}", headers: ["x-api-key: ph"] });
    expect(seen!.headers.authorization).toBe("Bearer sk-ant-oat01-OAUTH");
    expect(seen!.headers["x-api-key"]).toBeUndefined();
    // Apart from what Bun's HTTP client adds on its own (accept, user-agent, connection), nothing else.
    const names = Object.keys(seen!.headers).filter((h) => !["accept", "user-agent", "connection"].includes(h)).sort();
    expect(names).toEqual(["authorization", "content-length", "host"]);
  });

  test("llm_a with an explicit metadata.authMode oauth behaves as oauth whatever the value's prefix", async () => {
    await createSecret({ name: "explicit oauth", type: "llm_a", value: "plain-token-EXPLICIT", hostPattern: "llmaexplicit.inj.test", metadata: { authMode: "oauth" } });
    const { seen } = await viaGateway("llmaexplicit.inj.test", "/v1/messages", { headers: ["x-api-key: ph"] });
    expect(seen!.headers.authorization).toBe("Bearer plain-token-EXPLICIT");
    expect(seen!.headers["x-api-key"]).toBeUndefined();
  });

  test("llm_b api-key: Authorization replaced with the key", async () => {
    await createSecret({ name: "openai", type: "llm_b", value: "sk-proj-LLMB", hostPattern: "llmb.inj.test" });
    const { seen } = await viaGateway("llmb.inj.test", "/v1/chat/completions", { headers: ["Authorization: Bearer ph"] });
    expect(seen!.headers.authorization).toBe("Bearer sk-proj-LLMB");
    expect(seen!.headers["chatgpt-account-id"]).toBeUndefined();
  });

  test("llm_b oauth (Codex auth.json): Bearer access_token plus chatgpt-account-id", async () => {
    const authJson = JSON.stringify({ auth_mode: "chatgpt", tokens: { access_token: "at-CODEX", refresh_token: "rt-x", account_id: "acct-123" } });
    await createSecret({ name: "codex", type: "llm_b", value: authJson, hostPattern: "llmboauth.inj.test" });
    const { seen } = await viaGateway("llmboauth.inj.test", "/backend-api/codex/responses", { headers: ["Authorization: Bearer credgate-managed"] });
    expect(seen!.headers.authorization).toBe("Bearer at-CODEX");
    expect(seen!.headers["chatgpt-account-id"]).toBe("acct-123");
    expect(JSON.stringify(seen!.headers)).not.toContain("rt-x");
  });
});

// ————— docs/injection.md#precedence—————

describe("precedence (docs/injection.md#precedence)", () => {
  test("organization and project secrets on the same header → project wins; different headers → both applied", async () => {
    // The project secrets are created first, so creation order cannot be what decides.
    await headerSecret("proj x-key", "prec.inj.test", "PROJ-VALUE", "x-key");
    await headerSecret("proj x-proj", "prec.inj.test", "PROJ-ONLY", "x-proj");
    await createSecret({ name: "org x-key", type: "generic", value: "ORG-VALUE", hostPattern: "prec.inj.test", injectionConfig: { headerName: "x-key" } }, true);
    await createSecret({ name: "org x-org", type: "generic", value: "ORG-ONLY", hostPattern: "prec.inj.test", injectionConfig: { headerName: "x-org" } }, true);
    const { seen } = await viaGateway("prec.inj.test", "/p");
    expect(seen!.headers["x-key"]).toBe("PROJ-VALUE");
    expect(seen!.headers["x-proj"]).toBe("PROJ-ONLY");
    expect(seen!.headers["x-org"]).toBe("ORG-ONLY");
  });

  test("within a tier, a path-specific secret beats a catch-all one on the same header, whatever the creation order", async () => {
    await createSecret({ name: "specific", type: "generic", value: "SPECIFIC", hostPattern: "tier.inj.test", pathPattern: "/v1/*", injectionConfig: { headerName: "x-tier" } });
    await createSecret({ name: "catch-all", type: "generic", value: "CATCHALL", hostPattern: "tier.inj.test", injectionConfig: { headerName: "x-tier" } });
    expect((await viaGateway("tier.inj.test", "/v1/a")).seen!.headers["x-tier"]).toBe("SPECIFIC");
    expect((await viaGateway("tier.inj.test", "/v2/a")).seen!.headers["x-tier"]).toBe("CATCHALL");
  });
});

// ————— docs/injection.md#host-and-path-patterns—————

describe("path patterns (docs/injection.md#host-and-path-patterns table, docs/injection.md#host-and-path-patterns)", () => {
  // One host, one header per pattern: each request shows which patterns matched.
  const PATTERNS: Record<string, string | undefined> = {
    "x-p-v1-slash-star": "/v1/*",
    "x-p-v1-star": "/v1*",
    "x-p-exact": "/v1/models",
    "x-p-segments": "/repos/*/*/issues",
    "x-p-trailing": "/repos/*/*",
    "x-p-glob": "/files/*.json",
    "x-p-unset": undefined,
    "x-p-star": "*",
  };
  const CASES: [string, string[]][] = [
    ["/v1", ["x-p-v1-slash-star", "x-p-v1-star"]],
    ["/v1/models", ["x-p-v1-slash-star", "x-p-v1-star", "x-p-exact"]],
    ["/v1/models?limit=5", ["x-p-v1-slash-star", "x-p-v1-star", "x-p-exact"]],
    ["/v1/models/x", ["x-p-v1-slash-star", "x-p-v1-star"]],
    ["/v1beta/models", ["x-p-v1-star"]],
    ["/repos/a/b/issues", ["x-p-segments", "x-p-trailing"]],
    ["/repos/a/b/c/issues", ["x-p-trailing"]],
    ["/repos/a", ["x-p-trailing"]],
    ["/repos/a/b/c", ["x-p-trailing"]],
    ["/files/a.json", ["x-p-glob"]],
    ["/files/a/b.json", []],
    ["/V1/models", []],
    ["/anything/at/all", []],
  ];

  beforeAll(async () => {
    for (const [header, pathPattern] of Object.entries(PATTERNS)) {
      await createSecret({ name: header, type: "generic", value: `V-${header}`, hostPattern: "paths.inj.test", injectionConfig: { headerName: header }, ...(pathPattern ? { pathPattern } : {}) });
    }
  });

  for (const [path, expected] of CASES) {
    test(`${path} → ${expected.join(", ") || "only the catch-alls"}`, async () => {
      const { res, seen } = await viaGateway("paths.inj.test", path);
      expect(res.status).toBe(200);
      expect(seen!.url).toBe(path);
      const got = Object.keys(seen!.headers).filter((h) => h.startsWith("x-p-")).sort();
      expect(got).toEqual([...expected, "x-p-unset", "x-p-star"].sort());
      for (const h of got) expect(seen!.headers[h]).toBe(`V-${h}`);
    });
  }
});

describe("host patterns and adversarial hosts (docs/injection.md#host-and-path-patterns)", () => {
  beforeAll(async () => {
    await headerSecret("exact", "api.example.com", "EXACT-S3CR3T", "x-exact");
    await headerSecret("wild", "*.example.com", "WILD-S3CR3T", "x-wild");
  });

  const injected = (seen: SeenRequest | undefined) => ({ exact: seen?.headers["x-exact"] ?? null, wild: seen?.headers["x-wild"] ?? null });

  test("api.example.com → exact and wildcard", async () => {
    const { res, seen } = await viaGateway("api.example.com", "/h");
    expect(res.status).toBe(200);
    expect(injected(seen)).toEqual({ exact: "EXACT-S3CR3T", wild: "WILD-S3CR3T" });
  });

  test("uppercase CONNECT authority API.Example.COM matches (case-insensitive)", async () => {
    const { res, seen } = await viaGateway("api.example.com", "/upper", { authority: `API.Example.COM:${up.port}` });
    expect(res.status).toBe(200);
    expect(injected(seen)).toEqual({ exact: "EXACT-S3CR3T", wild: "WILD-S3CR3T" });
  });

  test("trailing dot api.example.com. matches (the contract's table: yes)", async () => {
    const { res, seen } = await viaGateway("api.example.com", "/dot", { authority: `api.example.com.:${up.port}` });
    expect(res.status).toBe(200);
    expect(injected(seen)).toEqual({ exact: "EXACT-S3CR3T", wild: "WILD-S3CR3T" });
  });

  test("another port of the same host matches (the request port is ignored)", async () => {
    const { res, seen } = await viaGateway("api.example.com", "/port", { upstream: up2 });
    expect(res.status).toBe(200);
    expect(seen!.host).toBe(`api.example.com:${up2.port}`);
    expect(injected(seen)).toEqual({ exact: "EXACT-S3CR3T", wild: "WILD-S3CR3T" });
  });

  test("*.example.com covers a.example.com and a.b.example.com, never example.com", async () => {
    expect(injected((await viaGateway("a.example.com", "/w1")).seen)).toEqual({ exact: null, wild: "WILD-S3CR3T" });
    expect(injected((await viaGateway("a.b.example.com", "/w2")).seen)).toEqual({ exact: null, wild: "WILD-S3CR3T" });
    const bare = await viaGateway("example.com", "/w3");
    expect(bare.res.status).toBe(200);
    expect(injected(bare.seen)).toEqual({ exact: null, wild: null });
  });

  test("lookalikes get nothing: api.example.com.evil.test, notexample.com", async () => {
    for (const host of ["api.example.com.evil.test", "notexample.com"]) {
      const { res, seen } = await viaGateway(host, `/evil/${host}`);
      expect(res.status).toBe(200);
      expect(seen!.url).toBe(`/evil/${host}`);
      expect(injected(seen)).toEqual({ exact: null, wild: null });
      expect(JSON.stringify(seen!.headers)).not.toContain("S3CR3T");
    }
  });

  test("IPv6 literal: CONNECT [::1]:port matches host pattern ::1 (brackets stripped); the leaf has an IP SAN", async () => {
    await headerSecret("v6", "::1", "V6-S3CR3T", "x-v6");
    const t = await openConnect(cg.gatewayPort, `[::1]:${up.port}`, basic(token));
    expect(t.connect.status).toBe(200);
    const secure = tls.connect({ socket: t.socket, ca: ca.pem, checkServerIdentity: (_h, cert) => tls.checkServerIdentity("::1", cert) });
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", resolve);
      secure.once("error", reject);
    });
    expect(secure.authorized).toBe(true);
    expect(secure.getPeerCertificate().subjectaltname).toBe("IP Address:0:0:0:0:0:0:0:1");
    const reader = new ResponseReader(secure);
    const before = up.seen.length;
    secure.write(rawRequest("GET", "/v6", `[::1]:${up.port}`));
    const res = await reader.response();
    secure.destroy();
    expect(res.status).toBe(200);
    const seen = seenFor(up, "/v6", before)[0]!;
    expect(seen.host).toBe(`[::1]:${up.port}`);
    expect(seen.headers["x-v6"]).toBe("V6-S3CR3T");
    expect(seen.headers["x-exact"]).toBeUndefined();
  });

  test("the Host header inside the tunnel cannot redirect a secret: the CONNECT authority decides", async () => {
    // CONNECT to a lookalike, then claim Host: api.example.com inside it.
    const t = await openTlsTunnel(cg.gatewayPort, `notexample.com:${up.port}`, token, ca.pem, "notexample.com");
    const before = up.seen.length;
    t.tls.write(rawRequest("GET", "/spoof-host", `api.example.com:${up.port}`));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(200);
    const s = seenFor(up, "/spoof-host", before)[0]!;
    expect(s.host).toBe(`notexample.com:${up.port}`);
    expect(injected(s)).toEqual({ exact: null, wild: null });
  });
});

// ————— changes inside an open tunnel (docs/gateway.md#proxy-authentication, docs/gateway.md#tunnels) —————

describe("changes apply to the next request inside an already-open tunnel", () => {
  test("PATCH value, then DELETE: the same tunnel sees the new value, then none", async () => {
    const id = await headerSecret("changing", "change.inj.test", "VALUE-ONE", "x-change");
    const t = await openTlsTunnel(cg.gatewayPort, `change.inj.test:${up.port}`, token, ca.pem, "change.inj.test");
    const send = async (path: string) => {
      const before = up.seen.length;
      t.tls.write(rawRequest("GET", path, `change.inj.test:${up.port}`));
      const res = await t.reader.response();
      expect(res.status).toBe(200);
      return seenFor(up, path, before)[0]!.headers["x-change"] ?? null;
    };
    expect(await send("/c1")).toBe("VALUE-ONE");
    expect((await cg.api("PATCH", `/v1/secrets/${id}`, { body: { value: "VALUE-TWO" } })).status).toBe(200);
    expect(await send("/c2")).toBe("VALUE-TWO");
    expect((await cg.api("DELETE", `/v1/secrets/${id}`)).status).toBe(204);
    expect(await send("/c3")).toBeNull();
    expect(t.reader.ended).toBe(false);
    t.tls.destroy();
  });

  test("token regeneration: the next in-tunnel request gets 407 and the tunnel closes; the upstream sees nothing", async () => {
    const agent = await createAgent("regen-agent", "all");
    await headerSecret("regen", "regen.inj.test", "REGEN-S3CR3T", "x-regen");
    const t = await openTlsTunnel(cg.gatewayPort, `regen.inj.test:${up.port}`, agent.token, ca.pem, "regen.inj.test");
    t.tls.write(rawRequest("GET", "/r1", `regen.inj.test:${up.port}`));
    expect((await t.reader.response()).status).toBe(200);
    const regen = await cg.api("POST", `/v1/agents/${agent.id}/regenerate-token`);
    expect(regen.status).toBe(200);
    expect(regen.body.accessToken).toMatch(/^agt_[0-9a-f]{64}$/);
    expect(regen.body.accessToken).not.toBe(agent.token);
    const before = up.seen.length;
    t.tls.write(rawRequest("GET", "/r2", `regen.inj.test:${up.port}`));
    const res = await t.reader.response();
    expect(res.status).toBe(407);
    expect(res.headers["proxy-authenticate"]).toBe('Basic realm="credgate"');
    expect(res.text).toBe(PROXY_AUTH_BODY);
    expect(await t.reader.closed()).toBe(true);
    expect(up.seen.length).toBe(before);
    // The new token works right away.
    const fresh = await viaGateway("regen.inj.test", "/r3", { token: regen.body.accessToken });
    expect(fresh.res.status).toBe(200);
    expect(fresh.seen!.headers["x-regen"]).toBe("REGEN-S3CR3T");
  });

  test("agent deleted: the next in-tunnel request gets 407", async () => {
    const agent = await createAgent("doomed-agent", "all");
    const t = await openTlsTunnel(cg.gatewayPort, `regen.inj.test:${up.port}`, agent.token, ca.pem, "regen.inj.test");
    t.tls.write(rawRequest("GET", "/d1", `regen.inj.test:${up.port}`));
    expect((await t.reader.response()).status).toBe(200);
    expect((await cg.api("DELETE", `/v1/agents/${agent.id}`)).status).toBe(204);
    const before = up.seen.length;
    t.tls.write(rawRequest("GET", "/d2", `regen.inj.test:${up.port}`));
    const res = await t.reader.response();
    expect(res.status).toBe(407);
    expect(res.text).toBe(PROXY_AUTH_BODY);
    expect(await t.reader.closed()).toBe(true);
    expect(up.seen.length).toBe(before);
  });

  test("curl with two URLs on one connection: a secret change between them is seen by the second", async () => {
    // curl reuses the tunnel for the second URL (one CONNECT); the upstream delays the first answer while
    // the test patches the secret.
    const id = await headerSecret("curl-two", "change.inj.test", "CURL-ONE", "x-curl");
    const run1 = run([
      "curl", "-sS", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects} ",
      "--proxy", `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, "--cacert", ca.file,
      `https://change.inj.test:${up.port}/slow-first`, `https://change.inj.test:${up.port}/second`,
    ]);
    // Wait for the first request to arrive, then change the value before its answer goes out.
    const deadline = Date.now() + 5000;
    while (!up.seen.some((s) => s.url === "/slow-first") && Date.now() < deadline) await Bun.sleep(10);
    expect((await cg.api("PATCH", `/v1/secrets/${id}`, { body: { value: "CURL-TWO" } })).status).toBe(200);
    slowFirstRelease?.();
    const r = await run1;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("1 0 ");
    expect(up.seen.find((s) => s.url === "/slow-first")!.headers["x-curl"]).toBe("CURL-ONE");
    expect(up.seen.find((s) => s.url === "/second")!.headers["x-curl"]).toBe("CURL-TWO");
  });
});

// ————— docs/gateway.md#guidance-rewrite—————

let slowFirstRelease: (() => void) | null = null;
const LATE_AUTH_400 = `{"error":"${"x".repeat(9000)} invalid api key"}`;

/** Upstream answers used by the guidance tests and the slow first request above. */
function guidanceAnswers(req: Request): Response | Promise<Response> | undefined {
  const path = new URL(req.url).pathname;
  if (path === "/slow-first") return new Promise<void>((r) => (slowFirstRelease = r)).then(() => Response.json({ first: true }));
  if (!path.startsWith("/guide/")) return undefined;
  const kind = path.slice("/guide/".length);
  if (kind === "401") return new Response('{"error":"unauthorized"}', { status: 401, headers: { "content-type": "application/json", "www-authenticate": "Bearer" } });
  if (kind === "403") return new Response("forbidden", { status: 403 });
  if (kind === "400auth") return new Response('{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}', { status: 400, headers: { "content-type": "application/json" } });
  if (kind === "400other") return new Response('{"error":"missing field: name"}\n', { status: 400, headers: { "content-type": "application/json", "x-upstream-kept": "1" } });
  if (kind === "400late") return new Response(LATE_AUTH_400, { status: 400, headers: { "content-type": "application/json" } });
  return undefined;
}

describe("guidance rewrite (docs/gateway.md#guidance-rewrite)", () => {
  const base = () => `${PUBLIC_URL}/p/${cg.keys.projectId}`;

  test("uncredentialed 401 → credential_not_found, status kept, x-should-retry: false, exact body", async () => {
    const { res } = await viaGateway("guide.inj.test", "/guide/401?q=secret-query");
    expect(res.status).toBe(401);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(res.headers["content-type"]).toContain("application/json");
    expect(res.headers["www-authenticate"]).toBeUndefined();
    const secretUrl = `${base()}/secrets?create=generic&host=guide.inj.test`;
    expect(res.text).toBe(
      JSON.stringify({
        error: "credential_not_found",
        message: `No credentials configured for guide.inj.test in credgate. Ask the user to add a secret: ${secretUrl}`,
        hostname: "guide.inj.test",
        path: "/guide/401",
        secret_url: secretUrl,
      }),
    );
  });

  test("uncredentialed 403 → rewritten too, status 403", async () => {
    const { res } = await viaGateway("guide.inj.test", "/guide/403");
    expect(res.status).toBe(403);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(JSON.parse(res.text).error).toBe("credential_not_found");
  });

  test("uncredentialed 400 mentioning an API key → rewritten, status 400", async () => {
    const { res } = await viaGateway("guide.inj.test", "/guide/400auth");
    expect(res.status).toBe(400);
    expect(res.headers["x-should-retry"]).toBe("false");
    expect(JSON.parse(res.text)).toMatchObject({ error: "credential_not_found", hostname: "guide.inj.test", path: "/guide/400auth" });
  });

  test("uncredentialed 400 with other text → byte-identical, headers kept", async () => {
    const { res } = await viaGateway("guide.inj.test", "/guide/400other");
    expect(res.status).toBe(400);
    expect(res.text).toBe('{"error":"missing field: name"}\n');
    expect(res.headers["x-upstream-kept"]).toBe("1");
    expect(res.headers["x-should-retry"]).toBeUndefined();
  });

  test("a 400 whose auth words come only after the first 8 KiB → byte-identical", async () => {
    const { res } = await viaGateway("guide.inj.test", "/guide/400late");
    expect(res.status).toBe(400);
    expect(res.text).toBe(LATE_AUTH_400);
  });

  test("credentialed 401 passes through unchanged", async () => {
    await headerSecret("guide cred", "guidecred.inj.test", "GUIDE-S3CR3T", "x-guide");
    const { res, seen } = await viaGateway("guidecred.inj.test", "/guide/401");
    expect(seen!.headers["x-guide"]).toBe("GUIDE-S3CR3T");
    expect(res.status).toBe(401);
    expect(res.text).toBe('{"error":"unauthorized"}');
    expect(res.headers["www-authenticate"]).toBe("Bearer");
    expect(res.headers["x-should-retry"]).toBeUndefined();
  });

  test("access_restricted: an agent in mode grants, an ungranted project secret for the host (docs/gateway.md#guidance-rewrite)", async () => {
    await headerSecret("Restricted API", "restricted.inj.test", "RESTRICTED-S3CR3T", "x-restricted");
    const agent = await createAgent("grants-agent", "grants");
    const { res, seen } = await viaGateway("restricted.inj.test", "/guide/401", { token: agent.token });
    expect(seen!.headers["x-restricted"]).toBeUndefined();
    expect(JSON.stringify(seen!.headers)).not.toContain("RESTRICTED-S3CR3T");
    expect(res.status).toBe(401);
    expect(res.headers["x-should-retry"]).toBe("false");
    const manageUrl = `${base()}/agents/${agent.id}`;
    const body = JSON.parse(res.text);
    expect(Object.keys(body).sort()).toEqual(["error", "manage_url", "message", "provider"]);
    expect(body.error).toBe("access_restricted");
    expect(body.provider).toBe("restricted.inj.test");
    expect(body.manage_url).toBe(manageUrl);
    expect(body.message).toMatch(/^.+ credentials exist in credgate but this agent does not have access\. Ask the user to attach them to this agent: /);
    expect(body.message.endsWith(manageUrl)).toBe(true);
    // The default agent (mode all) gets the secret on the same host: the response passes unchanged.
    const allMode = await viaGateway("restricted.inj.test", "/guide/401");
    expect(allMode.seen!.headers["x-restricted"]).toBe("RESTRICTED-S3CR3T");
    expect(allMode.res.text).toBe('{"error":"unauthorized"}');
  });
});
