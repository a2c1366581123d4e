// `claim_required` (docs/guards.md#claim-required) through the real cloud process: an unclaimed partner organization's agents
// get 403 with the current claim link for non-LLM requests — WebSocket upgrades and passthrough CONNECTs
// included — while LLM requests (a vendor's host, or a host an LLM key applies to) work; once a signed-in
// person claims the organization (`POST /v1/claim`), everything works, with no wait.
// The partner API is not built yet: the organization is made partner-owned and unclaimed in the store.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { curlThroughGateway } from "../support/curl.ts";
import { basic, gatewayCa, openConnect, openTlsTunnel, parseHead, rawRequest, resolveEntries, run } from "../support/gateway.ts";
import { makeUnclaimed } from "../support/partnerFixture.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const API = "api.claim.test";
const LLM_BY_KEY = "llm.claim.test";
const VENDOR = "api.anthropic.com";
const RAW = "raw.claim.test";
/** Hosts that contain a vendor's name without being its domain or below it. */
const LOOKALIKES = ["openai.com.evil.test", "notopenai.com"];
const RAW_LOOKALIKE = "api.anthropic.com.evil.test";

let cg: RunningCredgate;
let up: TestUpstream;
let caFile = "";
let caPem = "";
let token = "";
let claim: Awaited<ReturnType<typeof makeUnclaimed>>;

