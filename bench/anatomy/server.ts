// Stand-ins for the layers of the gateway's request path, each a separate process, so the cost of each
// layer can be measured with the same load client (bench/anatomy.ts). None of this is credgate code: it
// copies the shape of src/gateway/listener.ts and stages/forward.ts with nothing else around it.
//
//   tls-static        node:net front, CONNECT, node:tls TLSSocket termination, static answer written on the
//                     TLS socket (no internal server)
//   tls-pipe-static   …, then piped over 127.0.0.1 into an internal Bun.serve that answers static JSON
//                     (the credgate shape minus pipeline and upstream)
//   tls-pipe-fetch    …, and the internal Bun.serve forwards with a FetchSession (session-level TLS options)
//   tls-pipe-fetch-signal   … plus what stages/forward.ts adds per request: an AbortController, a header
//                     timer, AbortSignal.any([timer, request.signal]) and timeout:false
//   tls-pipe-fetch-pertls   … plus per-request `tls: {ca: [system roots + upstream CA], serverName}`, as
//                     services/outbound.ts passes for a host pinned by CREDGATE_RESOLVE
//   raw-pipe-tls-static  node:net front, CONNECT, raw bytes piped into an internal Bun.serve that terminates
//                     TLS itself (uWS/BoringSSL in native code), static answer
//   raw-pipe-tls-fetch   …, and forwards with a FetchSession
//   bun-tls-fetch     a plain Bun.serve TLS reverse proxy (no CONNECT, no hop): the floor for "terminate TLS
//                     and forward with Bun fetch" in one process; the client connects to it directly
//
// Usage: bun bench/anatomy/server.ts <mode> <cert.pem> <key.pem> <upstream-ca.pem> <upstream-port>
// Prints {"port":…} once listening.
import * as net from "node:net";
import * as tls from "node:tls";
import { readFileSync } from "node:fs";

const [mode, certFile, keyFile, upstreamCaFile, upstreamPortText] = process.argv.slice(2);
if (!mode || !certFile || !keyFile || !upstreamCaFile || !upstreamPortText) {
  console.error("usage: bun bench/anatomy/server.ts <mode> <cert.pem> <key.pem> <upstream-ca.pem> <upstream-port>");
  process.exit(2);
}
const cert = readFileSync(certFile, "utf8");
const key = readFileSync(keyFile, "utf8");
const upstreamPort = Number(upstreamPortText);
const STATIC = JSON.stringify({ ok: true, service: "bench-upstream", items: [1, 2, 3] });
const STATIC_RESPONSE = Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${STATIC.length}\r\n\r\n${STATIC}`);

// Like the gateway's outbound client: one session, TLS options on the session, never per request.
const ca = [...tls.rootCertificates, readFileSync(upstreamCaFile, "utf8")];
const session = new Bun.FetchSession({ proxy: false, tls: { ca } });
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"]);

function makeForward(variant: "plain" | "signal" | "pertls") {
  return async (req: Request): Promise<Response> => {
    const path = req.url.slice(req.url.indexOf("/", 8));
    const headers = new Headers();
    for (const [k, v] of req.headers) if (!HOP.has(k)) headers.append(k, v);
    headers.set("authorization", "Bearer injected");
    const init: BunFetchRequestInit = { method: req.method, headers, redirect: "manual", decompress: false };
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (variant === "signal") {
      const headerTimer = new AbortController();
      timer = setTimeout(() => headerTimer.abort(), 300_000);
      init.signal = AbortSignal.any([headerTimer.signal, req.signal]);
      init.timeout = false;
    }
    if (variant === "pertls") init.tls = { ca, serverName: "bench.example.com" };
    try {
      const up = await session.fetch(`https://127.0.0.1:${upstreamPort}${path}`, init);
      const out = new Headers();
      for (const [k, v] of up.headers) if (!HOP.has(k)) out.append(k, v);
      return new Response(up.body, { status: up.status, headers: out });
    } finally {
      clearTimeout(timer);
    }
  };
}
const forward = makeForward("plain");

const staticAnswer = () => new Response(STATIC, { headers: { "content-type": "application/json" } });

function internalServer(withTls: boolean, handler: (req: Request) => Response | Promise<Response>) {
  return Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, ...(withTls ? { tls: { cert, key } } : {}), fetch: handler });
}

/** The front: reads the CONNECT head, answers 200, then hands the stream to `onTunnel`. */
function front(onTunnel: (sock: net.Socket) => void): net.Server {
  return net.createServer({ noDelay: true }, (sock) => {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) return;
      sock.off("data", onData);
      sock.pause();
      sock.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (end + 4 < buf.length) sock.unshift(buf.subarray(end + 4));
      onTunnel(sock);
    };
    sock.on("data", onData);
    sock.on("error", () => sock.destroy());
  });
}

function pipeTo(client: net.Socket | tls.TLSSocket, port: number): void {
  const loop = net.connect({ port, host: "127.0.0.1", noDelay: true });
  loop.once("connect", () => {
    client.pipe(loop);
    loop.pipe(client);
    client.resume();
  });
  loop.on("error", () => client.destroy());
  loop.on("close", () => client.destroy());
  client.on("close", () => loop.destroy());
  client.on("error", () => loop.destroy());
}

const context = tls.createSecureContext({ cert, key });
function terminate(sock: net.Socket): tls.TLSSocket {
  const secure = new tls.TLSSocket(sock, { isServer: true, secureContext: context, ALPNProtocols: ["http/1.1"] });
  secure.on("error", () => secure.destroy());
  secure.on("close", () => sock.destroy());
  return secure;
}

let port: number;
switch (mode) {
  case "tls-static": {
    const srv = front((sock) => {
      const secure = terminate(sock);
      let pending = "";
      secure.on("data", (chunk: Buffer) => {
        pending += chunk.toString("latin1");
        let end: number;
        while ((end = pending.indexOf("\r\n\r\n")) !== -1) {
          pending = pending.slice(end + 4);
          secure.write(STATIC_RESPONSE);
        }
      });
      sock.resume();
    });
    port = await listen(srv);
    break;
  }
  case "tls-pipe-static":
  case "tls-pipe-fetch":
  case "tls-pipe-fetch-signal":
  case "tls-pipe-fetch-pertls": {
    const handler = { "tls-pipe-static": staticAnswer, "tls-pipe-fetch": forward, "tls-pipe-fetch-signal": makeForward("signal"), "tls-pipe-fetch-pertls": makeForward("pertls") }[mode];
    const inner = internalServer(false, handler);
    const srv = front((sock) => {
      pipeTo(terminate(sock), inner.port!);
      sock.resume();
    });
    port = await listen(srv);
    break;
  }
  case "raw-pipe-tls-static":
  case "raw-pipe-tls-fetch": {
    const inner = internalServer(true, mode === "raw-pipe-tls-static" ? staticAnswer : forward);
    const srv = front((sock) => pipeTo(sock, inner.port!));
    port = await listen(srv);
    break;
  }
  case "bun-tls-fetch": {
    port = internalServer(true, forward).port!;
    break;
  }
  default:
    console.error(`unknown mode ${mode}`);
    process.exit(2);
}

function listen(srv: net.Server): Promise<number> {
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve((srv.address() as net.AddressInfo).port)));
}

process.stdout.write(JSON.stringify({ port }) + "\n");
process.on("SIGTERM", () => process.exit(0));
