// The websocket-frames stage and the frame rewriter it sets up (docs/gateway.md#websocket): placeholders in client
// messages are replaced (masked frames unmasked, rewritten, re-masked and re-framed), also when split across
// frames of one message or across reads; control frames pass placeholders by; server frames are redacted, PING
// payloads and CLOSE reasons included (cut to 125 bytes), values split across messages too; a leak throws, in a
// control frame or split across messages too; a frame with an RSV bit, or a control frame over 125 bytes, cannot
// be read; permessage-deflate leaves the offer. Plain requests and upgrades with nothing to read are left alone.
import { describe, expect, test } from "bun:test";
import { NeedleSet } from "../../../src/core/needles.ts";
import { NeedleStream } from "../../../src/core/needleStream.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import { injectStage } from "../../../src/gateway/stages/inject.ts";
import { placeholderStage } from "../../../src/gateway/stages/placeholder.ts";
import { websocketFramesStage, withoutDeflate } from "../../../src/gateway/stages/websocketFrames.ts";
import { agentCredentials, compiledSecret, signIn, testRequest } from "../../../src/gateway/testing.ts";
import { StreamRedactor } from "../../../src/core/echoRedaction.ts";
import { echoNeedlesOf } from "../../../src/gateway/stages/echo.ts";
import { FrameRewriter, UnreadableFrame } from "../../../src/gateway/wsFrames.ts";
import { VaultResolver } from "../../../src/vault/resolver.ts";

const PH = "CG_WS_PLACEHOLDER";
const VALUE = "ws-value-a+b/c=d-0123456789";
const LEAKED = "sk-other-host-0123456789";

function frame(opcode: number, payload: Buffer, fin = true, masked = true): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([(fin ? 0x80 : 0) | opcode, (masked ? 0x80 : 0) | len]) : len < 65536 ? Buffer.from([(fin ? 0x80 : 0) | opcode, (masked ? 0x80 : 0) | 126, len >> 8, len & 0xff]) : (() => {
    const h = Buffer.alloc(10);
    h[0] = (fin ? 0x80 : 0) | opcode;
    h[1] = (masked ? 0x80 : 0) | 127;
    h.writeBigUInt64BE(BigInt(len), 2);
    return h;
  })();
  if (!masked) return Buffer.concat([head, payload]);
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  return Buffer.concat([head, mask, Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!))]);
}

/** Every frame in `bytes`: opcode, fin, unmasked payload (checks masking is as the direction requires). */
function frames(bytes: Buffer, masked: boolean): { opcode: number; fin: boolean; payload: Buffer }[] {
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const b0 = bytes[at]!;
    const b1 = bytes[at + 1]!;
    expect((b1 & 0x80) !== 0).toBe(masked);
    let len = b1 & 0x7f;
    let p = at + 2;
    if (len === 126) (len = bytes.readUInt16BE(p)), (p += 2);
    else if (len === 127) (len = Number(bytes.readBigUInt64BE(p))), (p += 8);
    const mask = masked ? bytes.subarray(p, p + 4) : null;
    if (mask) p += 4;
    const payload = Buffer.from(bytes.subarray(p, p + len));
    if (mask) for (let i = 0; i < len; i++) payload[i]! ^= mask[i & 3]!;
    out.push({ opcode: b0 & 0x0f, fin: (b0 & 0x80) !== 0, payload });
    at = p + len;
  }
  return out;
}

/** The messages a sequence of frames makes (continuations joined), control frames on their own. */
function messages(fs: { opcode: number; fin: boolean; payload: Buffer }[]): { opcode: number; text: string }[] {
  const out: { opcode: number; text: string }[] = [];
  let open: { opcode: number; parts: Buffer[] } | null = null;
  for (const f of fs) {
    if (f.opcode >= 8) {
      out.push({ opcode: f.opcode, text: f.payload.toString() });
      continue;
    }
    if (f.opcode !== 0) open = { opcode: f.opcode, parts: [] };
    open!.parts.push(f.payload);
    if (f.fin) {
      out.push({ opcode: open!.opcode, text: Buffer.concat(open!.parts).toString() });
      open = null;
    }
  }
  return out;
}

const set = new NeedleSet([PH]);
const replace = () => [{ stream: new NeedleStream(set, { replacement: () => Buffer.from(VALUE) }), controls: null }];
/** The echo guard's reading of server frames, for VALUE. */
const redactor = (value: string) => new StreamRedactor(echoNeedlesOf([value])!);
const redact = () => new FrameRewriter([{ stream: redactor(VALUE), controls: redactor(VALUE) }], false);
const thrower = () => new NeedleStream(new NeedleSet([LEAKED]), { replacement: () => { throw new Error("leak"); } });
const throwing = () => [{ stream: thrower(), controls: thrower() }];
const close = (code: number, reason: string) => Buffer.concat([Buffer.from([code >> 8, code & 0xff]), Buffer.from(reason)]);

