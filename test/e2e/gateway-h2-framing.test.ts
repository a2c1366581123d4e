// HTTP/2 message framing through the real gateway (docs/gateway.md#message-framing): an agent's h2 request whose
// content-length disagrees with its DATA (END_STREAM on HEADERS, on trailers, or DATA past it) is refused and
// never reaches an HTTP/1.1 origin as a request that would leave the pooled connection out of step. Raw frames
// from one agent token against a recording HTTP/1.1 origin of the test's own; the attacks as filed: a policy
// bypass (a blocked POST smuggled inside an allowed stream's head) and one agent reading another's answers, with
// that other agent's injected secret, off a desynchronised pooled connection.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ERR, FLAG, FRAME, frame, headerBlock, RawH2, statusOf, type Frame } from "../support/h2.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { startRecordingOrigin, type RecordingOrigin } from "../support/recordingOrigin.ts";
import { eventually, gatewayCa, openTlsTunnel, rawRequest, resolveEntries } from "../support/gateway.ts";

const VARIANTS = "variants.framing.test";
const BYPASS = "bypass.framing.test";
const THEFT = "theft.framing.test";
const SECRET = `FRAMING-SECRET-${crypto.randomUUID()}`;

let pki: TestPki;
let cg: RunningCredgate;
let origin: RecordingOrigin;
let ca: { pem: string; file: string };
let grantsAgent: { id: string; token: string };

const authority = (host: string) => `${host}:${origin.port}`;

beforeAll(async () => {
  pki = makePki([VARIANTS, BYPASS, THEFT]);
  origin = await startRecordingOrigin(pki);
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([VARIANTS, BYPASS, THEFT], origin.port) } });
  ca = await gatewayCa(cg);
  for (const host of [BYPASS, THEFT]) {
    const r = await cg.api("POST", "/v1/secrets", { body: { name: `key ${host}`, type: "generic", value: SECRET, hostPattern: host, injectionConfig: { headerName: "x-api-key" } } });
    expect(r.status).toBe(201);
  }
  const rule = await cg.api("POST", "/v1/policy/rules", { body: { name: "No danger", action: "block", targets: [{ kind: "network", hostPattern: BYPASS, pathPattern: "/danger", method: "POST" }] } });
  expect(rule.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
  // An agent in grants mode with nothing granted: its requests carry no injected value.
  const created = await cg.api("POST", "/v1/agents", { body: { name: "grants-attacker", identifier: "grants-attacker", mode: "grants" } });
  expect(created.status).toBe(201);
  const listed = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id);
  grantsAgent = { id: created.body.id, token: listed.accessToken };
});

afterAll(async () => {
  await cg?.stop();
  await origin?.stop();
});

function open(host: string, token = cg.keys.defaultAgentToken): Promise<RawH2> {
  return RawH2.open(cg.gatewayPort, authority(host), token, ca.pem, host);
}

function head(host: string, method: string, path: string, extra: [string, string][] = []): Buffer {
  return headerBlock([[":method", method], [":scheme", "https"], [":authority", authority(host)], [":path", path], ...extra]);
}

const headers = (stream: number, block: Buffer, end: boolean) => frame(FRAME.HEADERS, FLAG.END_HEADERS | (end ? FLAG.END_STREAM : 0), stream, block);
const data = (stream: number, bytes: string | Buffer, end: boolean) => frame(FRAME.DATA, end ? FLAG.END_STREAM : 0, stream, Buffer.from(bytes));

/** How the gateway ended `stream`: its response status, or the RST_STREAM code it sent. */
async function outcome(h2: RawH2, stream: number): Promise<{ status: number | null; reset: number | null }> {
  const f = await h2.waitFor((x: Frame) => x.stream === stream && (x.type === FRAME.RST_STREAM || (x.type === FRAME.HEADERS && statusOf(x) !== null)));
  if (f === null) throw new Error(`stream ${stream}: no answer`);
  return f.type === FRAME.RST_STREAM ? { status: null, reset: f.payload.readUInt32BE(0) } : { status: statusOf(f), reset: null };
}

