// What the front listener knows about each connection it hands to the internal HTTP server. The internal
// server finds it by the loopback connection's local port (its `requestIP` port); a connection the front
// did not open has no entry and is refused.
import type { Duplex } from "node:stream";
import type * as net from "node:net";

export interface TunnelConn {
  kind: "tunnel";
  scheme: "https" | "http";
  /** Host to match patterns against: lowercase, no port, no brackets. */
  host: string;
  port: number;
  /** `host[:port]` for the upstream URL: brackets kept, default port dropped. */
  authority: string;
  /** The token presented on CONNECT; re-checked on every request inside the tunnel. */
  token: string;
  /** The client side of the tunnel (TLS-terminated or plain). */
  client: Duplex;
  /** The loopback connection to the internal server. */
  loop: net.Socket;
  /** Set once the stream was handed to a raw upstream socket; the loopback leg's end then means nothing. */
  switched?: boolean;
}

/**
 * A plain proxy connection carrying one absolute-form request (its own Proxy-Authorization). The internal
 * server rebuilds request.url from the Host header, so the front keeps the request-target it read, and the
 * answer closes the connection: the next request comes on a new one, with its own target read again.
 */
export interface ForwardConn {
  kind: "forward";
  /** The absolute-form request-target, e.g. `https://api.example.com:8443/v1/x?y=1`. */
  url: string;
  client: Duplex;
  loop: net.Socket;
}

/** An origin-form connection: the gateway's control routes (/healthz, /v1/approvals/…, /v1/gateway/ca). */
export interface ControlConn {
  kind: "control";
}

export type Conn = TunnelConn | ForwardConn | ControlConn;

export class ConnectionRegistry {
  readonly #byPort = new Map<number, Conn>();

  add(localPort: number, conn: Conn): void {
    this.#byPort.set(localPort, conn);
  }

  get(port: number): Conn | undefined {
    return this.#byPort.get(port);
  }

  remove(localPort: number): void {
    this.#byPort.delete(localPort);
  }
}

/**
 * Hands the client stream over from the internal server to a raw upstream socket (WebSocket after 101):
 * the loopback leg is cut, `head` goes to the client, then bytes flow both ways untouched.
 */
export function switchToRaw(conn: TunnelConn, upstream: net.Socket, head: Buffer, idleMs: number): void {
  conn.switched = true;
  conn.client.unpipe(conn.loop);
  conn.loop.unpipe(conn.client);
  conn.loop.destroy();
  conn.client.write(head);
  conn.client.pipe(upstream);
  upstream.pipe(conn.client);
  const close = () => {
    upstream.destroy();
    conn.client.destroy();
  };
  upstream.setTimeout(idleMs, close);
  if ("setTimeout" in conn.client) (conn.client as net.Socket).setTimeout(idleMs, close);
  upstream.on("close", close);
  upstream.on("error", close);
  conn.client.on("close", close);
  conn.client.on("error", close);
}
