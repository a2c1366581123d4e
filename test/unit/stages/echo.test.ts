// The echo stage (docs/guards.md#echo-guard): a request that received a credential asks for an identity
// encoding, and its reply has every injected value (raw, base64, percent-encoded, and the JSON-string forms JSON
// encoders write) replaced in header values and in the body as it streams, also across chunk boundaries, and in
// trailers. Uncredentialed requests and WebSockets are left alone.
import { describe, expect, test } from "bun:test";
import { Reply, StreamBody } from "../../../src/gateway/reply.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { echoStage } from "../../../src/gateway/stages/echo.ts";
import { injectStage } from "../../../src/gateway/stages/inject.ts";
import { echoNeedles, redactText, REDACTED, StreamRedactor } from "../../../src/core/echoRedaction.ts";
import { agentCredentials, compiledSecret, replyText, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";
import { outcome } from "./helpers.ts";

const SECRET = "sk-echo-0123456789";
const stage = echoStage();
const inject = injectStage({ vault: new VaultResolver({ host: null, token: null, fetch: fetch }) });

async function credentialed(headers: Record<string, string> = {}, value = SECRET): Promise<ProxyRequest> {
  const rq = testRequest({ tunnel: "api.echo.test", target: "/x", headers: { "accept-encoding": "gzip, br", ...headers } });
  signIn(rq, agentCredentials({ injectable: [compiledSecret({ hostPattern: "api.echo.test", value, injection: { headerName: "authorization", valueFormat: "Bearer {value}" } })] }));
  expect(await outcome(inject.request!(rq))).toBe("pass");
  return rq;
}

/** An upstream-like reply whose body comes in the given chunks. */
function replyOf(chunks: string[], headers: [string, string][] = []): Reply {
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk));
      c.close();
    },
  });
  return new Reply(200, "OK", headers, new StreamBody(stream, null));
}

describe("request", () => {
  test("credentialed: accept-encoding becomes identity; otherwise untouched", async () => {
    const rq = await credentialed();
    expect(stage.request!(rq)).toEqual({ decision: null, response: null });
    expect(rq.headers.get("accept-encoding")).toBe("identity");
    const plain = testRequest({ tunnel: "api.echo.test", target: "/x", headers: { "accept-encoding": "gzip" } });
    signIn(plain, agentCredentials());
    stage.request!(plain);
    expect(plain.headers.get("accept-encoding")).toBe("gzip");
  });
});

describe("response", () => {
  test("every form of the value is redacted in headers and in a body split across chunks; the length header is dropped", async () => {
    const rq = await credentialed();
    const b64 = Buffer.from(SECRET).toString("base64");
    const reply = replyOf([`{"echo":"Bearer ${SECRET.slice(0, 7)}`, `${SECRET.slice(7)}","b64":"${b64}"}`], [["x-echo", `token=${SECRET}`]]);
    const out = (await stage.response!(rq, reply)) as Reply;
    expect(out.header("x-echo")).toBe("token=credgate-redacted");
    expect(out.transforms.some((t) => t.resizes)).toBe(true);
    const body = await replyText(out);
    expect(body).toBe('{"echo":"Bearer credgate-redacted","b64":"credgate-redacted"}');
    expect(body).not.toContain(SECRET);
  });

  test("trailers (an h2 origin's, gRPC's status message) are redacted too, whether they come before or after the stage ran", async () => {
    const rq = await credentialed();
    const early = replyOf(["ok"]);
    early.trailers = [["grpc-message", `echo ${SECRET}`]];
    const late = replyOf(["ok"]);
    await stage.response!(rq, early);
    await stage.response!(await credentialed(), late);
    // The body's source sets trailers only at its end: after the stage has run.
    late.trailers = [["grpc-message", `late ${encodeURIComponent(SECRET)} ${SECRET}`], ["x-plain", "kept"]];
    expect(early.trailers).toEqual([["grpc-message", "echo credgate-redacted"]]);
    expect(late.trailers).toEqual([["grpc-message", "late credgate-redacted credgate-redacted"], ["x-plain", "kept"]]);
  });

  test("an uncredentialed request's reply, and a WebSocket's, are left as they are", async () => {
    const plain = testRequest({ tunnel: "api.echo.test", target: "/x" });
    signIn(plain, agentCredentials());
    const reply = replyOf([SECRET], [["x-echo", SECRET]]);
    expect(await stage.response!(plain, reply)).toBe(reply);
    expect(reply.transforms).toHaveLength(0);
    const ws = await credentialed({ upgrade: "websocket", connection: "Upgrade" });
    expect(ws.websocket).toBe(true);
    const wsReply = replyOf([], [["x-echo", SECRET]]);
    await stage.response!(ws, wsReply);
    expect(wsReply.header("x-echo")).toBe(SECRET);
  });
});

