// The placeholder stage (docs/injection.md#placeholders): every occurrence of a placeholder on the surfaces its
// secret lists is replaced by the value, encoded for where it sits; bodies while they stream, a placeholder
// split across chunks included, framed anew (a new Content-Length up to 8 MiB, chunked beyond); encoded bodies
// and other surfaces are left alone; requests without a placeholder secret pass untouched.
import { describe, expect, test } from "bun:test";
import type { Surface } from "../../../src/core/placeholders.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { injectStage } from "../../../src/gateway/stages/inject.ts";
import { placeholderStage, REWRITE_IN_MEMORY_MAX } from "../../../src/gateway/stages/placeholder.ts";
import { agentCredentials, compiledSecret, signIn, testRequest, type TestRequestInit } from "../../../src/gateway/testing.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";
import { outcome } from "./helpers.ts";

const VALUE = `a+b/c=d&e "q" \\ end`;
const PH = "CG_PLACEHOLDER_1";
const stage = placeholderStage();
const inject = injectStage({ vault: new VaultResolver({ host: null, token: null, fetch: fetch }) });

async function request(init: Omit<TestRequestInit, "tunnel">, surfaces?: Surface[], value = VALUE, host = "api.ph.test"): Promise<ProxyRequest> {
  const rq = testRequest({ tunnel: host, ...init });
  const secret = compiledSecret({ hostPattern: "api.ph.test", value, injection: { placeholder: PH, ...(surfaces ? { surfaces } : {}) } });
  signIn(rq, agentCredentials({ injectable: [secret] }));
  expect(await outcome(inject.request!(rq))).toBe("pass");
  return rq;
}

async function bodyOf(rq: ProxyRequest): Promise<string> {
  return rq.body ? Buffer.from(await new Response(rq.body).arrayBuffer()).toString("utf8") : "";
}

/** A stream that gives the text in chunks of `size` bytes. */
function chunked(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = Buffer.from(text);
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, (at += size)));
    },
  });
}

describe("headers, path and query", () => {
  test("header values (anywhere, every occurrence) get the raw value; names are left", async () => {
    const rq = await request({ target: "/", headers: { authorization: `Bearer ${PH}`, "x-both": `${PH},${PH}`, [`x-${PH.toLowerCase()}`]: "n" } }, undefined, "sk-raw-value-0123");
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.headers.get("authorization")).toBe("Bearer sk-raw-value-0123");
    expect(rq.headers.get("x-both")).toBe("sk-raw-value-0123,sk-raw-value-0123");
    expect(rq.headers.get(`x-${PH.toLowerCase()}`)).toBe("n");
    expect(rq.injectionCount).toBe(1);
    expect(rq.injectedValues).toEqual(["sk-raw-value-0123"]);
  });

  test("path and query get the value percent-encoded, each surface counted once", async () => {
    const rq = await request({ target: `/v1/${PH}/x?key=${PH}&other=${PH}` });
    stage.request!(rq);
    const enc = "a%2Bb%2Fc%3Dd%26e%20%22q%22%20%5C%20end";
    expect(rq.upstreamTarget).toBe(`/v1/${enc}/x?key=${enc}&other=${enc}`);
    expect(rq.injectionCount).toBe(2);
    // What the agent sent is what logs show.
    expect(rq.path).toBe(`/v1/${PH}/x`);
  });

  test("only the listed surfaces are rewritten", async () => {
    const rq = await request({ target: `/v1/${PH}?key=${PH}`, headers: { "x-key": PH } }, ["query"]);
    stage.request!(rq);
    expect(rq.upstreamTarget).toBe(`/v1/${PH}?key=a%2Bb%2Fc%3Dd%26e%20%22q%22%20%5C%20end`);
    expect(rq.headers.get("x-key")).toBe(PH);
  });

  test("a request with no placeholder secret, or to a host the secret does not match, passes unchanged", async () => {
    const plain = testRequest({ tunnel: "api.ph.test", target: `/${PH}`, headers: { "x-key": PH } });
    signIn(plain, agentCredentials());
    expect(stage.request!(plain)).toEqual({ decision: null, response: null });
    expect(plain.upstreamTarget).toBe(`/${PH}`);
    const elsewhere = await request({ target: `/${PH}`, headers: { "x-key": PH } }, undefined, VALUE, "other.test");
    stage.request!(elsewhere);
    expect(elsewhere.upstreamTarget).toBe(`/${PH}`);
    expect(elsewhere.headers.get("x-key")).toBe(PH);
    expect(elsewhere.injectionCount).toBe(0);
  });
});

