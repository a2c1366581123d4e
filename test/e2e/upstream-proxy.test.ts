// CREDGATE_UPSTREAM_PROXY and CREDGATE_UPSTREAM_NO_PROXY (docs/operations.md#upstream-proxy) through the real
// credgate process and real proxies on loopback: tinyproxy (HTTP CONNECT, Basic auth, CONNECT only to the test
// ports) and microsocks (SOCKS5, user/password), started with their own configuration. curl agents go through
// credgate to a real TLS upstream whose names resolve through a DNS server of the test's own: the upstream sees
// the injected credential, the proxy's log shows it was asked for the address credgate resolved (never the name),
// NO_PROXY names go direct, passthrough tunnels, plain http:// and 1Password Connect lookups go through it, bad
// proxy credentials give 502 upstream_unreachable with the reason, and a destination the egress guard refuses is
// refused before the proxy hears of it; an h2 origin is reached with h2 through both proxies. Last, OAuth
// token exchange and refresh through the proxy, with two gateway processes sharing one refresh.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, run } from "../support/gateway.ts";
import { startDnsServer, type TestDnsServer } from "../support/dnsServer.ts";
import { FakeConnect, startOpConnect, type RunningConnect } from "../support/opConnect.ts";
import { oauthFlow, SHORT_LIFETIME } from "../support/oauthFlow.ts";
import { startOAuthServer, type OAuthTestServer } from "../support/oauthServer.ts";
import { freePort } from "../support/ports.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { startMicrosocks, startTinyproxy, type TestProxy } from "../support/upstreamProxies.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";
import { startH2Origin, type H2Origin } from "../support/h2.ts";

const HOST = "api.proxy.test";
const DIRECT = "direct.proxy.test";
const PASS = "pass.proxy.test";
const PLAIN = "plain.proxy.test";
const VAULT = "op-connect.proxy.test";
/** An h2-only origin (docs/gateway.md#http2-and-grpc): ALPN through the proxy's tunnel chooses h2. */
const H2 = "h2.proxy.test";
const SECRET = `sk_proxy_${crypto.randomUUID().replace(/-/g, "")}`;
const VAULT_VALUE = `sk_vault_proxy_${crypto.randomUUID().replace(/-/g, "")}`;
const CONNECT_TOKEN = `op-token-${crypto.randomUUID()}`;
const PROXY_USER = "credgate";
const PROXY_PASSWORD = `pw-${crypto.randomUUID().slice(0, 8)}`;

const fake = new FakeConnect(CONNECT_TOKEN);
fake.item(fake.vault("Prod"), "Proxied", { credential: VAULT_VALUE });

let pki: TestPki;
let up: TestUpstream;
let h2: H2Origin;
let plain: ReturnType<typeof Bun.serve>;
let connect: RunningConnect;
let dns: TestDnsServer;
let tiny: TestProxy;
let socks: TestProxy;
let viaHttp: RunningCredgate;
let viaSocks: RunningCredgate;
let wrongHttp: RunningCredgate;
let wrongSocks: RunningCredgate;
let cas: Map<RunningCredgate, string>;

