// HTTP/2 through the real gateway (docs/gateway.md#http2-and-grpc): agents speak h2 inside their CONNECT
// tunnels (curl --http2, also inside an HTTPS proxy; Node's http2.connect with 50 concurrent streams), the
// gateway speaks h2 or HTTP/1.1 to each origin as the origin chooses (a node:http2 origin, and Bun.serve which
// speaks HTTP/1.1 only), every stream runs the pipeline (injection, metering, approvals holding one stream
// while the others go on, a regenerated token, one log row per stream), a slow reader stalls only its own
// stream, the h2 attack limits hold with the gateway healthy afterwards (a raw frame writer, and fuzzed
// frames), SIGTERM sends GOAWAY and lets open streams finish, and CREDGATE_GATEWAY_HTTP2=off offers HTTP/1.1 only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { join } from "node:path";
import { ERR, FLAG, FRAME, frame, headerBlock, RawH2, tableSizeUpdate, startGoawayOrigin, startH2Origin, type GoawayOrigin, type H2Origin } from "../support/h2.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";
import { startFakeVendors, type FakeVendors } from "../support/llm/fakeVendors.ts";
import { costOf, DEFAULT_PRICES, type PriceTable } from "../../src/core/pricing.ts";
import { eventually, gatewayCa, resolveEntries, ROOT, run } from "../support/gateway.ts";

const H2_HOST = "api.h2.test";
/** An h2 origin whose first connection goes away before processing anything. */
const GONE_HOST = "gone.h2.test";
/** An llm_a key applies here: POST /v1/messages is metered (docs/budgets.md#metering); the fake vendor speaks HTTP/1.1. */
const LLM_HOST = "llm.h2.test";
const H1_HOST = "h1.h2.test";
const HELD = "held.h2.test";
const SECRET = `H2-SECRET-${crypto.randomUUID()}`;
const H1_SECRET = `H1-SECRET-${crypto.randomUUID()}`;
const NODE_CLIENT = join(ROOT, "test/support/h2client.cjs");
const EARLY_CLIENT = join(ROOT, "test/support/h2EarlyAnswers.cjs");

let pki: TestPki;
let cg: RunningCredgate;
let origin: H2Origin;
let h1: TestUpstream;
let fake: FakeVendors;
let gone: GoawayOrigin;
let ca: { pem: string; file: string };
let proxy: string;

const env = () => ({
  CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
  CREDGATE_RESOLVE: [resolveEntries([H2_HOST, HELD], origin.port), resolveEntries([H1_HOST], h1.port), resolveEntries([LLM_HOST], fake.port), resolveEntries([GONE_HOST], gone.port)].join(","),
});

beforeAll(async () => {
  pki = makePki([H2_HOST, H1_HOST, HELD, LLM_HOST, GONE_HOST]);
  gone = await startGoawayOrigin(pki);
  origin = await startH2Origin(pki);
  h1 = startUpstream(pki);
  fake = startFakeVendors(pki);
  cg = await startCredgate({ env: env() });
  ca = await gatewayCa(cg);
  proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  for (const [host, value] of [
    [H2_HOST, SECRET],
    [H1_HOST, H1_SECRET],
  ]) {
    const r = await cg.api("POST", "/v1/secrets", { body: { name: `key ${host}`, type: "generic", value, hostPattern: host, injectionConfig: { headerName: "x-api-key" } } });
    expect(r.status).toBe(201);
  }
  expect((await cg.api("POST", "/v1/secrets", { body: { name: "llm key", type: "llm_a", value: "sk-ant-api03-h2-key", hostPattern: LLM_HOST } })).status).toBe(201);
  const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "Held sends", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HELD, pathPattern: "/held*" }] } });
  expect(rule.status).toBe(201);
  const block = await cg.api("POST", "/v1/policy/rules", { body: { name: "No uploads", action: "block", targets: [{ kind: "network", hostPattern: H2_HOST, pathPattern: "/blocked*" }] } });
  expect(block.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
});

afterAll(async () => {
  await cg?.stop();
  await origin?.stop();
  await h1?.stop();
  await fake?.stop();
  await gone?.stop();
});

