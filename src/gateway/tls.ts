// Leaf certificates for intercepted hosts: one certificate and key per hostname, cached (bounded, least
// recently used out first) and reissued when less than an hour of validity remains. They are kept as PEM,
// which is what Bun's native TLS (upgradeTLS) takes; node:tls, for the rare TLS inside TLS, takes it too.
import type { CertificateAuthority } from "../crypto/ca.ts";

export interface LeafPem {
  cert: string;
  key: string;
}

interface Entry {
  context: LeafPem;
  renewAt: number;
}

const RENEW_BEFORE_MS = 3600 * 1000;

export class LeafCache {
  readonly #ready = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<LeafPem>>();

  constructor(
    private readonly ca: CertificateAuthority,
    private readonly max = 2000,
  ) {}

  /** The context for `host` (lowercase, no port, no brackets); synchronous when cached. */
  get(host: string): LeafPem | Promise<LeafPem> {
    const hit = this.#ready.get(host);
    if (hit && hit.renewAt > Date.now()) {
      this.#ready.delete(host);
      this.#ready.set(host, hit);
      return hit.context;
    }
    let pending = this.#pending.get(host);
    if (!pending) {
      pending = this.#issue(host).finally(() => this.#pending.delete(host));
      this.#pending.set(host, pending);
    }
    return pending;
  }

  async #issue(host: string): Promise<LeafPem> {
    const leaf = await this.ca.issueLeaf(host);
    const context = { key: leaf.keyPem, cert: leaf.certPem };
    this.#ready.delete(host);
    this.#ready.set(host, { context, renewAt: leaf.notAfter.getTime() - RENEW_BEFORE_MS });
    if (this.#ready.size > this.max) this.#ready.delete(this.#ready.keys().next().value!);
    return context;
  }
}

/** credgate's own leaf for a list of names (the HTTPS proxy, docs/gateway.md#listener), reissued when under an hour remains. */
export class SelfLeaf {
  #entry: Entry | null = null;
  #pending: Promise<LeafPem> | null = null;

  constructor(
    private readonly ca: CertificateAuthority,
    private readonly names: string[],
  ) {}

  context(): LeafPem | Promise<LeafPem> {
    if (this.#entry && this.#entry.renewAt > Date.now()) return this.#entry.context;
    this.#pending ??= this.ca
      .issueLeaf(this.names)
      .then((leaf) => {
        const context = { key: leaf.keyPem, cert: leaf.certPem };
        this.#entry = { context, renewAt: leaf.notAfter.getTime() - RENEW_BEFORE_MS };
        return context;
      })
      .finally(() => (this.#pending = null));
    return this.#pending;
  }
}
