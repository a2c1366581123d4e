// One HTTP/1.1 connection to an upstream, on Bun's native sockets (TLS in native code): dialled with the
// outbound rules (CREDGATE_RESOLVE/CONNECT_TO, upstream CA, the upstream proxy), verified against the real host
// name, and reused for one exchange after another while the upstream keeps it alive.
import type { Socket, SocketHandler } from "bun";
import { checkServerIdentity, type PeerCertificate } from "node:tls";
import type { DialTarget } from "../../services/outbound.ts";
import { BATCH_HIGH_WATER, OutgoingBytes, type BatchedSocket, type Outgoing } from "../writeBatch.ts";

export const CONNECT_TIMEOUT_MS = 10_000;

/** What an exchange in progress hears from its connection. */
export interface ConnectionUser {
  data(buf: Buffer): void;
  drain(): void;
  closed(): void;
}

export interface DialOptions {
  target: DialTarget;
  tls: boolean;
  /** Extra trusted CAs (with the system roots), or undefined for the defaults. */
  ca: string[] | undefined;
  /** Opens a tunnel to the target through the upstream proxy (docs/operations.md#upstream-proxy); null: dial it directly. */
  tunnel: (() => Promise<Socket<unknown>>) | null;
}

/** ALPN offered to TLS origins: h2 first, the origin chooses (docs/gateway.md#http2-and-grpc). */
const ALPN = Buffer.from("\x02h2\x08http/1.1", "latin1");

export class UpstreamConnection implements BatchedSocket {
  user: ConnectionUser | null = null;
  closed = false;
  /** The protocol the origin chose by ALPN: "h2", or HTTP/1.1 (also when it chose none). */
  h2 = false;
  /** When it last went idle (for the pool's idle limit). */
  idleSince = 0;

  private constructor(private readonly socket: Socket<UpstreamConnection | null>) {}

  /** Connects (and completes the TLS handshake); rejects with a reason a person can read. */
  static dial(opts: DialOptions): Promise<UpstreamConnection> {
    const { target } = opts;
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (reason: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new Error(reason));
      };
      const ready = (socket: Socket<UpstreamConnection | null>) => {
        if (settled) return void socket.end();
        settled = true;
        clearTimeout(timer);
        const conn = new UpstreamConnection(socket);
        conn.h2 = socket.alpnProtocol === "h2";
        socket.data = conn;
        resolve(conn);
      };
      const timer = setTimeout(() => fail(`connect timed out after ${CONNECT_TIMEOUT_MS / 1000} s`), CONNECT_TIMEOUT_MS);
      // Bun checks the certificate against serverName (or else the dialled address): always the real host,
      // an IP literal included, so that a pinned address is verified as the name it stands for.
      const tls = opts.tls ? { serverName: target.host, ca: opts.ca, rejectUnauthorized: true, ALPNProtocols: ALPN } : undefined;
      const handlers: SocketHandler<UpstreamConnection | null> = {
        open(socket) {
          socket.setNoDelay(true);
          if (!opts.tls) ready(socket);
        },
        handshake(socket, success, authorizationError) {
          if (!success || authorizationError) {
            socket.end();
            return fail(authorizationError?.message ?? "TLS handshake failed");
          }
          // Bun verifies the chain; the name is checked here, as node:tls would.
          const identity = checkServerIdentity(target.host, socket.getPeerCertificate() as PeerCertificate);
          if (identity) {
            socket.end();
            return fail(identity.message);
          }
          ready(socket);
        },
        data(socket, buf) {
          const conn = socket.data;
          if (!conn) return;
          // Bytes while no exchange is waiting (idle in the pool): nobody asked for them, and the next
          // request would take them for its answer (docs/gateway.md#message-framing).
          if (conn.user === null) return conn.close();
          conn.user.data(buf);
        },
        drain(socket) {
          socket.data?.flush();
        },
        close(socket, err) {
          const conn = socket.data;
          if (!conn) return fail(err?.message ?? "connection closed during the handshake");
          conn.closed = true;
          conn.user?.closed();
        },
        error(socket, err) {
          if (!socket.data) fail(err.message);
        },
        connectError(_socket, err) {
          fail((err as NodeJS.ErrnoException).code ?? err.message);
        },
      };
      if (opts.tunnel) {
        // Through the proxy: the tunnel's socket is taken over, TLS started on it in place, or used as it is.
        opts.tunnel().then(
          (raw) => {
            if (settled) return void raw.end();
            if (tls) return void raw.upgradeTLS<UpstreamConnection | null>({ data: null, tls, socket: handlers });
            const plain = raw as Socket<UpstreamConnection | null>;
            plain.data = null;
            plain.reload({ socket: handlers });
            ready(plain);
          },
          (err: Error) => fail(err.message),
        );
        return;
      }
      Bun.connect<UpstreamConnection | null>({ hostname: target.address, port: target.port, data: null, tls, socket: handlers }).catch((err: NodeJS.ErrnoException) =>
        fail(err.code ?? err.message),
      );
    });
  }

  /** Bytes of this turn, written at its end, and what the socket did not take yet (writeBatch.ts). */
  readonly #out = new OutgoingBytes(this);

  /** Writes `data` (bytes, or latin1 text) at the end of this turn; false when the caller should wait for `drain`. */
  send(data: Outgoing): boolean {
    if (this.closed) return false;
    return this.#out.add(data);
  }

  /** Bytes wait for the socket, or this turn's batch is past its high-water mark (writeBatch.ts). */
  get needsDrain(): boolean {
    return this.#out.needsDrain;
  }

  flushBatch(): void {
    if (this.closed && !this.#endWhenWritten) return this.#out.clear();
    const size = this.#out.batchBytes;
    // A batch past the high-water mark told its sender to wait: it has gone, so the sender may go on.
    if (this.#out.writeBatch(this.socket) === true && size >= BATCH_HIGH_WATER) this.user?.drain();
  }

  flush(): void {
    if (!this.#out.writeQueued(this.socket)) return;
    if (this.#endWhenWritten) return void this.socket.end();
    this.user?.drain();
  }

  /** Ends once what it owes has been written (a connection that is not reused, its last request still leaving). */
  #endWhenWritten = false;

  /**
   * Writes what this turn gathered now; true when nothing is left owing, so the next request's bytes cannot
   * land among the last one's, and an abort of the next exchange (close) cannot drop them
   * (docs/gateway.md#message-framing).
   */
  writtenOut(): boolean {
    if (this.closed) return false;
    this.#out.writeBatch(this.socket);
    return this.#out.empty;
  }

  /** Not reused: ends once the bytes it owes have gone (close() would drop them). */
  endWhenWritten(): void {
    if (this.closed) return;
    if (this.writtenOut()) return this.close();
    this.closed = true;
    this.user = null;
    this.#endWhenWritten = true;
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.user = null;
    this.#out.clear();
    this.socket.end();
  }
}