function curl(args: string[], c = cg, caFile = ca.file) {
  return run(["curl", "-sS", "-i", "--proxy", `http://x:${c.keys.defaultAgentToken}@127.0.0.1:${c.gatewayPort}`, "--cacert", caFile, ...args]);
}

interface NodeLine {
  i?: number;
  status?: number;
  headers?: Record<string, string>;
  bytes?: number;
  text?: string;
  error?: string;
  done?: boolean;
  alpn?: string;
}

type NodeRequest = { path: string; method?: string; body?: string; slow?: boolean };

function nodeClient(authority: string, requests: NodeRequest[]) {
  return spawn(["node", NODE_CLIENT, JSON.stringify({ gatewayPort: cg.gatewayPort, token: cg.keys.defaultAgentToken, authority, caFile: ca.file, requests })], {
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** Reads a child's JSON lines as they come. */
function linesOf(proc: ReturnType<typeof nodeClient>): { lines: NodeLine[]; ended: Promise<void> } {
  const lines: NodeLine[] = [];
  const ended = (async () => {
    let buf = "";
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) {
      buf += decoder.decode(chunk);
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)) as NodeLine);
        buf = buf.slice(i + 1);
      }
    }
  })();
  return { lines, ended };
}

async function nodeAll(authority: string, requests: NodeRequest[]): Promise<NodeLine[]> {
  const proc = nodeClient(authority, requests);
  const { lines, ended } = linesOf(proc);
  const code = await proc.exited;
  await ended;
  if (code !== 0) throw new Error(`node client exited ${code}: ${await new Response(proc.stderr).text()} ${JSON.stringify(lines)}`);
  return lines;
}

