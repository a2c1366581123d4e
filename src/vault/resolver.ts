// Values that live outside credgate, for the gateway (docs/injection.md#external-vault, docs/injection.md#secret-stores):
// `op://` references resolved against the 1Password Connect server (cached 60 s, failures 30 s), and secret store
// references (`vault://`, `aws-sm://`, `cmd://`…) read from the configured stores (cached
// CREDGATE_STORE_CACHE_SECONDS, failures STORE_FAILURE_TTL_MS at most). One resolver per process (services.stores),
// one in-flight lookup per reference, a timeout per lookup. The cache is one per instance
// (docs/operations.md#gateway-workers-and-caches): the primary process looks values up and every gateway worker
// asks it, so a store outage within the cache lifetime is invisible whichever process serves, and a store is
// asked once per reference per lifetime. Values cross to a worker only over the IPC pipe, never a file; logs name
// the reference and a reason code, never a value nor the store's answer.
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { SharedCaches, type SharedCache } from "../core/sharedCache.ts";
import { KnownValues } from "../core/knownValues.ts";
import { notConfiguredMessage, parseStoreRef, type StoreKind, type StoreRef } from "../core/storeRefs.ts";
import { connectBaseUrl, OnePasswordConnect, parseOpRef, VaultLookupError, type ConnectFetch } from "./onePasswordConnect.ts";
import { StoreError, type SecretStore } from "./stores/types.ts";

/** The outcome of one lookup. `reason` is a short code for logs, never a value. */
export type Lookup = { ok: true; value: string } | { ok: false; reason: string };

export const VAULT_SUCCESS_TTL_MS = 60_000;
export const VAULT_FAILURE_TTL_MS = 30_000;
export const VAULT_TIMEOUT_MS = 15_000;
/** A failed store read is remembered this long (or the value lifetime, when shorter): a recovered store is seen soon. */
export const STORE_FAILURE_TTL_MS = 5_000;

export interface VaultResolverOptions {
  /** CREDGATE_OP_CONNECT_HOST and CREDGATE_OP_CONNECT_TOKEN; either unset means "not configured". */
  host: string | null;
  token: string | null;
  /** The process's outbound fetch (CREDGATE_RESOLVE, CREDGATE_UPSTREAM_CA_FILE, the upstream proxy). */
  fetch: ConnectFetch;
  /** The configured secret stores by scheme (stores/index.ts); none when not given. */
  stores?: Map<StoreKind, SecretStore>;
  /** CREDGATE_STORE_CACHE_SECONDS. */
  storeCacheSeconds?: number;
  /** The names of CREDGATE_SECRET_COMMANDS (a `cmd://` reference's store is configured per name). */
  commands?: Record<string, string[]> | null;
  /** The process's shared caches (a worker's ask the primary); a private set when not given. */
  caches?: SharedCaches;
  now?: () => number;
  timeoutMs?: number;
}

/** A test read's answer (POST /v1/secrets/{id}/test): a sentence, never the value. */
export interface StoreTestResult {
  ok: boolean;
  message: string;
}

export class VaultResolver {
  readonly #cache: SharedCache<Lookup>;
  readonly #client: OnePasswordConnect | null;
  /** The answer for every op:// reference when no usable Connect server is configured. */
  readonly #unavailable: Lookup | null;
  readonly #timeoutMs: number;
  readonly #stores: Map<StoreKind, SecretStore>;
  readonly #commands: Record<string, string[]> | null;
  readonly #storeTtlMs: number;
  /** Every value this process has seen, for the leak guard (docs/guards.md#credential-leak-guard). */
  readonly known = new KnownValues();

