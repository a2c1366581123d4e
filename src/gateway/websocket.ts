// WebSocket upgrades inside MITM tunnels (docs/gateway.md#websocket): a fresh TCP+TLS connection to the upstream, the
// injected upgrade request written by hand, and on 101 the agent's connection is handed over to a pipe both
// ways, closed after 600 s without traffic: raw bytes, or frames read and rewritten where placeholder
// substitution or a guard reads them (websocket-frames stage, wsFrames.ts). The 101's headers pass the echo guard
// (docs/guards.md#echo-guard) like any response's, and a 101 that switches on an extension the request did not
// offer is refused: credgate strips permessage-deflate from offers so that it can read frames, and a server
// compressing anyway would hide them.
import type * as net from "node:net";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { pipeRaw, type PipeRewrite } from "./client/pipe.ts";
import { upstreamTimeout, upstreamUnreachable } from "./errors.ts";
import { MAX_HEAD_BYTES, parseResponseHead, type ResponseHead } from "./http1/head.ts";
import { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import { answer, relay, type RequestVerdict } from "./stage.ts";
import type { Outbound } from "../services/outbound.ts";
import { dialTarget, upstreamHead } from "./upstream/requestHead.ts";
import { CONNECT_TIMEOUT_MS } from "./upstream/originConnection.ts";
import { FrameRewriter, UnreadableFrame, type FrameScan } from "./wsFrames.ts";
import { redactText, StreamRedactor } from "../core/echoRedaction.ts";
import type { NeedleSet } from "../core/needles.ts";
import { echoNeedlesOf } from "./stages/echo.ts";

const IDLE_MS = 600_000;
const KEPT_ON_101 = ["upgrade", "connection", "sec-websocket-accept", "sec-websocket-protocol", "sec-websocket-extensions"];

/** What the WebSocket's own connection needs (the forward stage's deps hold them). */
export interface WebSocketDeps {
  /** Dials the WebSocket's own connection. */
  outbound: Pick<Outbound, "connect">;
  /** How long the upstream may take to send its response head (CREDGATE_UPSTREAM_HEADER_TIMEOUT). */
  headerTimeoutSeconds: number;
}

export async function websocket(rq: ProxyRequest, deps: WebSocketDeps): Promise<RequestVerdict> {
  let upstream: net.Socket;
  try {
    upstream = await deps.outbound.connect(rq.host, rq.port, { tls: rq.scheme === "https", timeoutMs: CONNECT_TIMEOUT_MS, target: dialTarget(rq) });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return answer("error", upstreamUnreachable(rq.host, rq.port, e.code ?? e.message));
  }
  upstream.setNoDelay(true);
  upstream.write(Buffer.from(upstreamHead(rq, "upgrade: websocket\r\nconnection: Upgrade\r\n"), "latin1"));
  const seconds = deps.headerTimeoutSeconds;
  const head = await readHead(upstream, seconds * 1000);
  if (head === "timeout" || head === null) {
    upstream.destroy();
    return answer("error", head === "timeout" ? upstreamTimeout(rq.host, seconds) : upstreamUnreachable(rq.host, rq.port, "connection closed before the upgrade response"));
  }
  if (head.status !== 101) {
    upstream.destroy();
    return relay(new Response(`WebSocket upgrade rejected by upstream (${head.status})`, { status: head.status, headers: { "content-type": "text/plain" } }));
  }
  if (!extensionsOffered(head.headers, rq.headers.get("sec-websocket-extensions"))) {
    upstream.destroy();
    return answer("error", upstreamUnreachable(rq.host, rq.port, "the server enabled a WebSocket extension that was not offered"));
  }
  // Every value injected by now (placeholders, signatures, minted tokens) is redacted from here on.
  const echo = rq.injectedValues.length > 0 ? echoNeedlesOf(rq.injectedValues) : null;
  const lines = ["HTTP/1.1 101 Switching Protocols"];
  for (const [name, value] of head.headers) {
    if (KEPT_ON_101.includes(name.toLowerCase())) lines.push(`${name}: ${echo ? redactText(value, echo) : value}`);
  }
  const { socket, buffered } = rq.takeOver();
  const rewrite = rq.agentFrames || echo ? frameRewrite(rq, rq.agentFrames, echo, socket, upstream) : null;
  socket.write(Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"));
  // Frames that came with the 101, after it (a refusal's close frame, too).
  const early = rewrite?.toAgent && head.rest.length > 0 ? rewrite.toAgent(head.rest) : head.rest;
  if (early !== null && early.length > 0) socket.write(early);
  const sent = rewrite?.toUpstream && buffered.length > 0 ? rewrite.toUpstream(buffered) : buffered;
  if (sent !== null && sent.length > 0) upstream.write(sent);
  metrics.openWebSockets.inc();
  upstream.setTimeout(IDLE_MS);
  const reply = new Reply(101, "Switching Protocols", new Headers(), null);
  reply.takenOver = true;
  if (early === null || sent === null) {
    upstream.destroy();
    socket.end();
  }
  pipeRaw(
    socket,
    upstream,
    (why) => {
      metrics.openWebSockets.dec();
      log.info("websocket relay closed", { reason: why });
      // The request ends with the relay: what waits for its end (the log row's final count) runs now.
      reply.finish(true);
    },
    null,
    rewrite,
  );
  return relay(reply);
}

/** The extension names of a Sec-WebSocket-Extensions value (`a; p=1, b` → a, b), lowercased. */
function extensionNames(value: string): string[] {
  return value
    .split(",")
    .map((e) => e.split(";")[0]!.trim().toLowerCase())
    .filter((e) => e !== "");
}

/** Whether every extension the 101 names was in the offer sent upstream. */
function extensionsOffered(headers: ResponseHead["headers"], offer: string | null): boolean {
  const offered = offer === null ? [] : extensionNames(offer);
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== "sec-websocket-extensions") continue;
    for (const e of extensionNames(value)) if (!offered.includes(e)) return false;
  }
  return true;
}

