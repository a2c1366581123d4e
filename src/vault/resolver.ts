// External vault values for the gateway (docs/injection.md#external-vault): `op://` references resolved
// against the 1Password Connect server, cached 60 s per reference (failures 30 s), one in-flight lookup per
// reference, 15 s per lookup. Logs name the reference and a reason code, never a value.
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { LookupCache, type Lookup } from "./cache.ts";
import { connectBaseUrl, OnePasswordConnect, parseOpRef, VaultLookupError, type ConnectFetch } from "./onePasswordConnect.ts";

export type { Lookup } from "./cache.ts";

export const VAULT_SUCCESS_TTL_MS = 60_000;
export const VAULT_FAILURE_TTL_MS = 30_000;
export const VAULT_TIMEOUT_MS = 15_000;

export interface VaultResolverOptions {
  /** CREDGATE_OP_CONNECT_HOST and CREDGATE_OP_CONNECT_TOKEN; either unset means "not configured". */
  host: string | null;
  token: string | null;
  /** The process's outbound fetch (CREDGATE_RESOLVE, CREDGATE_UPSTREAM_CA_FILE). */
  fetch: ConnectFetch;
  now?: () => number;
  timeoutMs?: number;
}

export class VaultResolver {
  readonly #cache: LookupCache;
  readonly #client: OnePasswordConnect | null;
  /** The answer for every reference when no usable Connect server is configured. */
  readonly #unavailable: Lookup | null;
  readonly #timeoutMs: number;

  constructor(opts: VaultResolverOptions) {
    this.#cache = new LookupCache({ successTtlMs: VAULT_SUCCESS_TTL_MS, failureTtlMs: VAULT_FAILURE_TTL_MS, ...(opts.now ? { now: opts.now } : {}) });
    this.#timeoutMs = opts.timeoutMs ?? VAULT_TIMEOUT_MS;
    const base = opts.host === null ? null : connectBaseUrl(opts.host);
    if (opts.host !== null && base === null) log.warn("CREDGATE_OP_CONNECT_HOST is not a usable http(s) URL; external vault secrets are unavailable");
    if (opts.host !== null && opts.token === null) log.warn("CREDGATE_OP_CONNECT_TOKEN is not set; external vault secrets are unavailable");
    this.#client = base !== null && opts.token !== null ? new OnePasswordConnect(base, opts.token, opts.fetch) : null;
    this.#unavailable = this.#client === null ? { ok: false, reason: "not_configured" } : null;
  }

  get configured(): boolean {
    return this.#client !== null;
  }

  /** The known answer for `ref` (fresh cache entry, or "not configured"), synchronously; undefined when a lookup is needed. */
  peek(ref: string): Lookup | undefined {
    return this.#unavailable ?? this.#cache.peek(ref);
  }

  /** The answer for `ref`, looking it up when not cached. Never rejects. */
  resolve(ref: string): Promise<Lookup> {
    if (this.#unavailable) return Promise.resolve(this.#unavailable);
    return this.#cache.get(ref, () => this.#load(ref));
  }

  async #load(ref: string): Promise<Lookup> {
    const parsed = parseOpRef(ref);
    if (parsed === null) return this.#failed(ref, "invalid_reference");
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const value = await this.#client!.read(parsed, signal);
      log.info("external vault reference resolved", { opRef: ref });
      return { ok: true, value };
    } catch (err) {
      if (err instanceof VaultLookupError) return this.#failed(ref, err.reason);
      if (signal.aborted) return this.#failed(ref, "timeout");
      return this.#failed(ref, "unreachable", (err as Error).message);
    }
  }

  #failed(ref: string, reason: string, error?: string): Lookup {
    metrics.vaultErrors.inc({ reason });
    log.warn("external vault lookup failed", { opRef: ref, reason, ...(error ? { error } : {}) });
    return { ok: false, reason };
  }
}
