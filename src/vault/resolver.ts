// External vault values for the gateway (docs/injection.md#external-vault): `op://` references resolved
// against the 1Password Connect server, cached 60 s per reference (failures 30 s), one in-flight lookup per
// reference, 15 s per lookup. The cache is one per instance (docs/operations.md#gateway-workers-and-caches):
// the primary process looks values up and every gateway worker asks it, so a Connect outage within the cache
// lifetime is invisible whichever process serves, and Connect is asked once per reference per minute. Values
// cross to a worker only over the IPC pipe, never a file; logs name the reference and a reason code, never a value.
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { SharedCaches, type SharedCache } from "../core/sharedCache.ts";
import { connectBaseUrl, OnePasswordConnect, parseOpRef, VaultLookupError, type ConnectFetch } from "./onePasswordConnect.ts";

/** The outcome of one lookup. `reason` is a short code for logs, never a value. */
export type Lookup = { ok: true; value: string } | { ok: false; reason: string };

export const VAULT_SUCCESS_TTL_MS = 60_000;
export const VAULT_FAILURE_TTL_MS = 30_000;
export const VAULT_TIMEOUT_MS = 15_000;

export interface VaultResolverOptions {
  /** CREDGATE_OP_CONNECT_HOST and CREDGATE_OP_CONNECT_TOKEN; either unset means "not configured". */
  host: string | null;
  token: string | null;
  /** The process's outbound fetch (CREDGATE_RESOLVE, CREDGATE_UPSTREAM_CA_FILE, the upstream proxy). */
  fetch: ConnectFetch;
  /** The process's shared caches (a worker's ask the primary); a private set when not given. */
  caches?: SharedCaches;
  now?: () => number;
  timeoutMs?: number;
}

export class VaultResolver {
  readonly #cache: SharedCache<Lookup>;
  readonly #client: OnePasswordConnect | null;
  /** The answer for every reference when no usable Connect server is configured. */
  readonly #unavailable: Lookup | null;
  readonly #timeoutMs: number;

  constructor(opts: VaultResolverOptions) {
    this.#cache = (opts.caches ?? new SharedCaches()).define<Lookup>("vault", {
      load: (ref) => this.#load(ref).then((value) => ({ value, ttlMs: value.ok ? VAULT_SUCCESS_TTL_MS : VAULT_FAILURE_TTL_MS })),
      failed: () => ({ ok: false, reason: "internal_error" }),
      ...(opts.now ? { now: opts.now } : {}),
    });
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
    return this.#unavailable ?? this.#cache.peek(ref)?.value;
  }

  /** The answer for `ref`, looking it up (or asking the primary) when not cached. Never rejects. */
  resolve(ref: string): Promise<Lookup> {
    if (this.#unavailable) return Promise.resolve(this.#unavailable);
    return this.#cache.get(ref).then((entry) => entry.value);
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