beforeAll(async () => {
  pki = makePki([HOST, DIRECT, PASS, VAULT, H2]);
  up = startUpstream(pki);
  h2 = await startH2Origin(pki);
  plain = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => Response.json({ host: req.headers.get("host"), path: new URL(req.url).pathname }) });
  connect = startOpConnect(fake, pki);
  const at = { addresses: ["127.0.0.1"], ttl: 60 };
  dns = await startDnsServer({ [HOST]: at, [DIRECT]: at, [PASS]: at, [PLAIN]: at, [VAULT]: at, [H2]: at });
  [tiny, socks] = await Promise.all([
    startTinyproxy({ user: PROXY_USER, password: PROXY_PASSWORD, connectPorts: [up.port, connect.port, plain.port!, h2.port] }),
    startMicrosocks({ user: PROXY_USER, password: PROXY_PASSWORD }),
  ]);
  const common = {
    CREDGATE_DNS_SERVERS: dns.address,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_PASSTHROUGH_HOSTS: PASS,
    CREDGATE_OP_CONNECT_HOST: `https://${VAULT}:${connect.port}`,
    CREDGATE_OP_CONNECT_TOKEN: CONNECT_TOKEN,
  };
  const http = (password: string) => `http://${PROXY_USER}:${password}@127.0.0.1:${tiny.port}`;
  const socks5 = (password: string) => `socks5://${PROXY_USER}:${password}@127.0.0.1:${socks.port}`;
  [viaHttp, viaSocks, wrongHttp, wrongSocks] = await Promise.all([
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: http(PROXY_PASSWORD), CREDGATE_UPSTREAM_NO_PROXY: `${DIRECT},192.0.2.0/24` } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: socks5(PROXY_PASSWORD) } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: http("not-the-password") } }),
    startCredgate({ env: { ...common, CREDGATE_UPSTREAM_PROXY: socks5("not-the-password") } }),
  ]);
  cas = new Map();
  for (const cg of [viaHttp, viaSocks, wrongHttp, wrongSocks]) {
    cas.set(cg, (await gatewayCa(cg)).file);
    for (const host of [HOST, DIRECT, PLAIN, H2]) {
      const r = await cg.api("POST", "/v1/secrets", { body: { name: host, type: "generic", value: SECRET, hostPattern: host, injectionConfig: { headerName: "x-api-key" } } });
      if (r.status !== 201) throw new Error(`secret: ${r.status} ${r.text}`);
    }
    const v = await cg.api("POST", "/v1/secrets", {
      body: {
        name: "vault",
        type: "generic",
        valueSource: "external_vault",
        opRef: "op://Prod/Proxied/credential",
        opDisplay: { vault: "Prod", item: "Proxied", field: "credential" },
        hostPattern: HOST,
        pathPattern: "/vault/*",
        injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" },
      },
    });
    if (v.status !== 201) throw new Error(`vault secret: ${v.status} ${v.text}`);
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([viaHttp, viaSocks, wrongHttp, wrongSocks].map((cg) => cg?.stop()));
  await Promise.all([tiny?.stop(), socks?.stop(), up?.stop(), h2?.stop(), connect?.stop(), dns?.stop()]);
  plain?.stop(true);
});

/** curl through the gateway as the default agent; `--cacert` is the gateway CA unless given. */
async function curl(cg: RunningCredgate, url: string, opts: { cacert?: string } = {}): Promise<{ status: number; body: any; text: string }> {
  const r = await curlThroughGateway(cg, url, { caFile: opts.cacert ?? cas.get(cg)! });
  return { status: r.status, body: r.json, text: r.text };
}

const seen = (path: string) => up.seen.filter((s) => s.url === path);
const newTargets = (proxy: TestProxy, before: number) => proxy.targets().slice(before);