describe("bodies", () => {
  test("JSON bodies get the JSON-escaped value, with a new Content-Length", async () => {
    const body = JSON.stringify({ key: PH, nested: { again: `x${PH}y` } });
    const rq = await request({ method: "POST", target: "/", headers: { "content-type": "application/json; charset=utf-8" }, body });
    expect(await outcome(stage.request!(rq))).toBe("pass");
    const out = await bodyOf(rq);
    expect(JSON.parse(out)).toEqual({ key: VALUE, nested: { again: `x${VALUE}y` } });
    expect(rq.headers.get("content-length")).toBe(String(Buffer.byteLength(out)));
    expect(rq.chunked).toBe(false);
    expect(rq.injectionCount).toBe(1);
  });

  test("+json media types are JSON too; forms are form-encoded; anything else gets raw bytes", async () => {
    const vnd = await request({ method: "POST", target: "/", headers: { "content-type": "application/vnd.api+json" }, body: `{"k":"${PH}"}` });
    await stage.request!(vnd);
    expect(JSON.parse(await bodyOf(vnd))).toEqual({ k: VALUE });
    const form = await request({ method: "POST", target: "/", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `client_secret=${PH}&x=1` });
    await stage.request!(form);
    const formOut = await bodyOf(form);
    expect(new URLSearchParams(formOut).get("client_secret")).toBe(VALUE);
    expect(formOut).toContain("+%22q%22+");
    const raw = await request({ method: "POST", target: "/", headers: { "content-type": "multipart/form-data; boundary=x" }, body: `--x\r\n\r\n${PH}\r\n--x--` });
    await stage.request!(raw);
    expect(await bodyOf(raw)).toBe(`--x\r\n\r\n${VALUE}\r\n--x--`);
    const none = await request({ method: "POST", target: "/", body: `${PH}` });
    await stage.request!(none);
    expect(await bodyOf(none)).toBe(VALUE);
  });

  test("a placeholder split at every point across chunks of a chunked body is found; the body stays chunked", async () => {
    for (let cut = 1; cut < PH.length; cut++) {
      const text = `{"a":"${PH}","b":"${PH}"}`;
      const firstAt = text.indexOf(PH) + cut;
      const parts = [text.slice(0, firstAt), text.slice(firstAt)];
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          for (const p of parts) c.enqueue(Buffer.from(p));
          c.close();
        },
      });
      const rq = await request({ method: "POST", target: "/", headers: { "content-type": "application/json", "transfer-encoding": "chunked" }, body: stream, chunked: true });
      expect(await outcome(stage.request!(rq))).toBe("pass");
      expect(rq.chunked).toBe(true);
      expect(JSON.parse(await bodyOf(rq))).toEqual({ a: VALUE, b: VALUE });
    }
  });

  test("a body announced longer than 8 MiB is rewritten as it streams and goes on chunked without a length", async () => {
    const size = REWRITE_IN_MEMORY_MAX + 1024;
    const filler = "x".repeat(size - PH.length * 2);
    const text = `${PH}${filler}${PH}`;
    const rq = await request({ method: "PUT", target: "/", headers: { "content-type": "application/octet-stream", "content-length": String(size) }, body: chunked(text, 65536) });
    expect(await outcome(stage.request!(rq))).toBe("pass");
    expect(rq.chunked).toBe(true);
    expect(rq.headers.get("content-length")).toBeNull();
    const out = await bodyOf(rq);
    expect(out.length).toBe(size - 2 * PH.length + 2 * Buffer.byteLength(VALUE));
    expect(out.startsWith(VALUE) && out.endsWith(VALUE)).toBe(true);
  });

  test("a body with a Content-Encoding, a gRPC body (length-prefixed), or without the body surface, is left as it is", async () => {
    const gz = Bun.gzipSync(Buffer.from(PH));
    const encoded = await request({ method: "POST", target: "/", headers: { "content-encoding": "gzip" }, body: gz });
    expect(await outcome(stage.request!(encoded))).toBe("pass");
    expect(Buffer.from(await new Response(encoded.body).arrayBuffer()).equals(Buffer.from(gz))).toBe(true);
    expect(encoded.headers.get("content-length")).toBe(String(gz.byteLength));
    const grpc = await request({ method: "POST", target: "/", headers: { "content-type": "application/grpc+proto" }, body: `\u0000\u0000\u0000\u0000\u0010${PH}` });
    await stage.request!(grpc);
    expect(await bodyOf(grpc)).toBe(`\u0000\u0000\u0000\u0000\u0010${PH}`);
    const noBody = await request({ method: "POST", target: "/", body: PH }, ["header"]);
    stage.request!(noBody);
    expect(await bodyOf(noBody)).toBe(PH);
    expect(noBody.injectedValues).toEqual([]);
  });

  test("the echo guard watches the value once a body placeholder applies, even before it is found", async () => {
    const rq = await request({ method: "POST", target: "/", body: "nothing here" });
    await stage.request!(rq);
    expect(await bodyOf(rq)).toBe("nothing here");
    expect(rq.injectionCount).toBe(0);
    expect(rq.injectedValues).toEqual([VALUE]);
  });
});