/** The whole response of `stream` as JSON, once it has ended. */
async function json(h2: RawH2, stream: number): Promise<any> {
  await h2.waitFor((x) => x.stream === stream && (x.flags & FLAG.END_STREAM) !== 0 && (x.type === FRAME.DATA || x.type === FRAME.HEADERS));
  return JSON.parse(h2.body(stream).text);
}

/** Log rows for `host`, once `count` of them have been written (rows are written in batches). */
async function logRows(host: string, count: number): Promise<any[]> {
  const rows = await eventually(async () => {
    const r = await cg.api("GET", `/v1/logs?host=${encodeURIComponent(authority(host))}&limit=500`);
    const found = r.body?.data ?? [];
    return found.length >= count ? found : null;
  }, 15_000);
  return rows ?? [];
}

/** A malformed stream is refused: RST_STREAM PROTOCOL_ERROR, or 400 while its head is unanswered. */
function expectRefused(o: { status: number | null; reset: number | null }): void {
  if (o.reset !== null) expect(o.reset).toBe(ERR.PROTOCOL_ERROR);
  else expect(o.status).toBe(400);
}

describe("content-length that disagrees with the DATA (docs/gateway.md#message-framing)", () => {
  test("END_STREAM on HEADERS before the declared length: 400, nothing forwarded, the connection's next request intact", async () => {
    const h2 = await open(VARIANTS);
    const id = crypto.randomUUID();
    h2.write(headers(1, head(VARIANTS, "POST", `/v/${id}/headers`, [["content-length", "57"]]), true));
    expect(await outcome(h2, 1)).toEqual({ status: 400, reset: null });
    expect(JSON.parse(h2.body(1).text)).toMatchObject({ error: "bad_request" });
    h2.write(headers(3, head(VARIANTS, "GET", `/v/${id}/next`), true));
    expect(await json(h2, 3)).toMatchObject({ path: `/v/${id}/next` });
    const seen = origin.requests.filter((r) => r.path.startsWith(`/v/${id}/`));
    expect(seen.map((r) => [r.method, r.path, r.body.length])).toEqual([["GET", `/v/${id}/next`, 0]]);
    h2.close();
  });

  test("END_STREAM on trailers before the declared length: refused, nothing forwarded, logged blocked 400", async () => {
    const h2 = await open(VARIANTS);
    const id = crypto.randomUUID();
    h2.write(Buffer.concat([headers(1, head(VARIANTS, "POST", `/v/${id}/trailers`, [["content-length", "57"]]), false), data(1, "0123456789", false), headers(1, headerBlock([["x-trailer", "1"]]), true)]));
    expectRefused(await outcome(h2, 1));
    // The slow form: the head and part of the body go upstream before the trailers come short.
    h2.write(Buffer.concat([headers(3, head(VARIANTS, "POST", `/v/${id}/trailers-late`, [["content-length", "57"]]), false), data(3, "0123456789", false)]));
    // A fixed pause is the scenario: the trailers come in a later read than the body.
    await Bun.sleep(150);
    h2.write(headers(3, headerBlock([["x-trailer", "1"]]), true));
    expectRefused(await outcome(h2, 3));
    h2.write(headers(5, head(VARIANTS, "GET", `/v/${id}/next`), true));
    expect(await json(h2, 5)).toMatchObject({ path: `/v/${id}/next` });
    expect(origin.requests.filter((r) => r.path.startsWith(`/v/${id}/`)).map((r) => [r.path, r.body.length])).toEqual([[`/v/${id}/next`, 0]]);
    const rows = await eventually(async () => {
      const all = (await logRows(VARIANTS, 1)).filter((r) => r.path.startsWith(`/v/${id}/`));
      return all.length >= 3 ? all : null;
    }, 15_000);
    expect(rows).toHaveLength(3);
    const logged = Object.fromEntries((rows ?? []).map((r: any) => [r.path, [r.decision, r.status]]));
    expect(logged).toEqual({ [`/v/${id}/trailers`]: ["blocked", 400], [`/v/${id}/trailers-late`]: ["blocked", 400], [`/v/${id}/next`]: ["allowed", 200] });
    h2.close();
  });

  test("DATA beyond the declared length: refused, the origin never gets a whole request, logged blocked 400", async () => {
    const h2 = await open(VARIANTS);
    const id = crypto.randomUUID();
    // In one frame, in two frames, and the declared length sent whole first with the extra byte after a pause.
    h2.write(Buffer.concat([headers(1, head(VARIANTS, "POST", `/v/${id}/one`, [["content-length", "10"]]), false), data(1, "0123456789ABCDEF", true)]));
    h2.write(Buffer.concat([headers(3, head(VARIANTS, "POST", `/v/${id}/two`, [["content-length", "10"]]), false), data(3, "0123456789", false), data(3, "ABCDEF", true)]));
    h2.write(Buffer.concat([headers(5, head(VARIANTS, "POST", `/v/${id}/late`, [["content-length", "10"]]), false), data(5, "01234", false), data(5, "56789", false)]));
    // A fixed pause is the scenario: the extra byte comes in a later read than the declared length.
    await Bun.sleep(150);
    h2.write(data(5, "X", false));
    for (const s of [1, 3, 5]) expectRefused(await outcome(h2, s));
    h2.write(headers(7, head(VARIANTS, "GET", `/v/${id}/next`), true));
    expect(await json(h2, 7)).toMatchObject({ path: `/v/${id}/next` });
    expect(origin.requests.filter((r) => r.path.startsWith(`/v/${id}/`)).map((r) => [r.path, r.body.length])).toEqual([[`/v/${id}/next`, 0]]);
    const rows = await eventually(async () => {
      const all = (await logRows(VARIANTS, 1)).filter((r) => r.path.startsWith(`/v/${id}/`));
      return all.length >= 4 ? all : null;
    }, 15_000);
    expect(rows).toHaveLength(4);
    const logged = Object.fromEntries((rows ?? []).map((r: any) => [r.path, [r.decision, r.status]]));
    expect(logged).toEqual({
      [`/v/${id}/one`]: ["blocked", 400],
      [`/v/${id}/two`]: ["blocked", 400],
      [`/v/${id}/late`]: ["blocked", 400],
      [`/v/${id}/next`]: ["allowed", 200],
    });
    h2.close();
  });
});

