// One HTTP/2 connection to an origin that chose h2 by ALPN (docs/gateway.md#http2-and-grpc): the pooled
// connection's bytes feed a client-role session, and every request is one stream on it, many at once up to the
// origin's SETTINGS_MAX_CONCURRENT_STREAMS. The pool keeps it while it takes new streams and drops it after a
// while without any (or at once when the origin sends GOAWAY or closes it).
import { H2Session, type H2Transport } from "../h2/session.ts";
import type { ConnectionUser, UpstreamConnection } from "./originConnection.ts";

export class H2Origin implements ConnectionUser, H2Transport {
  readonly session: H2Session;
  /** When its last stream closed (for the pool's idle limit); 0 while streams are open. */
  idleSince = 0;

  constructor(
    private readonly conn: UpstreamConnection,
    onGone: (origin: H2Origin) => void,
  ) {
    conn.user = this;
    this.session = new H2Session("client", this, {
      streamClosed: () => {
        if (this.session.activeStreams === 0) this.idleSince = performance.now();
      },
      goaway: () => onGone(this),
      closed: () => onGone(this),
    });
    this.idleSince = performance.now();
  }

  /** Whether a request may open a stream on it now. */
  get available(): boolean {
    return !this.conn.closed && this.session.canOpen;
  }

  // --- ConnectionUser: the origin's bytes ---

  data(buf: Buffer): void {
    this.session.receive(buf);
  }

  drain(): void {
    this.session.drained();
  }

  closed(): void {
    this.session.transportClosed();
  }

  // --- H2Transport: the session's bytes ---

  write(data: Uint8Array): void {
    this.conn.send(data);
  }

  get needsDrain(): boolean {
    return this.conn.needsDrain;
  }

  end(): void {
    this.conn.close();
  }

  destroy(): void {
    this.conn.close();
  }

  /** Ends it: GOAWAY when idle (the origin sees a clean close), the connection closed once open streams finish. */
  close(): void {
    this.session.goaway();
  }
}
