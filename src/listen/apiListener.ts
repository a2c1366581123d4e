// The API port's listener. Plain HTTP is one Bun.serve. With TLS (docs/operations.md#tls) a renewed certificate must apply
// without a restart, and Bun.serve cannot swap its certificate (`reload()` ignores `tls`): so the port is
// held with SO_REUSEPORT, a listener with the new certificate is opened beside the old one, and the old one
// stops accepting and finishes what it has. An exclusive bind first makes a port already in use (by another
// credgate too) fail as it does without TLS.
import type { Server } from "bun";
import type { TlsPair } from "./apiCertificate.ts";

export type ApiHandler = (req: Request, server: Server<undefined>) => Response | Promise<Response>;

export class ApiListener {
  #current: Server<undefined>;
  readonly #retiring = new Set<Server<undefined>>();

  private constructor(
    first: Server<undefined>,
    private readonly open: (port: number, tls: TlsPair) => Server<undefined>,
  ) {
    this.#current = first;
  }

  static listen(hostname: string, port: number, handler: ApiHandler, tls: TlsPair | null): ApiListener {
    // idleTimeout: long-polls (approvals) hold a request open for up to a minute.
    const options = { hostname, idleTimeout: 255, fetch: handler };
    if (!tls) return new ApiListener(Bun.serve({ ...options, port, reusePort: false }), () => {
      throw new Error("a plain HTTP listener has no certificate");
    });
    const probe = Bun.serve({ ...options, port, reusePort: false });
    const bound = probe.port!;
    probe.stop(true);
    const open = (p: number, pair: TlsPair) => Bun.serve({ ...options, port: p, reusePort: true, tls: pair });
    return new ApiListener(open(bound, tls), open);
  }

  get port(): number {
    return this.#current.port!;
  }

  /** New connections get `pair`; connections already open keep theirs until they end. */
  useCertificate(pair: TlsPair): void {
    const old = this.#current;
    this.#current = this.open(old.port!, pair);
    this.#retiring.add(old);
    void old.stop().finally(() => this.#retiring.delete(old));
  }

  /** Stops accepting; resolves when the requests in flight have been answered. */
  async stop(force = false): Promise<void> {
    await Promise.all([this.#current, ...this.#retiring].map((server) => server.stop(force)));
  }
}