describe("curl --http2 inside the tunnel", () => {
  test("an h2 origin: h2 on both sides, the secret injected, nothing of it in curl's output", async () => {
    const path = `/curl/${crypto.randomUUID()}`;
    const r = await curl(["--http2", "-H", "x-api-key: credgate-managed", `https://${H2_HOST}:${origin.port}${path}`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/2 200 \r\n/);
    expect(r.stdout).toContain("x-origin: h2");
    expect(r.stdout).toContain(`"path":"${path}"`);
    expect(r.stdout).not.toContain(SECRET);
    const seen = origin.seen.filter((s) => s.path === path);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers["x-api-key"]).toBe(SECRET);
    expect(JSON.stringify(seen[0]!.headers)).not.toContain(cg.keys.defaultAgentToken);
  });

  test("inside an HTTPS proxy (TLS to the gateway port, then TLS inside the tunnel): h2 too", async () => {
    const path = `/tls-in-tls/${crypto.randomUUID()}`;
    const r = await run(["curl", "-sS", "-i", "--http2", "--proxy", `https://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`, "--proxy-cacert", ca.file, "--cacert", ca.file, `https://${H2_HOST}:${origin.port}${path}`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/2 200 \r\n/);
    expect(r.stdout).toContain(`"path":"${path}"`);
    expect(origin.seen.find((s) => s.path === path)!.headers["x-api-key"]).toBe(SECRET);
  });

  test("an origin's trailers reach an h2 agent", async () => {
    const r = await curl(["--http2", `https://${H2_HOST}:${origin.port}/trailers`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/2 200 /);
    expect(r.stdout).toContain("with trailers");
    expect(r.stdout).toContain("x-checksum: abc123");
  });

  test("an HTTP/1.1-only origin: h2 from the agent translated to HTTP/1.1, a POST body intact", async () => {
    const path = `/h1/${crypto.randomUUID()}`;
    const body = "x".repeat(300_000);
    const r = await run(["curl", "-sS", "-i", "--http2", "--proxy", proxy, "--cacert", ca.file, "--data-binary", "@-", `https://${H1_HOST}:${h1.port}${path}`], { stdin: new TextEncoder().encode(body) });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/2 200 /);
    const seen = h1.seen.filter((s) => s.url === path);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers["x-api-key"]).toBe(H1_SECRET);
    expect(seen[0]!.bodyBytes).toBe(body.length);
    expect(seen[0]!.bodySha256).toBe(new Bun.CryptoHasher("sha256").update(body).digest("hex"));
    expect(r.stdout).not.toContain(H1_SECRET);
  });

  test("an h2 origin that goes away before processing the request (GOAWAY, last stream 0): sent again on a new connection", async () => {
    const r = await curl(["--http2", `https://${GONE_HOST}:${gone.port}/again`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/2 200 /);
    expect(r.stdout).toContain("answered on connection 2");
    expect(gone.connections).toBe(2);
    expect(gone.answered).toBe(1);
  });

  test("an HTTP/1.1 agent to an h2 origin: translated the other way", async () => {
    const path = `/down/${crypto.randomUUID()}`;
    const r = await curl(["--http1.1", "-d", "hello=1", `https://${H2_HOST}:${origin.port}${path}`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/1\.1 200 OK\r\n/);
    expect(r.stdout).toContain(`"proto":"h2","bodyBytes":7`);
    expect(origin.seen.find((s) => s.path === path)!.headers["x-api-key"]).toBe(SECRET);
  });
});

describe("metering on an h2 stream", () => {
  test("an Anthropic SSE answer streamed to an h2 agent: the key injected, the usage priced into the log row", async () => {
    fake.setUsage(LLM_HOST, { input: 1200, output: 340 });
    const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 400, stream: true, messages: [{ role: "user", content: "hi" }] });
    const r = await curl(["--http2", "-H", "content-type: application/json", "-H", "x-api-key: credgate-managed", "--data-binary", body, `https://${LLM_HOST}:${fake.port}/v1/messages`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/2 200 /);
    expect(r.stdout).toContain("event: message_stop");
    expect(r.stdout).not.toContain("sk-ant-api03-h2-key");
    expect(fake.seen.findLast((s) => s.host === LLM_HOST)!.apiKey).toBe("sk-ant-api03-h2-key");
    const row = await eventually(async () => {
      const res = await cg.api("GET", "/v1/logs?limit=500");
      return (res.body?.data ?? []).find((x: any) => x.host.startsWith(LLM_HOST) && x.costNanos !== null) ?? null;
    });
    const usage = { model: "claude-sonnet-4-5", inputTokens: 1200, outputTokens: 340, cacheWriteTokens: 0, cacheReadTokens: 0 };
    expect(row.costNanos).toBe(costOf(DEFAULT_PRICES as PriceTable, "llm_a", usage));
  });
});

describe("Node http2.connect over a CONNECT tunnel", () => {
  test("50 concurrent streams on one connection, each its own request, multiplexed on one origin connection", async () => {
    const before = origin.connections;
    const id = crypto.randomUUID();
    const requests = Array.from({ length: 50 }, (_, i) => ({ path: `/multi/${id}/${i}`, ...(i % 5 === 0 ? { method: "POST", body: `body-${i}` } : {}) }));
    const lines = await nodeAll(`${H2_HOST}:${origin.port}`, requests);
    const done = lines.pop()!;
    expect(done).toMatchObject({ done: true, alpn: "h2" });
    expect(lines).toHaveLength(50);
    for (const l of lines) {
      expect(l.status).toBe(200);
      expect(JSON.parse(l.text!).path).toBe(`/multi/${id}/${l.i}`);
      expect(l.text).not.toContain(SECRET);
    }
    const seen = origin.seen.filter((s) => s.path.startsWith(`/multi/${id}/`));
    expect(seen).toHaveLength(50);
    for (const s of seen) expect(s.headers["x-api-key"]).toBe(SECRET);
    expect(seen.filter((s) => s.method === "POST").every((s) => s.bodyBytes > 0)).toBe(true);
    // The gateway's origin side multiplexed them: at most one new connection for 50 requests.
    expect(origin.connections - before).toBeLessThanOrEqual(1);
    // One log row per stream.
    const rows = await eventually(async () => {
      const res = await cg.api("GET", "/v1/logs?limit=500");
      const found = (res.body?.data ?? []).filter((r: any) => r.path.startsWith(`/multi/${id}/`));
      return found.length >= 50 ? found : null;
    });
    expect(rows).toHaveLength(50);
  });

  test("50 concurrent streams to an HTTP/1.1-only origin", async () => {
    const id = crypto.randomUUID();
    const lines = await nodeAll(
      `${H1_HOST}:${h1.port}`,
      Array.from({ length: 50 }, (_, i) => ({ path: `/h1multi/${id}/${i}` })),
    );
    lines.pop();
    expect(lines).toHaveLength(50);
    for (const l of lines) expect(l.status).toBe(200);
    expect(h1.seen.filter((s) => s.url.startsWith(`/h1multi/${id}/`)).every((s) => s.headers["x-api-key"] === H1_SECRET)).toBe(true);
  });

  test("a stream whose reader is slow never stalls its neighbours; it completes once read", async () => {
    const bytes = 4 * 1024 * 1024;
    const id = crypto.randomUUID();
    const lines = await nodeAll(`${H2_HOST}:${origin.port}`, [{ path: `/big?bytes=${bytes}`, slow: true }, ...Array.from({ length: 10 }, (_, i) => ({ path: `/beside/${id}/${i}` }))]);
    lines.pop();
    expect(lines).toHaveLength(11);
    // The ten neighbours all completed while the slow stream held its window full; then it completed whole.
    expect(lines.slice(0, 10).every((l) => l.status === 200 && l.text!.includes("/beside/"))).toBe(true);
    expect(lines[10]).toMatchObject({ i: 0, status: 200, bytes });
  });

  test("an approval holds its stream while the others on the connection go on", async () => {
    const id = crypto.randomUUID();
    const proc = nodeClient(`${HELD}:${origin.port}`, [{ path: `/held/${id}`, method: "POST", body: "send it" }, ...Array.from({ length: 5 }, (_, i) => ({ path: `/free/${id}/${i}` }))]);
    const { lines, ended } = linesOf(proc);
    const pending = await eventually(async () => {
      const res = await cg.api("GET", "/v1/approvals/pending");
      return (res.body?.requests ?? []).find((r: any) => r.url.includes(`/held/${id}`)) ?? null;
    }, 15_000);
    expect(pending).not.toBeNull();
    // The five free streams completed while the held one waits; nothing of it reached the origin.
    await eventually(() => (lines.length >= 5 ? true : null), 15_000);
    expect(lines.map((l) => l.i).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(origin.seen.some((s) => s.path === `/held/${id}`)).toBe(false);
    expect((await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    expect(await proc.exited).toBe(0);
    await ended;
    const held = lines.find((l) => l.i === 0)!;
    expect(held.status).toBe(200);
    expect(JSON.parse(held.text!)).toMatchObject({ path: `/held/${id}`, bodyBytes: 7 });
  });
});

describe("an answer before the request body is read (docs/gateway.md#http2-and-grpc)", () => {
  test("110 POSTs refused by the policy one after the other on one h2 connection, each body beyond the stream's window: each answered 403, its body taken and dropped so that the agent finishes it; a GET after them completes", async () => {
    const result = await earlyAnswers(Array(110).fill(300 * 1024));
    expect(result.posts).toHaveLength(110);
    // Answered whole, then the stream closed (code 0) once the agent had sent the rest, which nobody read: every
    // body went out in full.
    for (const post of result.posts) expect(post).toEqual({ status: 403, bytes: expect.any(Number), rstCode: 0 });
    expect(result.wrote).toBeGreaterThan(110 * 300 * 1024);
  }, 60_000);

  test("a body longer than the gateway takes after its answer (8 MiB): the stream is stopped with RST_STREAM NO_ERROR, and the connection goes on", async () => {
    const result = await earlyAnswers([12 * 1024 * 1024, 12 * 1024 * 1024]);
    expect(result.posts).toHaveLength(2);
    for (const post of result.posts) expect(post).toEqual({ status: 403, bytes: expect.any(Number), rstCode: 0 });
    // Each stopped after about 8 MiB more (plus what its window let through): far from its 12 MiB.
    expect(result.wrote).toBeLessThan(2 * (8 + 1) * 1024 * 1024);
  }, 60_000);
});

/** POSTs of these sizes to a blocked path, then a GET, on one h2 connection (test/support/h2EarlyAnswers.cjs). */
async function earlyAnswers(bodies: number[]): Promise<{ posts: unknown[]; wrote: number }> {
  const id = crypto.randomUUID();
  const cfg = { gatewayPort: cg.gatewayPort, token: cg.keys.defaultAgentToken, authority: `${H2_HOST}:${origin.port}`, caFile: ca.file, blockedPath: `/blocked/${id}`, afterPath: `/after/${id}`, bodies, answerMs: 5_000, closeMs: 5_000 };
  const r = await run(["node", EARLY_CLIENT, JSON.stringify(cfg)], { timeoutMs: 60_000 });
  expect(r.stderr).toBe("");
  const result = JSON.parse(r.stdout);
  expect(result.sessionError).toBeNull();
  expect(result.after.timeout).toBeUndefined();
  expect(result.after.status).toBe(200);
  expect(JSON.parse(result.after.text).path).toBe(`/after/${id}`);
  expect(origin.seen.filter((s) => s.path.startsWith(`/blocked/${id}`))).toEqual([]);
  return result;
}

describe("proxy authentication on an h2 connection", () => {
  test("a token regenerated while the connection is open: the next stream answers 407 and the connection gets GOAWAY", async () => {
    const created = await cg.api("POST", "/v1/agents", { body: { name: "h2-regen", identifier: "h2-regen", mode: "all" } });
    expect(created.status).toBe(201);
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id).accessToken as string;
    const authority = `${H2_HOST}:${origin.port}`;
    const raw = await eventually(() => RawH2.open(cg.gatewayPort, authority, token, ca.pem, H2_HOST).catch(() => null));
    raw!.request(1, authority, "/before");
    await eventually(() => (raw!.body(1).ended ? true : null));
    expect(raw!.body(1).text).toContain('"path":"/before"');
    expect((await cg.api("POST", `/v1/agents/${created.body.id}/regenerate-token`)).status).toBe(200);
    // Streams go on until the gateway's snapshot has the new token; then one answers 407 and GOAWAY follows.
    let id = 3;
    const refused = await eventually(async () => {
      if (raw!.frames.some((f) => f.type === FRAME.GOAWAY)) return true;
      raw!.request(id, authority, `/after/${id}`);
      id += 2;
      return null;
    }, 10_000, 200);
    expect(refused).toBe(true);
    const goaway = raw!.frames.find((f) => f.type === FRAME.GOAWAY)!;
    expect(goaway.payload.readUInt32BE(4)).toBe(ERR.NO_ERROR);
    // Exactly one stream was answered 407 (our header blocks are literals: the status is there as text).
    const answers = raw!.frames.filter((f) => f.type === FRAME.HEADERS && f.payload.includes(Buffer.from("407")));
    expect(answers).toHaveLength(1);
    const stream = answers[0]!.stream;
    await eventually(() => (raw!.body(stream).ended ? true : null));
    expect(JSON.parse(raw!.body(stream).text).error).toBe("proxy_authentication_required");
    expect(origin.seen.some((s) => s.path === `/after/${stream}`)).toBe(false);
    raw!.close();
  });
});

describe("the h2 attack limits (a raw frame writer)", () => {
  const open = () => RawH2.open(cg.gatewayPort, `${H2_HOST}:${origin.port}`, cg.keys.defaultAgentToken, ca.pem, H2_HOST);
  const authority = () => `${H2_HOST}:${origin.port}`;

  async function healthy() {
    const r = await curl(["--http2", `https://${H2_HOST}:${origin.port}/healthy`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/HTTP\/2 200 /);
  }

  test("100 concurrent streams are served; the 101st is refused with REFUSED_STREAM, the connection kept", async () => {
    const raw = await open();
    for (let i = 0; i < 101; i++) raw.request(1 + 2 * i, authority(), "/slow?ms=1500");
    const refused = await raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.stream === 201);
    expect(refused!.payload.readUInt32BE(0)).toBe(ERR.REFUSED_STREAM);
    // Every one of the hundred completes.
    await eventually(() => (Array.from({ length: 100 }, (_, i) => raw.body(1 + 2 * i)).every((b) => b.ended && b.text === "slow done") ? true : null), 20_000);
    expect(raw.frames.some((f) => f.type === FRAME.GOAWAY)).toBe(false);
    // And the connection takes new streams once they are done.
    raw.request(203, authority(), "/after");
    await eventually(() => (raw.body(203).ended ? true : null));
    expect(raw.body(203).text).toContain('"path":"/after"');
    raw.close();
  }, 60_000);

  test("rapid reset: more than 200 client resets in 10 s → GOAWAY ENHANCE_YOUR_CALM", async () => {
    const raw = await open();
    for (let i = 0; i < 250; i++) {
      raw.request(1 + 2 * i, authority(), `/reset/${i}`);
      raw.write(frame(FRAME.RST_STREAM, 0, 1 + 2 * i, Buffer.from([0, 0, 0, ERR.CANCEL])));
    }
    expect(await raw.goaway()).toBe(ERR.ENHANCE_YOUR_CALM);
    await healthy();
  });

  test("a CONTINUATION flood (more than 32 in one header block) → GOAWAY ENHANCE_YOUR_CALM", async () => {
    const raw = await open();
    raw.write(frame(FRAME.HEADERS, FLAG.END_STREAM, 1, headerBlock([[":method", "GET"], [":scheme", "https"], [":authority", authority()], [":path", "/"]])));
    for (let i = 0; i < 40; i++) raw.write(frame(FRAME.CONTINUATION, 0, 1, headerBlock([[`x-flood-${i}`, "a"]])));
    expect(await raw.goaway()).toBe(ERR.ENHANCE_YOUR_CALM);
    await healthy();
  });

  test("an HPACK table beyond its limit → GOAWAY ENHANCE_YOUR_CALM", async () => {
    const raw = await open();
    raw.write(frame(FRAME.HEADERS, FLAG.END_STREAM | FLAG.END_HEADERS, 1, Buffer.concat([tableSizeUpdate(1 << 20), headerBlock([[":method", "GET"], [":scheme", "https"], [":authority", authority()], [":path", "/"]])])));
    expect(await raw.goaway()).toBe(ERR.ENHANCE_YOUR_CALM);
    await healthy();
  });

  test("an HPACK bomb (one indexed entry referenced over and over past 64 KiB) → 431 for that stream, the connection kept", async () => {
    const raw = await open();
    const value = "b".repeat(4000);
    // Literal with incremental indexing, new name (RFC 7541 §6.2.1), then index 62 (that entry) thirty times: 120 kB decoded.
    const entry = Buffer.concat([Buffer.from([0x40, 6]), Buffer.from("x-bomb"), Buffer.from([0x7f, 4000 - 127 - 128 * Math.floor((4000 - 127) / 128) + 128, Math.floor((4000 - 127) / 128)]), Buffer.from(value)]);
    const block = Buffer.concat([headerBlock([[":method", "GET"], [":scheme", "https"], [":authority", authority()], [":path", "/bomb"]]), entry, Buffer.alloc(30, 0xbe)]);
    raw.write(frame(FRAME.HEADERS, FLAG.END_STREAM | FLAG.END_HEADERS, 1, block));
    const answer = await raw.waitFor((f) => f.stream === 1 && (f.type === FRAME.HEADERS || f.type === FRAME.RST_STREAM));
    expect(answer!.type).toBe(FRAME.HEADERS);
    expect(answer!.payload.includes(Buffer.from("431"))).toBe(true);
    await eventually(() => (raw.body(1).ended ? true : null));
    expect(JSON.parse(raw.body(1).text)).toEqual({ error: "bad_request", message: "Request head too large." });
    raw.request(3, authority(), "/after-bomb");
    await eventually(() => (raw.body(3).ended ? true : null));
    expect(raw.body(3).text).toContain('"path":"/after-bomb"');
    expect(origin.seen.some((s) => s.path === "/bomb")).toBe(false);
    raw.close();
  });

  test("oversized headers (70 kB over HEADERS + CONTINUATION) → 431 for that stream, the connection kept", async () => {
    const raw = await open();
    const block = headerBlock([[":method", "GET"], [":scheme", "https"], [":authority", authority()], [":path", "/huge"], ["x-huge", "h".repeat(70_000)]]);
    const parts: Buffer[] = [];
    for (let at = 0; at < block.length; at += 16_384) parts.push(block.subarray(at, at + 16_384));
    parts.forEach((p, i) => raw.write(frame(i === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, (i === 0 ? FLAG.END_STREAM : 0) | (i === parts.length - 1 ? FLAG.END_HEADERS : 0), 1, p)));
    await eventually(() => (raw.body(1).ended ? true : null));
    expect(JSON.parse(raw.body(1).text)).toEqual({ error: "bad_request", message: "Request head too large." });
    raw.request(3, authority(), "/after-huge");
    await eventually(() => (raw.body(3).ended ? true : null));
    expect(raw.body(3).text).toContain('"path":"/after-huge"');
    expect(origin.seen.some((s) => s.path === "/huge")).toBe(false);
    raw.close();
    await healthy();
  });
});

describe("fuzzed frames through the real binary", () => {
  test("40 connections of random frames after a valid preface: the gateway answers or says GOAWAY, and stays healthy", async () => {
    // A seeded generator (xorshift): the same frames every run.
    let seed = 0x2026_1126;
    const rand = (n: number) => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const authority = `${H2_HOST}:${origin.port}`;
    let goaways = 0;
    for (let c = 0; c < 40; c++) {
      const raw = await RawH2.open(cg.gatewayPort, authority, cg.keys.defaultAgentToken, ca.pem, H2_HOST);
      for (let i = 0; i < 30; i++) {
        const kind = rand(4);
        if (kind === 0) raw.request(1 + 2 * rand(20), authority, `/fuzz/${c}/${i}`, { endStream: rand(2) === 0 });
        else {
          const payload = Buffer.from(Array.from({ length: rand(48) }, () => rand(256)));
          raw.write(frame(rand(11), rand(256), rand(8), payload));
        }
      }
      await raw.waitFor((f) => f.type === FRAME.GOAWAY, 300);
      if (raw.frames.some((f) => f.type === FRAME.GOAWAY)) goaways++;
      raw.close();
    }
    // Most sequences break the protocol somewhere: the gateway said so with GOAWAY rather than going silent.
    expect(goaways).toBeGreaterThan(20);
    const r = await curl(["--http2", `https://${H2_HOST}:${origin.port}/after-fuzz`]);
    expect(r.stdout).toMatch(/HTTP\/2 200 /);
    expect(cg.proc.exitCode).toBeNull();
  });
});

describe("a gateway of its own", () => {
  test("SIGTERM: GOAWAY, the open stream finishes, no new stream is taken, the process exits 0", async () => {
    const c = await startCredgate({ env: env() });
    const raw = await RawH2.open(c.gatewayPort, `${H2_HOST}:${origin.port}`, c.keys.defaultAgentToken, (await gatewayCa(c)).pem, H2_HOST);
    const path = `/slow?ms=1500&id=${crypto.randomUUID()}`;
    raw.request(1, `${H2_HOST}:${origin.port}`, path);
    await eventually(() => (origin.seen.some((s) => s.path === path) ? true : null));
    c.proc.kill("SIGTERM");
    expect(await raw.goaway()).toBe(ERR.NO_ERROR);
    raw.request(3, `${H2_HOST}:${origin.port}`, "/too-late");
    await eventually(() => (raw.body(1).ended ? true : null), 10_000);
    expect(raw.body(1).text).toBe("slow done");
    expect(raw.frames.some((f) => f.stream === 3 && f.type === FRAME.HEADERS)).toBe(false);
    expect(origin.seen.some((s) => s.path === "/too-late")).toBe(false);
    expect(await c.proc.exited).toBe(0);
  });

  test("CREDGATE_GATEWAY_HTTP2=off: only HTTP/1.1 is offered inside tunnels", async () => {
    const c = await startCredgate({ env: { ...env(), CREDGATE_GATEWAY_HTTP2: "off" } });
    try {
      const r = await curl(["--http2", `https://${H2_HOST}:${origin.port}/off`], c, (await gatewayCa(c)).file);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 /);
      // The origin side is independent: still h2.
      expect(r.stdout).toContain('"proto":"h2"');
    } finally {
      await c.stop();
    }
  });
});