describe("a host (or path) the secret does not match: the placeholder is forwarded as sent", () => {
  // A placeholder is not a secret: it reaches another host unchanged, and nothing is watched for (docs/injection.md#placeholders).
  const ALL: Surface[] = ["header", "query", "path", "body", "websocket"];

  async function aimed(init: Omit<TestRequestInit, "tunnel">, host: string, pathPattern: string | null = null): Promise<ProxyRequest> {
    const rq = testRequest({ tunnel: host, ...init });
    signIn(rq, agentCredentials({ injectable: [compiledSecret({ hostPattern: "api.ph.test", pathPattern, value: VALUE, injection: { placeholder: PH, surfaces: ALL } })] }));
    expect(await outcome(inject.request!(rq))).toBe("pass");
    return rq;
  }

  for (const [label, host] of [
    ["another host", "other.test"],
    ["a host that only ends like it", "evilapi.ph.test"],
    ["a subdomain of it", "x.api.ph.test"],
  ] as const) {
    test(`${label} (${host}): headers, path, query and body byte for byte as sent, the length kept, nothing injected or watched`, async () => {
      for (const [type, body] of [
        ["application/json", JSON.stringify({ k: PH, n: `in ${PH}` })],
        ["application/x-www-form-urlencoded", `client_secret=${PH}&x=1`],
        ["text/plain", `raw ${PH} raw`],
      ] as const) {
        const rq = await aimed({ method: "POST", target: `/v1/${PH}?key=${PH}`, headers: { "x-key": PH, authorization: `Bearer ${PH}`, "content-type": type, "content-length": String(Buffer.byteLength(body)) }, body }, host);
        expect(await outcome(stage.request!(rq))).toBe("pass");
        expect(rq.upstreamTarget).toBe(`/v1/${PH}?key=${PH}`);
        expect(rq.headers.get("x-key")).toBe(PH);
        expect(rq.headers.get("authorization")).toBe(`Bearer ${PH}`);
        expect(await bodyOf(rq)).toBe(body);
        expect(rq.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
        expect(rq.injectionCount).toBe(0);
        // The echo guard has nothing to look for: the value never went out.
        expect(rq.injectedValues).toEqual([]);
      }
    });
  }

  test("the secret's host but not its path pattern: unchanged too; its path: replaced", async () => {
    const outside = await aimed({ target: `/v2/${PH}?key=${PH}`, headers: { "x-key": PH } }, "api.ph.test", "/v1/*");
    await stage.request!(outside);
    expect(outside.upstreamTarget).toBe(`/v2/${PH}?key=${PH}`);
    expect(outside.headers.get("x-key")).toBe(PH);
    expect(outside.injectedValues).toEqual([]);
    const inside = await aimed({ target: `/v1/x?key=${PH}`, headers: { "x-key": PH } }, "api.ph.test", "/v1/*");
    await stage.request!(inside);
    expect(inside.headers.get("x-key")).toBe(VALUE);
    expect(inside.injectedValues).toEqual([VALUE]);
  });
});
