// A CONNECT tunnel through an HTTP(S) proxy, for the Node preload: connect to the proxy (TLS when the proxy URL
// is https://), ask for `CONNECT host:port` with the URL's credentials as Basic proxy auth, and hand back the
// socket once the proxy answers 200. A refusal becomes an error naming the proxy's status and message.
// Bundled into the Node preload: imports nothing of ours but proxyEnv.ts.
import * as net from "node:net";
import * as tls from "node:tls";
import { defaultPort } from "./proxyEnv.ts";

const MAX_HEAD = 16 * 1024;

export function authority(host: string, port: number): string {
  const h = host.replace(/^\[|\]$/g, "");
  return `${net.isIPv6(h) ? `[${h}]` : h}:${port}`;
}

export function openTunnel(proxy: URL, host: string, port: number, done: (err: Error | null, socket?: net.Socket) => void): void {
  const proxyHost = proxy.hostname.replace(/^\[|\]$/g, "");
  const proxyPort = defaultPort(proxy);
  const socket: net.Socket =
    proxy.protocol === "https:"
      ? tls.connect({ host: proxyHost, port: proxyPort, servername: net.isIP(proxyHost) ? undefined : proxyHost, ALPNProtocols: ["http/1.1"] })
      : net.connect({ host: proxyHost, port: proxyPort });
  const target = authority(host, port);
  const credentials = proxy.username || proxy.password ? `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}` : null;
  socket.write(
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n` +
      (credentials ? `Proxy-Authorization: Basic ${Buffer.from(credentials).toString("base64")}\r\n` : "") +
      "\r\n",
  );

  let head = Buffer.alloc(0);
  let settled = false;
  const finish = (err: Error | null) => {
    if (settled) return;
    settled = true;
    socket.removeListener("data", onData);
    socket.removeListener("error", onError);
    socket.removeListener("close", onClose);
    if (err) {
      socket.destroy();
      done(err);
    } else done(null, socket);
  };
  const onError = (err: Error) => finish(new Error(`cannot reach the proxy ${proxyHost}:${proxyPort} for ${target}: ${err.message}`));
  const onClose = () => finish(new Error(`the proxy ${proxyHost}:${proxyPort} closed the connection before answering CONNECT ${target}`));
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) {
      if (head.length > MAX_HEAD) finish(new Error(`the proxy ${proxyHost}:${proxyPort} sent an oversized answer to CONNECT ${target}`));
      return;
    }
    const statusLine = head.subarray(0, head.indexOf("\r\n")).toString("latin1");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
    if (status === 200) {
      const rest = head.subarray(end + 4);
      // Off first: Bun hands unshifted bytes straight back to the data listeners (this one would read them again).
      socket.removeListener("data", onData);
      if (rest.length > 0) socket.unshift(rest);
      finish(null);
      return;
    }
    finish(new Error(`the proxy refused CONNECT ${target}: ${statusLine}${messageOf(head.subarray(end + 4))}`));
  };
  socket.on("data", onData);
  socket.on("error", onError);
  socket.on("close", onClose);
}

/** credgate answers refusals with JSON `{error, message}`: its message says why (e.g. an unknown agent token). */
function messageOf(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.toString("utf8"));
    return typeof parsed?.message === "string" ? ` (${parsed.message})` : "";
  } catch {
    return "";
  }
}
