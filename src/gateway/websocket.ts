// WebSocket upgrades inside MITM tunnels (CONTRACT §6.14): a fresh TCP+TLS connection to the upstream, the
// injected upgrade request written by hand, and on 101 the tunnel is switched to raw piping both ways.
import type * as net from "node:net";
import { switchToRaw, type TunnelConn } from "./connections.ts";
import type { GatewayContext } from "./context.ts";
import { upstreamTimeout, upstreamUnreachable } from "./errors.ts";
import type { ProxyRequest } from "./request.ts";

const IDLE_MS = 600_000;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_HEAD_BYTES = 64 * 1024;
const KEPT_ON_101 = ["upgrade", "connection", "sec-websocket-accept", "sec-websocket-protocol", "sec-websocket-extensions"];

interface UpstreamHead {
  status: number;
  headers: [string, string][];
  rest: Buffer;
}

export async function websocket(rq: ProxyRequest, g: GatewayContext): Promise<Response> {
  const conn = rq.conn as TunnelConn;
  let upstream: net.Socket;
  try {
    upstream = await g.services.outbound.connect(rq.host, rq.port, { tls: rq.scheme === "https", timeoutMs: CONNECT_TIMEOUT_MS });
  } catch (err) {
    rq.decision = "error";
    const e = err as NodeJS.ErrnoException;
    return upstreamUnreachable(rq.host, rq.port, e.code ?? e.message);
  }
  upstream.setNoDelay(true);
  upstream.write(requestHead(rq));
  const seconds = g.config.upstreamHeaderTimeoutSeconds;
  const head = await readHead(upstream, seconds * 1000);
  if (head === "timeout") {
    upstream.destroy();
    rq.decision = "error";
    return upstreamTimeout(rq.host, seconds);
  }
  if (head === null) {
    upstream.destroy();
    rq.decision = "error";
    return upstreamUnreachable(rq.host, rq.port, "connection closed before the upgrade response");
  }
  rq.status = head.status;
  if (head.status !== 101) {
    upstream.destroy();
    return new Response(`WebSocket upgrade rejected by upstream (${head.status})`, {
      status: head.status,
      headers: { "content-type": "text/plain" },
    });
  }
  const lines = ["HTTP/1.1 101 Switching Protocols"];
  for (const [name, value] of head.headers) if (KEPT_ON_101.includes(name.toLowerCase())) lines.push(`${name}: ${value}`);
  const out = Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), head.rest]);
  switchToRaw(conn, upstream, out, IDLE_MS);
  // The internal server's answer goes into the loopback leg that was just cut; nobody reads it.
  return new Response(null, { status: 204 });
}

function requestHead(rq: ProxyRequest): string {
  const lines = [`GET ${rq.upstreamTarget} HTTP/1.1`, `Host: ${rq.authority}`];
  for (const [name, value] of rq.headers) lines.push(`${name}: ${value}`);
  lines.push("Upgrade: websocket", "Connection: Upgrade");
  return `${lines.join("\r\n")}\r\n\r\n`;
}

function readHead(sock: net.Socket, timeoutMs: number): Promise<UpstreamHead | null | "timeout"> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const finish = (v: UpstreamHead | null | "timeout") => {
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
      const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "");
      if (!m) return finish(null);
      const headers: [string, string][] = [];
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":");
        if (colon > 0) headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
      }
      finish({ status: Number(m[1]), headers, rest: buf.subarray(end + 4) });
    };
    const onClose = () => finish(null);
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    sock.on("data", onData);
    sock.once("close", onClose);
    sock.once("error", onClose);
  });
}
