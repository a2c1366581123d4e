// Idle upstream connections kept per (scheme, dialled address, port, TLS name): an agent's next request to
// the same upstream skips the TCP and TLS handshakes. A connection is only pooled after a complete exchange
// on a keep-alive response, and dropped after a while idle (before most servers drop it themselves). The key holds
// the dialled address, so a connection only ever serves requests whose current DNS answer names its address
// (docs/operations.md#dns); under an upstream proxy it is a tunnel to that address (docs/operations.md#upstream-proxy).
import type { DialTarget, Outbound } from "../../services/outbound.ts";
import { H2Origin } from "./h2Origin.ts";
import { CONNECT_TIMEOUT_MS, UpstreamConnection } from "./originConnection.ts";

const IDLE_MS = 4_000;
const MAX_IDLE_PER_KEY = 64;
const MAX_H1_KEYS = 10_000;

/** An HTTP/1.1 connection of the request's own, or a stream's place on a shared h2 connection. */
export type Acquired = { conn: UpstreamConnection; h2: null; reused: boolean; key: string } | { conn: null; h2: H2Origin; reused: boolean; key: string };

/** Each target's pool key, per scheme: a fixed egress verdict hands out the same target object every request. */
const poolKeys = { https: new WeakMap<DialTarget, string>(), http: new WeakMap<DialTarget, string>() };

function poolKey(scheme: "https" | "http", target: DialTarget): string {
  let key = poolKeys[scheme].get(target);
  if (key === undefined) poolKeys[scheme].set(target, (key = `${scheme}|${target.address}|${target.port}|${target.host}`));
  return key;
}

export class UpstreamPool {
  readonly #idle = new Map<string, UpstreamConnection[]>();
  /** h2 origins per key: each multiplexes many requests (docs/gateway.md#http2-and-grpc). */
  readonly #h2 = new Map<string, H2Origin[]>();
  /**
   * A dial in flight to a key not known to speak HTTP/1.1: requests that come meanwhile wait for it, since an h2
   * origin serves them all on that one connection.
   */
  readonly #dialing = new Map<string, Promise<UpstreamConnection>>();
  /** Keys whose origin chose HTTP/1.1: their dials are never shared. */
  readonly #h1Keys = new Set<string>();
  readonly #sweeper: ReturnType<typeof setInterval>;

  constructor(private readonly outbound: Outbound) {
    this.#sweeper = setInterval(() => this.#sweep(), IDLE_MS);
    this.#sweeper.unref();
  }

  /**
   * An idle connection to the target (an address the egress guard approved), at once, or a new one once dialled;
   * `reused` tells which.
   */
  acquire(scheme: "https" | "http", target: DialTarget): Acquired | Promise<Acquired> {
    const key = poolKey(scheme, target);
    const idle = this.#idle.get(key);
    while (idle && idle.length > 0) {
      const conn = idle.pop()!;
      if (!conn.closed && performance.now() - conn.idleSince < IDLE_MS) return { conn, h2: null, reused: true, key };
      conn.close();
    }
    if (this.#h2.size > 0) {
      const origin = this.#h2Origin(key);
      if (origin) return { conn: null, h2: origin, reused: true, key };
    }
    const shared = this.#dialing.get(key);
    if (shared) return shared.then(() => this.#afterSharedDial(scheme, target, key));
    const dial = this.#dial(scheme, target);
    // An origin may change its mind (an HTTP/1.1 one upgraded to h2): every fresh connection goes by its own ALPN.
    if (scheme === "http" || this.#h1Keys.has(key)) return dial.then((conn) => this.#dialled(key, conn));
    this.#dialing.set(key, dial);
    const done = () => this.#dialing.delete(key);
    dial.then(done, done);
    return dial.then((conn) => this.#dialled(key, conn));
  }

  #dial(scheme: "https" | "http", target: DialTarget): Promise<UpstreamConnection> {
    const proxy = this.outbound.proxyFor(target);
    const tunnel = proxy ? () => this.outbound.openTunnel(proxy, target, CONNECT_TIMEOUT_MS) : null;
    return UpstreamConnection.dial({ target, tls: scheme === "https", ca: this.outbound.ca, tunnel });
  }

  /** A fresh connection: an h2 one is pooled at once (others will share it), an HTTP/1.1 one is the caller's. */
  #dialled(key: string, conn: UpstreamConnection): Acquired {
    if (!conn.h2) {
      // Only a hint (which dials to share): forgotten wholesale rather than growing with every origin ever seen.
      if (this.#h1Keys.size >= MAX_H1_KEYS) this.#h1Keys.clear();
      this.#h1Keys.add(key);
      return { conn, h2: null, reused: false, key };
    }
    this.#h1Keys.delete(key);
    const origin = new H2Origin(conn, (gone) => this.#forget(key, gone));
    let list = this.#h2.get(key);
    if (!list) this.#h2.set(key, (list = []));
    list.push(origin);
    return { conn: null, h2: origin, reused: false, key };
  }

  /** A request that waited for another's dial: a place on the h2 origin it opened, or a dial of its own. */
  #afterSharedDial(scheme: "https" | "http", target: DialTarget, key: string): Acquired | Promise<Acquired> {
    const origin = this.#h2Origin(key);
    if (origin) return { conn: null, h2: origin, reused: false, key };
    return this.acquire(scheme, target);
  }

  /** An h2 origin of this key that takes a new stream now. */
  #h2Origin(key: string): H2Origin | null {
    const list = this.#h2.get(key);
    if (list) for (const origin of list) if (origin.available) return origin;
    return null;
  }

  #forget(key: string, origin: H2Origin): void {
    const list = this.#h2.get(key);
    const i = list?.indexOf(origin) ?? -1;
    if (i < 0) return;
    list!.splice(i, 1);
    if (list!.length === 0) this.#h2.delete(key);
  }

  release(key: string, conn: UpstreamConnection): void {
    if (conn.closed) return;
    // The last request's bytes leave before anyone else's can follow them; still owing, it is not reused.
    if (!conn.writtenOut()) return conn.endWhenWritten();
    let idle = this.#idle.get(key);
    if (!idle) this.#idle.set(key, (idle = []));
    if (idle.length >= MAX_IDLE_PER_KEY) return conn.close();
    conn.user = null;
    // A body the agent read slowly may have left it paused; idle, it must notice the upstream closing.
    conn.resume();
    conn.idleSince = performance.now();
    idle.push(conn);
  }

  #sweep(): void {
    const now = performance.now();
    for (const [key, idle] of this.#idle) {
      const keep = idle.filter((c) => !c.closed && now - c.idleSince < IDLE_MS);
      for (const c of idle) if (!keep.includes(c)) c.close();
      if (keep.length === 0) this.#idle.delete(key);
      else this.#idle.set(key, keep);
    }
    for (const list of this.#h2.values()) {
      for (const origin of [...list]) if (origin.session.activeStreams === 0 && now - origin.idleSince >= IDLE_MS) origin.close();
    }
  }

  close(): void {
    clearInterval(this.#sweeper);
    for (const idle of this.#idle.values()) for (const c of idle) c.close();
    this.#idle.clear();
    for (const list of [...this.#h2.values()]) for (const origin of [...list]) origin.close();
  }
}