describe("through an HTTP CONNECT proxy (tinyproxy, Basic auth)", () => {
  test("the upstream receives the injected credential; the proxy was asked CONNECT <address>:<port>, not the name", async () => {
    const before = tiny.targets().length;
    const r = await curl(viaHttp, `https://${HOST}:${up.port}/http/1`);
    expect(r.status).toBe(200);
    expect(seen("/http/1")[0]!.headers["x-api-key"]).toBe(SECRET);
    expect(seen("/http/1")[0]!.host).toBe(`${HOST}:${up.port}`);
    expect(newTargets(tiny, before)).toEqual([`127.0.0.1:${up.port}`]);
    expect(tiny.output()).not.toContain("proxy.test");
  });

  test("an h2 origin through the proxy's tunnel: h2 chosen by ALPN, the credential injected", async () => {
    const before = tiny.targets().length;
    const r = await curl(viaHttp, `https://${H2}:${h2.port}/via-proxy`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ path: "/via-proxy", proto: "h2" });
    expect(h2.seen.find((s) => s.path === "/via-proxy")!.headers["x-api-key"]).toBe(SECRET);
    expect(newTargets(tiny, before)).toEqual([`127.0.0.1:${h2.port}`]);
  });

  test("requests share a pooled tunnel: three agents in a row, one CONNECT", async () => {
    const before = tiny.targets().length;
    for (const i of [2, 3, 4]) expect((await curl(viaHttp, `https://${HOST}:${up.port}/http/${i}`)).status).toBe(200);
    expect(newTargets(tiny, before).length).toBeLessThanOrEqual(1);
  });

  test("a host in CREDGATE_UPSTREAM_NO_PROXY goes direct", async () => {
    const before = tiny.targets().length;
    const r = await curl(viaHttp, `https://${DIRECT}:${up.port}/direct/1`);
    expect(r.status).toBe(200);
    expect(seen("/direct/1")[0]!.headers["x-api-key"]).toBe(SECRET);
    expect(newTargets(tiny, before)).toEqual([]);
  });

  test("a passthrough tunnel goes through the proxy (the agent's TLS end to end)", async () => {
    const before = tiny.targets().length;
    const r = await curl(viaHttp, `https://${PASS}:${up.port}/pass/1`, { cacert: pki.caFile });
    expect(r.status).toBe(200);
    expect(seen("/pass/1")[0]!.headers["x-api-key"]).toBeUndefined();
    expect(newTargets(tiny, before)).toEqual([`127.0.0.1:${up.port}`]);
  });

  test("plain http:// is tunnelled too (CONNECT to its port), its credential injected (loopback)", async () => {
    const before = tiny.targets().length;
    const r = await curl(viaHttp, `http://${PLAIN}:${plain.port}/plain/1`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ host: `${PLAIN}:${plain.port}`, path: "/plain/1" });
    expect(newTargets(tiny, before)).toEqual([`127.0.0.1:${plain.port}`]);
  });

  test("1Password Connect is asked through the proxy; the upstream gets the vault value", async () => {
    const before = tiny.targets().length;
    const calls = fake.requests.length;
    const r = await curl(viaHttp, `https://${HOST}:${up.port}/vault/1`);
    expect(r.status).toBe(200);
    expect(seen("/vault/1")[0]!.headers.authorization).toBe(`Bearer ${VAULT_VALUE}`);
    expect(fake.requests.length).toBeGreaterThan(calls);
    expect(newTargets(tiny, before)).toContain(`127.0.0.1:${connect.port}`);
  });

  test("the egress guard refuses before the proxy is asked: credgate's own ports and the metadata address", async () => {
    const before = tiny.targets().length;
    for (const url of [`http://127.0.0.1:${viaHttp.apiPort}/v1/agents`, `http://169.254.169.254/latest/meta-data/`]) {
      const r = await curl(viaHttp, url);
      expect(r.status).toBe(403);
      expect(r.body.error).toBe("egress_denied");
    }
    const own = await run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", `http://x:${viaHttp.keys.defaultAgentToken}@127.0.0.1:${viaHttp.gatewayPort}`, "-p", `https://127.0.0.1:${viaHttp.gatewayPort}/`]);
    expect(own.stdout).toBe("000");
    expect(own.stderr).toContain("403");
    expect(newTargets(tiny, before)).toEqual([]);
    expect(tiny.output()).not.toContain(`:${viaHttp.apiPort}`);
    expect(tiny.output()).not.toContain("169.254.169.254");
  });

  test("wrong proxy credentials: 502 upstream_unreachable saying so; nothing reaches the upstream", async () => {
    const r = await curl(wrongHttp, `https://${HOST}:${up.port}/wrong-http/1`);
    expect(r.status).toBe(502);
    expect(r.body).toEqual({
      error: "upstream_unreachable",
      message: `credgate could not connect to ${HOST}:${up.port}: the upstream proxy refused the tunnel: 401 Unauthorized (the proxy refused the credentials of CREDGATE_UPSTREAM_PROXY)`,
    });
    expect(seen("/wrong-http/1")).toHaveLength(0);
    // The operator is told once, with the proxy's URL without its credentials; neither password is in the
    // agent's answer or credgate's output.
    expect(wrongHttp.output()).toContain("upstream proxy did not open a tunnel");
    expect(wrongHttp.output()).toContain(`"proxy":"http://127.0.0.1:${tiny.port}"`);
    expect(r.text + wrongHttp.output()).not.toContain("not-the-password");
    expect(r.text + wrongHttp.output()).not.toContain(PROXY_PASSWORD);
  });
});

describe("through a SOCKS5 proxy (microsocks, user/password)", () => {
  test("the upstream receives the injected credential; the proxy connected to the address", async () => {
    const before = socks.targets().length;
    const r = await curl(viaSocks, `https://${HOST}:${up.port}/socks/1`);
    expect(r.status).toBe(200);
    expect(seen("/socks/1")[0]!.headers["x-api-key"]).toBe(SECRET);
    expect(newTargets(socks, before)).toEqual([`127.0.0.1:${up.port}`]);
  });

  test("an h2 origin through SOCKS5: h2 chosen by ALPN, the credential injected", async () => {
    const r = await curl(viaSocks, `https://${H2}:${h2.port}/via-socks`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ path: "/via-socks", proto: "h2" });
    expect(h2.seen.find((s) => s.path === "/via-socks")!.headers["x-api-key"]).toBe(SECRET);
  });

  test("1Password Connect and passthrough through SOCKS5 too", async () => {
    const before = socks.targets().length;
    expect((await curl(viaSocks, `https://${HOST}:${up.port}/vault/socks`)).status).toBe(200);
    expect(seen("/vault/socks")[0]!.headers.authorization).toBe(`Bearer ${VAULT_VALUE}`);
    expect(newTargets(socks, before)).toContain(`127.0.0.1:${connect.port}`);
    // A passthrough tunnel is never pooled: it is one more connection through the proxy.
    const beforePass = socks.targets().length;
    expect((await curl(viaSocks, `https://${PASS}:${up.port}/pass/socks`, { cacert: pki.caFile })).status).toBe(200);
    expect(newTargets(socks, beforePass)).toEqual([`127.0.0.1:${up.port}`]);
  });

  test("wrong proxy credentials: 502 upstream_unreachable saying so", async () => {
    const r = await curl(wrongSocks, `https://${HOST}:${up.port}/wrong-socks/1`);
    expect(r.status).toBe(502);
    expect(r.body).toEqual({
      error: "upstream_unreachable",
      message: `credgate could not connect to ${HOST}:${up.port}: the upstream proxy refused the user name or password of CREDGATE_UPSTREAM_PROXY`,
    });
    expect(seen("/wrong-socks/1")).toHaveLength(0);
  });

  test("the vault lookup through a proxy that refuses: 502 credential_unavailable, nothing forwarded", async () => {
    const r = await curl(wrongSocks, `https://${HOST}:${up.port}/vault/wrong`);
    expect(r.status).toBe(502);
    expect(r.body.error).toBe("credential_unavailable");
    expect(seen("/vault/wrong")).toHaveLength(0);
    expect(wrongSocks.output()).toContain('"reason":"unreachable"');
  });
});

