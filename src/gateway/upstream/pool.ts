// Idle upstream connections kept per (scheme, dialled address, port, TLS name): an agent's next request to
// the same upstream skips the TCP and TLS handshakes. A connection is only pooled after a complete exchange
// on a keep-alive response, and dropped after a while idle (before most servers drop it themselves). The key holds
// the dialled address, so a connection only ever serves requests whose current DNS answer names its address
// (docs/operations.md#dns); under an upstream proxy it is a tunnel to that address (docs/operations.md#upstream-proxy).
import type { DialTarget, Outbound } from "../../services/outbound.ts";
import { CONNECT_TIMEOUT_MS, UpstreamConnection } from "./originConnection.ts";

const IDLE_MS = 4_000;
const MAX_IDLE_PER_KEY = 64;

export interface Acquired {
  conn: UpstreamConnection;
  reused: boolean;
  key: string;
}

/** Each target's pool key, per scheme: a fixed egress verdict hands out the same target object every request. */
const poolKeys = { https: new WeakMap<DialTarget, string>(), http: new WeakMap<DialTarget, string>() };

function poolKey(scheme: "https" | "http", target: DialTarget): string {
  let key = poolKeys[scheme].get(target);
  if (key === undefined) poolKeys[scheme].set(target, (key = `${scheme}|${target.address}|${target.port}|${target.host}`));
  return key;
}

export class UpstreamPool {
  readonly #idle = new Map<string, UpstreamConnection[]>();
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
      if (!conn.closed && performance.now() - conn.idleSince < IDLE_MS) return { conn, reused: true, key };
      conn.close();
    }
    const proxy = this.outbound.proxyFor(target);
    const tunnel = proxy ? () => this.outbound.openTunnel(proxy, target, CONNECT_TIMEOUT_MS) : null;
    return UpstreamConnection.dial({ target, tls: scheme === "https", ca: this.outbound.ca, tunnel }).then((conn) => ({ conn, reused: false, key }));
  }

  release(key: string, conn: UpstreamConnection): void {
    if (conn.closed) return;
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
  }

  close(): void {
    clearInterval(this.#sweeper);
    for (const idle of this.#idle.values()) for (const c of idle) c.close();
    this.#idle.clear();
  }
}
