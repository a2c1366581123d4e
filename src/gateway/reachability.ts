// The 10 s connect timeout of CONTRACT §6.14. fetch() has no connect timeout of its own, so the first
// request to a host:port (and the first after a minute) opens one TCP connection with that deadline;
// an unreachable upstream then gets 502 upstream_unreachable instead of waiting for the header timeout.
import type { Outbound } from "../services/outbound.ts";

const FRESH_MS = 60_000;
export const CONNECT_TIMEOUT_MS = 10_000;

export class Reachability {
  readonly #checked = new Map<string, number>();
  readonly #pending = new Map<string, Promise<string | null>>();

  constructor(private readonly outbound: Outbound) {}

  /** null when reachable, else the reason it is not. */
  check(host: string, port: number): string | null | Promise<string | null> {
    const key = `${host}:${port}`;
    const at = this.#checked.get(key);
    if (at !== undefined && Date.now() - at < FRESH_MS) return null;
    let p = this.#pending.get(key);
    if (!p) {
      p = this.outbound
        .connect(host, port, { tls: false, timeoutMs: CONNECT_TIMEOUT_MS })
        .then((sock) => {
          sock.destroy();
          this.#checked.set(key, Date.now());
          return null;
        })
        .catch((err: NodeJS.ErrnoException) => err.code ?? err.message)
        .finally(() => this.#pending.delete(key));
      this.#pending.set(key, p);
    }
    return p;
  }
}