describe("frame rewriter", () => {
  test("text and binary frames, masked, are rewritten and re-masked with their new length", () => {
    const r = new FrameRewriter(replace(), true);
    const out = r.push(Buffer.concat([frame(1, Buffer.from(`hi ${PH}!`)), frame(2, Buffer.from(`${PH}${PH}`))]));
    expect(messages(frames(out, true))).toEqual([
      { opcode: 1, text: `hi ${VALUE}!` },
      { opcode: 2, text: `${VALUE}${VALUE}` },
    ]);
  });

  test("a placeholder split across the frames of a message, with a ping between, and fed a byte at a time", () => {
    const input = Buffer.concat([frame(1, Buffer.from(`a ${PH.slice(0, 5)}`), false), frame(9, Buffer.from("ping")), frame(0, Buffer.from(`${PH.slice(5)} b`), true)]);
    for (const step of [input.length, 1, 3, 7]) {
      const r = new FrameRewriter(replace(), true);
      const parts: Buffer[] = [];
      for (let i = 0; i < input.length; i += step) parts.push(r.push(input.subarray(i, i + step)));
      expect(messages(frames(Buffer.concat(parts), true))).toEqual([
        { opcode: 9, text: "ping" },
        { opcode: 1, text: `a ${VALUE} b` },
      ]);
    }
  });

  test("a 200 KB frame arriving in 16 KiB reads goes on as fragments as it comes; placeholders across reads are found", () => {
    const payload = Buffer.alloc(200_000, "x");
    for (let at = 16384 - 4; at < 190_000; at += 16384) payload.write(PH, at);
    const input = frame(2, payload);
    const r = new FrameRewriter(replace(), true);
    const out: Buffer[] = [];
    for (let i = 0; i < input.length; i += 16384) out.push(r.push(input.subarray(i, i + 16384)));
    const got = messages(frames(Buffer.concat(out), true));
    expect(got.length).toBe(1);
    expect(got[0]!.text).toBe(payload.toString().split(PH).join(VALUE));
    // Bounded: every read gave something on at once.
    expect(out.slice(0, -1).every((b) => b.length > 0)).toBe(true);
  });

  test("server frames (unmasked) stay unmasked; a scan that throws propagates", () => {
    const r = new FrameRewriter(replace(), false);
    expect(messages(frames(r.push(frame(1, Buffer.from(PH), true, false)), false))).toEqual([{ opcode: 1, text: VALUE }]);
    const leak = new FrameRewriter(throwing(), true);
    expect(() => leak.push(frame(1, Buffer.from(`x ${LEAKED}`)))).toThrow("leak");
  });

  test("server control frames are redacted: a PING's payload, a CLOSE's reason (its code kept); grown past 125 bytes, cut", () => {
    const r = redact();
    const out = r.push(Buffer.concat([frame(9, Buffer.from(`p ${VALUE}`), true, false), frame(8, close(4001, `r ${VALUE}`), true, false)]));
    const got = frames(out, false);
    expect(got.map((f) => [f.opcode, f.payload.toString("latin1")])).toEqual([
      [9, "p credgate-redacted"],
      [8, `${close(4001, "").toString("latin1")}r credgate-redacted`],
    ]);
    const short = "short-v1"; // shorter than credgate-redacted: the payload grows
    const s2 = new FrameRewriter([{ stream: redactor(short), controls: redactor(short) }], false);
    const long = frames(s2.push(frame(10, Buffer.from("x".repeat(117) + short), true, false)), false);
    expect(long[0]!.payload.toString()).toBe("x".repeat(117) + "credgate");
    // A CLOSE reason is cut where no UTF-8 character breaks.
    const utf = frames(s2.push(frame(8, close(1000, `a${short}${"é".repeat(55)}`), true, false)), false);
    expect(utf[0]!.payload.length).toBe(124);
    expect(utf[0]!.payload.subarray(2).toString()).toBe(`acredgate-redacted${"é".repeat(52)}`);
  });

  test("a value split across server messages, or a message and a PING: redacted from where it continues", () => {
    const r = redact();
    const cut = 10;
    const out = r.push(Buffer.concat([frame(1, Buffer.from(`one ${VALUE.slice(0, cut)}`), true, false), frame(1, Buffer.from(`${VALUE.slice(cut)} two`), true, false)]));
    expect(messages(frames(out, false))).toEqual([
      { opcode: 1, text: `one ${VALUE.slice(0, cut)}` },
      { opcode: 1, text: "credgate-redacted two" },
    ]);
    const ping = r.push(Buffer.concat([frame(1, Buffer.from(`three ${VALUE.slice(0, cut)}`), true, false), frame(9, Buffer.from(VALUE.slice(cut)), true, false)]));
    expect(messages(frames(ping, false))).toEqual([
      { opcode: 1, text: `three ${VALUE.slice(0, cut)}` },
      { opcode: 9, text: "credgate-redacted" },
    ]);
  });

  test("the leak guard reads client control frames and carries over across messages and PINGs", () => {
    expect(() => new FrameRewriter(throwing(), true).push(frame(9, Buffer.from(`p ${LEAKED}`)))).toThrow("leak");
    expect(() => new FrameRewriter(throwing(), true).push(frame(8, close(1000, `bye ${LEAKED}`)))).toThrow("leak");
    const split = new FrameRewriter(throwing(), true);
    expect(messages(frames(split.push(frame(1, Buffer.from(`a ${LEAKED.slice(0, 9)}`))), true))).toEqual([{ opcode: 1, text: `a ${LEAKED.slice(0, 9)}` }]);
    expect(() => split.push(frame(1, Buffer.from(LEAKED.slice(9))))).toThrow("leak");
    const pings = new FrameRewriter(throwing(), true);
    pings.push(frame(9, Buffer.from(LEAKED.slice(0, 9))));
    expect(() => pings.push(frame(10, Buffer.from(LEAKED.slice(9))))).toThrow("leak");
    // Two PINGs with a message between them: the control frames' own stream joins them.
    const apart = new FrameRewriter(throwing(), true);
    apart.push(Buffer.concat([frame(9, Buffer.from(LEAKED.slice(0, 9))), frame(1, Buffer.from("sync"))]));
    expect(() => apart.push(frame(9, Buffer.from(LEAKED.slice(9))))).toThrow("leak");
  });

  test("a frame with an RSV bit, a control frame over 125 bytes or fragmented: unreadable", () => {
    const rsv1 = frame(1, Buffer.from("compressed?"));
    rsv1[0]! |= 0x40;
    expect(() => redact().push(rsv1)).toThrow(UnreadableFrame);
    expect(() => redact().push(frame(9, Buffer.alloc(126, 0x61), true, false))).toThrow(UnreadableFrame);
    expect(() => redact().push(frame(9, Buffer.from("x"), false, false))).toThrow(UnreadableFrame);
  });
});