beforeAll(async () => {
  const pki = makePki([API, LLM_BY_KEY, VENDOR, RAW, ...LOOKALIKES, RAW_LOOKALIKE]);
  up = startUpstream(pki);
  cg = await startCredgate({
    env: {
      CREDGATE_MODE: "cloud",
      CREDGATE_EGRESS_ALLOW: "127.0.0.1/32",
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: resolveEntries([API, LLM_BY_KEY, VENDOR, RAW, ...LOOKALIKES, RAW_LOOKALIKE], up.port),
      CREDGATE_PASSTHROUGH_HOSTS: `${RAW},${RAW_LOOKALIKE}`,
    },
  });
  ({ file: caFile, pem: caPem } = await gatewayCa(cg));
  claim = await makeUnclaimed(cg);
  const secrets = [
    { name: "api", type: "generic", value: "api-secret-value", hostPattern: API, injectionConfig: { headerName: "x-api-key" } },
    { name: "llm", type: "llm_a", value: "sk-ant-api03-claim-test", hostPattern: LLM_BY_KEY },
  ];
  for (const body of secrets) expect((await cg.api("POST", "/v1/secrets", { body })).status).toBe(201);
  // An agent made after the organization became unclaimed: its view is read fresh.
  const agent = await cg.api("POST", "/v1/agents", { body: { name: "Claimer", identifier: "claimer", mode: "all" } });
  expect(agent.status).toBe(201);
  token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.identifier === "claimer").accessToken;
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

const expected = () => ({
  error: "claim_required",
  message: `This organization was set up by ${claim.partnerName} and has not been claimed yet, so non-LLM requests are paused. Ask the user to open the claim link: ${claim.claimUrl}`,
  claim_url: claim.claimUrl,
});

describe("before the claim", () => {
  test("a non-LLM request → 403 claim_required with the claim link and x-should-retry: false; nothing reaches the upstream", async () => {
    const before = up.seen.length;
    const r = await curlThroughGateway(cg, `https://${API}:${up.port}/blocked`, { caFile, agentToken: token });
    expect(r.status).toBe(403);
    expect(r.headers["x-should-retry"]).toBe("false");
    expect(r.json).toEqual(expected());
    expect(up.seen.length).toBe(before);
    const logs = (await cg.api("GET", "/v1/logs?decision=claim_required")).body.data;
    expect(logs.some((l: any) => l.path === "/blocked" && l.status === 403)).toBe(true);
  });

  test("LLM requests work: a vendor's host, and a host an llm_a key applies to (the key injected)", async () => {
    const vendor = await curlThroughGateway(cg, `https://${VENDOR}:${up.port}/v1/models`, { caFile, agentToken: token });
    expect(vendor.status).toBe(200);
    const byKey = await curlThroughGateway(cg, `https://${LLM_BY_KEY}:${up.port}/v1/models`, { caFile, agentToken: token });
    expect(byKey.status).toBe(200);
    expect(up.seen.at(-1)!.headers["x-api-key"]).toBe("sk-ant-api03-claim-test");
  });

  test("a host that only contains a vendor's name is not the vendor's: openai.com.evil.test and notopenai.com → 403 claim_required", async () => {
    const before = up.seen.length;
    for (const host of LOOKALIKES) {
      const r = await curlThroughGateway(cg, `https://${host}:${up.port}/v1/models`, { caFile, agentToken: token });
      expect({ host, status: r.status, body: r.json }).toEqual({ host, status: 403, body: expected() });
    }
    const t = await openConnect(cg.gatewayPort, `${RAW_LOOKALIKE}:${up.port}`, basic(token));
    expect(t.connect.status).toBe(403);
    expect(JSON.parse(t.body)).toEqual(expected());
    t.socket.destroy();
    expect(up.seen.length).toBe(before);
  });

  test("the refusal reaches the agent whole on every path: HTTP/1.1 with Connection: close, HTTP/1.0, h2, absolute-form, the HTTPS proxy hop (docs/agent-errors.md)", async () => {
    const proxy = (tls: boolean) => `${tls ? "https" : "http"}://x:${token}@127.0.0.1:${cg.gatewayPort}`;
    const paths: [string, boolean, string[], string][] = [
      ["TLS tunnel, Connection: close", false, ["--http1.1", "-H", "Connection: close"], "https"],
      ["TLS tunnel, HTTP/1.0", false, ["--http1.0"], "https"],
      ["TLS tunnel, h2", false, ["--http2"], "https"],
      ["absolute-form, Connection: close", false, ["-H", "Connection: close"], "http"],
      ["absolute-form, HTTP/1.0", false, ["--http1.0"], "http"],
      ["HTTPS proxy hop, TLS in TLS, Connection: close", true, ["--http1.1", "-H", "Connection: close"], "https"],
      ["HTTPS proxy hop, absolute-form, HTTP/1.0", true, ["--http1.0"], "http"],
    ];
    // Three of each at once: the answers meet the sockets' own events, as under load.
    const runs = paths.flatMap(([name, tls, args, scheme]) =>
      [0, 1, 2].map(async () => {
        const r = await run(["curl", "-sS", "-i", "--proxy", proxy(tls), "--proxy-cacert", caFile, "--cacert", caFile, ...args, `${scheme}://${API}:${up.port}/paths`]);
        if (r.code !== 0) return { name, error: r.stderr };
        let out = Buffer.from(r.stdoutBytes);
        for (;;) {
          const end = out.indexOf("\r\n\r\n");
          const head = parseHead(out.subarray(0, end));
          out = out.subarray(end + 4);
          if (/Connection Established/i.test(head.statusLine)) continue;
          const length = head.headers["content-length"];
          return { name, status: head.status, retry: head.headers["x-should-retry"], whole: length === undefined || Number(length) === out.length, body: JSON.parse(out.toString()) };
        }
      }),
    );
    for (const got of await Promise.all(runs)) expect(got).toEqual({ name: got.name, status: 403, retry: "false", whole: true, body: expected() });
  });

  test("a WebSocket upgrade → 403 claim_required", async () => {
    const t = await openTlsTunnel(cg.gatewayPort, `${API}:${up.port}`, token, caPem, API);
    t.tls.write(rawRequest("GET", "/ws", `${API}:${up.port}`, ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]));
    const res = await t.reader.response();
    t.tls.destroy();
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toEqual(expected());
  });

  test("a passthrough CONNECT → 403 claim_required before any tunnel", async () => {
    const t = await openConnect(cg.gatewayPort, `${RAW}:${up.port}`, basic(token));
    expect(t.connect.status).toBe(403);
    expect(JSON.parse(t.body)).toEqual(expected());
    t.socket.destroy();
  });
});

describe("the claim", () => {
  test("a signed-in person claims the organization; the next request goes through", async () => {
    const email = `claimer-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const signup = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email, password: "correct horse battery" } });
    expect(signup.status).toBe(201);
    const cookie = /^(credgate_session=[^;]+)/.exec(signup.headers.get("set-cookie")!)![1]!;
    const claimed = await cg.api("POST", "/v1/claim", { key: null, headers: { cookie }, body: { token: claim.token } });
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({ kind: "organization", organizationId: cg.keys.organizationId });
    const session = await cg.api("GET", "/v1/auth/session", { key: null, headers: { cookie } });
    expect(session.body.organizations).toContainEqual({ id: cg.keys.organizationId, name: expect.any(String), role: "owner" });

    const r = await curlThroughGateway(cg, `https://${API}:${up.port}/after-claim`, { caFile, agentToken: token });
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.headers["x-api-key"]).toBe("api-secret-value");
    const again = await cg.api("POST", "/v1/claim", { key: null, headers: { cookie }, body: { token: claim.token } });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toBe("Organization has already been claimed");
  });
});