describe("JSON-escaped forms (an upstream that echoes the value inside a JSON string)", () => {
  // Every character JSON encoders escape beyond the letters: `/`, the HTML-safe `<>&`, `'+=`, and the
  // mandatory `"` and `\`. All header-safe, so the value can be injected into a header.
  const VALUE = `pk/live<tok>&'+="\\end-42`;
  const forms = {
    stringify: JSON.stringify(VALUE).slice(1, -1), // JSON.stringify, Jackson, serde: \" and \\ only
    php: VALUE.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("/", "\\/"), // json_encode: \/ too
    go: JSON.stringify(VALUE).slice(1, -1).replaceAll("<", "\\u003c").replaceAll(">", "\\u003e").replaceAll("&", "\\u0026"), // encoding/json
    dotnetUpper: VALUE.replaceAll("\\", "\\\\")
      .replaceAll("<", "\\u003C")
      .replaceAll(">", "\\u003E")
      .replaceAll("&", "\\u0026")
      .replaceAll("'", "\\u0027")
      .replaceAll("+", "\\u002B")
      .replaceAll('"', "\\u0022"), // System.Text.Json, upper-case hex
  };

  test("each encoder's spelling is a different string, and none is the raw value", () => {
    const spellings = Object.values(forms);
    expect(new Set(spellings).size).toBe(spellings.length);
    for (const f of spellings) expect(f).not.toBe(VALUE);
    // .NET's spelling reads back as the value: it is the value inside a JSON string.
    expect(JSON.parse(`"${forms.dotnetUpper}"`)).toBe(VALUE);
    expect(JSON.parse(`"${forms.php}"`)).toBe(VALUE);
    expect(JSON.parse(`"${forms.go}"`)).toBe(VALUE);
  });

  test("the redactor (core): each form replaced in a text, whole", () => {
    const set = echoNeedles([VALUE])!;
    for (const [name, form] of Object.entries(forms)) {
      expect({ name, out: redactText(`{"echo":"${form}","n":1}`, set) }).toEqual({ name, out: `{"echo":"${REDACTED}","n":1}` });
    }
  });

  test("a non-ASCII value (a body placeholder's): raw UTF-8 and its \\uXXXX forms in either case, surrogate pairs included, streamed byte by byte", () => {
    const value = "pässwörd-€-🔑-secret";
    const lower = "p\\u00e4ssw\\u00f6rd-\\u20ac-\\ud83d\\udd11-secret";
    const upper = "p\\u00E4ssw\\u00F6rd-\\u20AC-\\uD83D\\uDD11-secret";
    expect(JSON.parse(`"${lower}"`)).toBe(value);
    expect(JSON.parse(`"${upper}"`)).toBe(value);
    for (const form of [value, lower, upper]) {
      const redactor = new StreamRedactor(echoNeedles([value])!);
      const bytes = Buffer.from(`{"a":"${form}"}`);
      const out: Buffer[] = [];
      for (const b of bytes) out.push(Buffer.from(redactor.push(Uint8Array.of(b))));
      out.push(Buffer.from(redactor.end()));
      expect({ form, out: Buffer.concat(out).toString() }).toEqual({ form, out: `{"a":"${REDACTED}"}` });
    }
  });

  test("the echo stage: every form in a streamed body, each split across chunks, and in a header", async () => {
    const rq = await credentialed({}, VALUE);
    const body = `{"a":"${forms.stringify}","b":"${forms.php}","c":"${forms.go}","d":"${forms.dotnetUpper}"}`;
    // Cut inside each form, and at one-byte steps around the first.
    const cuts = [9, 10, 11, ...Object.values(forms).map((f) => body.indexOf(f) + Math.floor(f.length / 2))].sort((x, y) => x - y);
    const chunks: string[] = [];
    let at = 0;
    for (const cut of cuts) {
      chunks.push(body.slice(at, cut));
      at = cut;
    }
    chunks.push(body.slice(at));
    const reply = replyOf(chunks, [["x-echo", `v=${forms.go}`]]);
    const out = (await stage.response!(rq, reply)) as Reply;
    expect(out.header("x-echo")).toBe(`v=${REDACTED}`);
    expect(await replyText(out)).toBe(`{"a":"${REDACTED}","b":"${REDACTED}","c":"${REDACTED}","d":"${REDACTED}"}`);
  });
});