  constructor(opts: VaultResolverOptions) {
    this.#stores = opts.stores ?? new Map();
    this.#commands = opts.commands ?? null;
    this.#storeTtlMs = (opts.storeCacheSeconds ?? 60) * 1000;
    this.#cache = (opts.caches ?? new SharedCaches()).define<Lookup>("vault", {
      load: (ref) => this.#load(ref).then((value) => ({ value, ttlMs: this.#ttlOf(ref, value) })),
      failed: () => ({ ok: false, reason: "internal_error" }),
      ...(opts.now ? { now: opts.now } : {}),
    });
    this.#timeoutMs = opts.timeoutMs ?? VAULT_TIMEOUT_MS;
    const base = opts.host === null ? null : connectBaseUrl(opts.host);
    if (opts.host !== null && base === null) log.warn("CREDGATE_OP_CONNECT_HOST is not a usable http(s) URL; external vault secrets are unavailable");
    if (opts.host !== null && opts.token === null) log.warn("CREDGATE_OP_CONNECT_TOKEN is not set; external vault secrets are unavailable");
    this.#client = base !== null && opts.token !== null ? new OnePasswordConnect(base, opts.token, opts.fetch) : null;
    this.#unavailable = this.#client === null ? { ok: false, reason: "not_configured" } : null;
    // The leak guard asks for values another process of the instance read (docs/guards.md#credential-leak-guard).
    this.known.loader = (ref) => this.resolve(ref);
  }

  get configured(): boolean {
    return this.#client !== null;
  }

  /** The 400 message when `ref`'s store is not configured here (services/secrets.ts), else null. */
  unavailable(ref: StoreRef): string | null {
    if (ref.kind === "cmd") return this.#commands !== null && Object.hasOwn(this.#commands, ref.name) ? null : notConfiguredMessage(ref);
    return this.#stores.has(ref.kind) ? null : notConfiguredMessage(ref);
  }

  /** The known answer for `ref` (fresh cache entry, or "not configured"), synchronously; undefined when a lookup is needed. */
  peek(ref: string): Lookup | undefined {
    const hit = this.#cache.peek(ref);
    if (hit !== undefined) return hit.value;
    return this.#unavailable !== null && ref.startsWith("op://") ? this.#unavailable : undefined;
  }

  /** The answer for `ref`, looking it up (or asking the primary) when not cached. Never rejects. */
  resolve(ref: string): Promise<Lookup> {
    if (this.#unavailable !== null && ref.startsWith("op://")) return Promise.resolve(this.#unavailable);
    return this.#cache.get(ref).then((entry) => {
      if (entry.value.ok) this.known.add(ref, entry.value.value);
      return entry.value;
    });
  }

  /** One read of a store reference, bypassing the cache (the secret form's Test): whether it worked, never the value. */
  async test(storeRef: string): Promise<StoreTestResult> {
    const parsed = parseStoreRef(storeRef);
    if (typeof parsed === "string") return { ok: false, message: parsed };
    const missing = this.unavailable(parsed);
    if (missing !== null) return { ok: false, message: missing };
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const value = await this.#stores.get(parsed.kind)!.read(parsed, signal);
      return value === "" ? { ok: false, message: "The store answered an empty value." } : { ok: true, message: `Read a value of ${value.length} characters from the store.` };
    } catch (err) {
      if (err instanceof StoreError) return { ok: false, message: err.message };
      if (signal.aborted) return { ok: false, message: `The store did not answer within ${this.#timeoutMs / 1000} s.` };
      return { ok: false, message: "The store could not be reached." };
    }
  }

  /** Stops the stores' timers and revokes what they hold (at shutdown). */
  async close(): Promise<void> {
    const seen = new Set<SecretStore>();
    for (const store of this.#stores.values()) {
      if (seen.has(store)) continue;
      seen.add(store);
      await store.close?.().catch((err: Error) => log.warn("secret store did not close cleanly", { error: err.message }));
    }
  }

  #ttlOf(ref: string, value: Lookup): number {
    if (ref.startsWith("op://")) return value.ok ? VAULT_SUCCESS_TTL_MS : VAULT_FAILURE_TTL_MS;
    return value.ok ? this.#storeTtlMs : Math.min(STORE_FAILURE_TTL_MS, this.#storeTtlMs);
  }

  async #load(ref: string): Promise<Lookup> {
    const found = ref.startsWith("op://") ? await this.#loadOp(ref) : await this.#loadStore(ref);
    if (found.ok) this.known.add(ref, found.value);
    return found;
  }

  async #loadStore(ref: string): Promise<Lookup> {
    const parsed = parseStoreRef(ref);
    if (typeof parsed === "string") return this.#storeFailed(ref, "invalid_reference");
    if (this.unavailable(parsed) !== null) return this.#storeFailed(ref, "not_configured");
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const value = await this.#stores.get(parsed.kind)!.read(parsed, signal);
      if (value === "") return this.#storeFailed(ref, "empty_value");
      log.info("secret store reference resolved", { storeRef: ref });
      return { ok: true, value };
    } catch (err) {
      if (err instanceof StoreError) return this.#storeFailed(ref, err.reason);
      if (signal.aborted) return this.#storeFailed(ref, "timeout");
      // The error's text could quote the store's answer: only its kind is logged.
      return this.#storeFailed(ref, "unreachable", (err as Error).name);
    }
  }

  async #loadOp(ref: string): Promise<Lookup> {
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

  #storeFailed(ref: string, reason: string, error?: string): Lookup {
    metrics.vaultErrors.inc({ reason });
    log.warn("secret store read failed", { storeRef: ref, reason, ...(error ? { error } : {}) });
    return { ok: false, reason };
  }

  #failed(ref: string, reason: string, error?: string): Lookup {
    metrics.vaultErrors.inc({ reason });
    log.warn("external vault lookup failed", { opRef: ref, reason, ...(error ? { error } : {}) });
    return { ok: false, reason };
  }
}