describe("OAuth token exchange and refresh through the proxy, two gateway processes", () => {
  const CLIENT_ID = "Iv1.credgate-proxy";
  const CLIENT_SECRET = "proxy-client-secret-0123456789";
  let oauth: OAuthTestServer;
  let cg: RunningCredgate;
  let proxy: TestProxy;
  let caFile: string;
  let publicUrl: string;

  beforeAll(async () => {
    const apiPort = await freePort();
    publicUrl = `http://127.0.0.1:${apiPort}`;
    oauth = await startOAuthServer({ clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${publicUrl}/v1/apps/github/callback`] }], user: { login: "octo-proxy", id: 77 } });
    proxy = await startTinyproxy({ user: PROXY_USER, password: PROXY_PASSWORD, connectPorts: [oauth.port] });
    cg = await startCredgate({
      apiPort,
      env: {
        CREDGATE_GATEWAY_WORKERS: "2",
        CREDGATE_PUBLIC_URL: publicUrl,
        CREDGATE_OAUTH_GITHUB_CLIENT_ID: CLIENT_ID,
        CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: CLIENT_SECRET,
        CREDGATE_UPSTREAM_CA_FILE: oauth.caFile,
        CREDGATE_CONNECT_TO: `github.com:443:127.0.0.1:${oauth.port},api.github.com:443:127.0.0.1:${oauth.port}`,
        CREDGATE_UPSTREAM_PROXY: `http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`,
        // The API traffic goes direct: every CONNECT the proxy sees is a token request to github.com.
        CREDGATE_UPSTREAM_NO_PROXY: "api.github.com",
      },
    });
    caFile = (await gatewayCa(cg)).file;
  }, 60_000);

  afterAll(async () => {
    await cg?.stop();
    await proxy?.stop();
    await oauth?.close();
  });

  const flow = oauthFlow(() => ({ cg, oauth, publicUrl, caFile, agentToken: cg.keys.defaultAgentToken }));

  test("the code exchange and a refresh go through the proxy; 20 concurrent requests (two gateway processes) share one refresh", async () => {
    const exchanges = proxy.targets().length;
    const id = flow.expectSuccess(await flow.connectFlow());
    expect(proxy.targets().length - exchanges).toBe(1);
    expect(proxy.targets().at(-1)).toBe(`127.0.0.1:${oauth.port}`);

    const old = await flow.reconnectWithLifetime(id, SHORT_LIFETIME);
    const beforeRefresh = proxy.targets().length;
    const refreshes = oauth.tokenRequests.refresh_token ?? 0;
    await flow.waitForRefreshWindow();
    const tag = crypto.randomUUID();
    const answers = await flow.viaGateway(Array.from({ length: 20 }, (_, i) => ({ url: `https://api.github.com/repos/acme/api/issues/${i}?run=${tag}` })));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect((oauth.tokenRequests.refresh_token ?? 0) - refreshes).toBe(1);
    const refreshed = flow.lastIssued();
    expect(refreshed.grantType).toBe("refresh_token");
    expect(refreshed.accessToken).not.toBe(old);
    const seenApi = oauth.apiRequests.filter((s) => s.url.endsWith(`?run=${tag}`));
    expect(new Set(seenApi.map((s) => s.headers.authorization))).toEqual(new Set([`Bearer ${refreshed.accessToken}`]));
    // The one refresh is the one CONNECT the proxy saw meanwhile.
    expect(proxy.targets().slice(beforeRefresh)).toEqual([`127.0.0.1:${oauth.port}`]);
    expect((await flow.connection(id)).status).toBe("connected");
  }, 60_000);
});