/** A close frame from the gateway to the agent (unmasked, server to client): `code` and a short reason. */
function closeFrame(code: number, reason: string): Buffer {
  const payload = Buffer.concat([Buffer.from([code >> 8, code & 0xff]), Buffer.from(reason)]);
  return Buffer.concat([Buffer.from([0x88, payload.length]), payload]);
}

/** Close frame 1008 (policy violation), reason `credential_leak_blocked`. */
const LEAK_CLOSE = closeFrame(1008, "credential_leak_blocked");
/** Close frame 1002 (protocol error): a frame the guards cannot read is not let through. */
const UNREADABLE_CLOSE = closeFrame(1002, "credgate cannot read the frame");

/**
 * The frames read each way: the agent's by the websocket-frames stage's scans, the server's by the echo guard.
 * A frame that carries a credential to the wrong host (the leak guard's scan throws), or that cannot be read, is
 * not written (the frames before it in the same read are): the agent gets a close frame (1008, 1002) and both
 * sides are closed.
 */
function frameRewrite(rq: ProxyRequest, agentFrames: FrameScan[] | null, echo: NeedleSet | null, agent: { write(b: Buffer): boolean }, upstream: { write(b: Buffer): boolean }): PipeRewrite {
  const up = agentFrames ? new FrameRewriter(agentFrames, true) : null;
  const down = echo ? new FrameRewriter([{ stream: new StreamRedactor(echo), controls: new StreamRedactor(echo) }], false) : null;
  return {
    toUpstream: up
      ? (chunk) => {
          try {
            return up.push(chunk);
          } catch (err) {
            if (up.beforeFailure.length > 0) upstream.write(up.beforeFailure);
            if (err instanceof UnreadableFrame) {
              log.warn("websocket frame refused: it cannot be read", { host: rq.host, reason: err.message });
              agent.write(UNREADABLE_CLOSE);
            } else {
              log.warn("websocket message refused by the credential leak guard", { host: rq.host, secret: rq.leak?.secretName });
              agent.write(LEAK_CLOSE);
            }
            return null;
          }
        }
      : null,
    toAgent: down
      ? (chunk) => {
          try {
            return down.push(chunk);
          } catch (err) {
            if (down.beforeFailure.length > 0) agent.write(down.beforeFailure);
            log.warn("websocket frame from the server refused: it cannot be read", { host: rq.host, reason: (err as Error).message });
            agent.write(UNREADABLE_CLOSE);
            return null;
          }
        }
      : null,
  };
}

function readHead(sock: net.Socket, timeoutMs: number): Promise<(ResponseHead & { rest: Buffer }) | null | "timeout"> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const finish = (v: (ResponseHead & { rest: Buffer }) | null | "timeout") => {
      clearTimeout(timer);
      sock.off("data", onData);
      sock.off("close", onClose);
      sock.off("error", onClose);
      sock.pause();
      resolve(v);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) {
        if (buf.length > MAX_HEAD_BYTES) finish(null);
        return;
      }
      const head = parseResponseHead(buf, end);
      finish(head ? { ...head, rest: buf.subarray(end + 4) } : null);
    };
    const onClose = () => finish(null);
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    sock.on("data", onData);
    sock.once("close", onClose);
    sock.once("error", onClose);
  });
}