describe("stage", () => {
  const inject = injectStage({ vault: new VaultResolver({ host: null, token: null, fetch: fetch }) });
  const ph = placeholderStage();

  async function upgrade(surfaces: ("websocket" | "header")[] | null, leakGuard: boolean, extensions = "permessage-deflate; client_max_window_bits, x-other"): Promise<ProxyRequest> {
    const rq = testRequest({ tunnel: "ws.test", target: "/ws", headers: { upgrade: "websocket", connection: "Upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13", "sec-websocket-extensions": extensions } });
    const secrets = surfaces ? [compiledSecret({ hostPattern: "ws.test", value: VALUE, injection: { placeholder: PH, surfaces } })] : [];
    signIn(rq, agentCredentials({ injectable: secrets, visible: [compiledSecret({ id: "other", name: "Other", hostPattern: "other.test", value: LEAKED })] }));
    expect(rq.websocket).toBe(true);
    await inject.request!(rq);
    await ph.request!(rq);
    websocketFramesStage({ leakGuard }).request!(rq);
    return rq;
  }

  test("a websocket placeholder: client messages rewritten (counted once), server messages redacted, deflate out of the offer", async () => {
    const rq = await upgrade(["websocket"], false);
    expect(rq.headers.get("sec-websocket-extensions")).toBe("x-other");
    const up = new FrameRewriter(rq.agentFrames!, true);
    expect(messages(frames(up.push(Buffer.concat([frame(1, Buffer.from(PH)), frame(1, Buffer.from(PH))])), true))).toEqual([
      { opcode: 1, text: VALUE },
      { opcode: 1, text: VALUE },
    ]);
    expect(rq.injectionCount).toBe(1);
    // The echo guard will redact the value in server frames (the relay reads them with these values: websocket.ts).
    expect(rq.injectedValues).toEqual([VALUE]);
  });

  test("the leak guard reads client messages: a value for another host throws", async () => {
    const rq = await upgrade(null, true, "permessage-deflate");
    expect(rq.headers.get("sec-websocket-extensions")).toBeNull();
    const up = new FrameRewriter(rq.agentFrames!, true);
    expect(() => up.push(frame(1, Buffer.from(`key=${LEAKED}`)))).toThrow();
    expect(rq.leak?.secretName).toBe("Other");
  });

  test("nothing to read: a raw pipe, the offer kept; plain requests pass", async () => {
    const rq = await upgrade(["header"], false);
    expect(rq.agentFrames).toBeNull();
    expect(rq.headers.get("sec-websocket-extensions")).toBe("permessage-deflate; client_max_window_bits, x-other");
    const plain = testRequest({ tunnel: "ws.test", target: "/" });
    signIn(plain, agentCredentials());
    expect(websocketFramesStage({ leakGuard: true }).request!(plain)).toEqual({ decision: null, response: null });
  });

  test("withoutDeflate keeps the other extensions", () => {
    expect(withoutDeflate("permessage-deflate")).toBeNull();
    expect(withoutDeflate("x-a; p=1, PerMessage-Deflate ; server_no_context_takeover, x-b")).toBe("x-a; p=1, x-b");
  });
});