describe("the smuggling attacks as filed (docs/gateway.md#message-framing)", () => {
  /**
   * Where a header value starts in the head the gateway writes upstream for `build(value)`: learnt from a probe
   * the origin records (the gateway's head has the same shape whatever the value).
   */
  async function valueOffset(h2: RawH2, stream: number, host: string, path: string, name: string): Promise<number> {
    const probe = `PROBE-${crypto.randomUUID()}`;
    h2.write(headers(stream, head(host, "GET", path, [[name, probe]]), true));
    await json(h2, stream);
    const seen = origin.requests.find((r) => r.rawHead.includes(probe));
    if (!seen) throw new Error("the probe never reached the origin");
    return Buffer.byteLength(seen.rawHead.slice(0, seen.rawHead.indexOf(probe)), "latin1");
  }

  for (const variant of ["END_STREAM on HEADERS", "a short body, then trailers"] as const) {
    test(`policy bypass (${variant}): a blocked POST inside an allowed stream's head never reaches the origin`, async () => {
      const h2 = await open(BYPASS);
      const id = crypto.randomUUID().slice(0, 8);
      const second = `/early/${id}/allowed2`;
      const offset = await valueOffset(h2, 1, BYPASS, second, "x-smuggle");
      // Stream 3 declares exactly the bytes of stream 5's head before the smuggled request line.
      const short = variant === "END_STREAM on HEADERS" ? "" : "abc";
      const first = head(BYPASS, variant === "END_STREAM on HEADERS" ? "GET" : "POST", `/early/${id}/allowed`, [["content-length", String(offset + short.length)]]);
      if (short === "") h2.write(headers(3, first, true));
      else h2.write(Buffer.concat([headers(3, first, false), data(3, short, false), headers(3, headerBlock([["x-trailer", "1"]]), true)]));
      const refused = await outcome(h2, 3);
      h2.write(headers(5, head(BYPASS, "GET", second, [["x-smuggle", "POST /danger HTTP/1.0"]]), true));
      const answer = await json(h2, 5);
      // A fixed wait: it shows no smuggled request reaches the origin.
      await Bun.sleep(300);
      expect(origin.requests.filter((r) => r.path.includes("danger")).map((r) => [r.method, r.path, r.headers["x-api-key"]])).toEqual([]);
      expect(answer.path).toBe(second);
      expectRefused(refused);
      const mine = origin.requests.filter((r) => r.path.includes(id));
      expect(mine.map((r) => [r.method, r.path, r.body.length])).toEqual([
        ["GET", second, 0],
        ["GET", second, 0],
      ]);
      h2.close();
    });
  }

  test("agent A (grants, nothing injected) cannot make agent B's answer, and B's secret, come back on its own stream", async () => {
    const a = await open(THEFT, grantsAgent.token);
    const b = await open(THEFT);
    const id = crypto.randomUUID().slice(0, 8);
    // A's second request carries two more requests in its body; its first declares exactly the second's head.
    const smuggled = `GET /early/${id}/s1 HTTP/1.1\r\nhost: x\r\n\r\nGET /early/${id}/s2?delay=400 HTTP/1.1\r\nhost: x\r\n\r\n`;
    const carrier = (stream: number, path: string) => Buffer.concat([headers(stream, head(THEFT, "POST", path, [["content-length", String(smuggled.length)]]), false), data(stream, smuggled, true)]);
    a.write(carrier(1, `/early/${id}/carrier`));
    await json(a, 1);
    const probe = origin.requests.find((r) => r.path === `/early/${id}/carrier`);
    expect(probe?.body.toString("latin1")).toBe(smuggled);
    const carrierHead = Buffer.byteLength(probe!.rawHead, "latin1") + 4;
    a.write(headers(3, head(THEFT, "GET", `/early/${id}/a1`, [["content-length", String(carrierHead)]]), true));
    const refused = await outcome(a, 3);
    a.write(carrier(5, `/early/${id}/carrier`));
    const second = await json(a, 5);
    // B's ordinary request, slow to answer; then A's next one, as soon as B has its answer.
    b.write(headers(1, head(THEFT, "GET", `/early/${id}/b1?delay=300`), true));
    const bAnswer = await json(b, 1);
    a.write(headers(7, head(THEFT, "GET", `/early/${id}/a3`), true));
    const aAnswer = await json(a, 7);
    expect(aAnswer.key).not.toBe(SECRET);
    expectRefused(refused);
    expect(bAnswer.path).toBe(`/early/${id}/b1?delay=300`);
    expect(second.path).toBe(`/early/${id}/carrier`);
    // B's own answer: the secret the origin received, redacted by the echo guard on its way back.
    expect(bAnswer.key).toBe("credgate-redacted");
    expect(aAnswer.path).toBe(`/early/${id}/a3`);
    expect(aAnswer.key).toBeNull();
    for (const s of [1, 3, 5, 7]) expect(a.body(s).text).not.toContain(SECRET);
    // The origin executed only what was logged: no smuggled request.
    expect(origin.requests.filter((r) => r.path.includes(`/${id}/s`))).toEqual([]);
    a.close();
    b.close();
  });
});

describe("pooled upstream connections (docs/gateway.md#message-framing)", () => {
  test("a connection that receives bytes nobody asked for while idle is closed, never reused (an HTTP/1.1 agent)", async () => {
    const id = crypto.randomUUID().slice(0, 8);
    const t = await openTlsTunnel(cg.gatewayPort, authority(VARIANTS), cg.keys.defaultAgentToken, ca.pem, VARIANTS);
    t.tls.write(rawRequest("GET", `/u/${id}/first?junk=50`, authority(VARIANTS)));
    expect((await t.reader.response()).status).toBe(200);
    const first = origin.requests.find((r) => r.path === `/u/${id}/first?junk=50`)!;
    // A fixed pause is the scenario: the origin's junk (sent 50 ms after its answer) arrives while the connection idles.
    await Bun.sleep(400);
    t.tls.write(rawRequest("GET", `/u/${id}/second`, authority(VARIANTS)));
    const res = await t.reader.response();
    expect(JSON.parse(res.text).path).toBe(`/u/${id}/second`);
    const second = origin.requests.find((r) => r.path === `/u/${id}/second`)!;
    expect(second.conn).not.toBe(first.conn);
    t.tls.destroy();
  });
});
