// The seam every secret store implements (docs/injection.md#secret-stores): one read of one reference, no
// caching (the resolver caches, single-flight, across the instance's processes).
import type { StoreRef } from "../../core/storeRefs.ts";
import type { Config } from "../../runtime/config.ts";

/**
 * An egress-checked fetch through credgate's outbound path (CREDGATE_RESOLVE / CONNECT_TO / UPSTREAM_CA_FILE,
 * the upstream proxy, the egress guard: a denied address rejects with StoreError("egress_denied")).
 */
export type StoreFetch = (url: URL, init: RequestInit & { signal: AbortSignal }) => Promise<Response>;

/**
 * A failed read. `reason` is a short code for logs and metrics; `message` is a sentence for
 * POST /v1/secrets/{id}/test — neither ever holds a value, a token or the store's answer body.
 */
export class StoreError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    /** For `unreachable`: what the outbound path knows of why (the upstream proxy's refusal), for the store's own sentence. */
    readonly why?: string,
  ) {
    super(message);
    this.name = "StoreError";
  }
}

export interface SecretStore {
  /** One read of one reference (no caching here: the resolver caches). */
  read(ref: StoreRef, signal: AbortSignal): Promise<string>;
  /**
   * One test of a reference (POST /v1/secrets/{id}/test) when a read's value says nothing useful — a lease's user
   * name is not a value: the sentence saying what happened, never a value or a password. Without it, a test is a read.
   */
  test?(ref: StoreRef, signal: AbortSignal): Promise<string | null>;
  /** Stops timers (token renewal) and revokes what it holds; called once at shutdown. */
  close?(): Promise<void>;
}

export interface StoreContext {
  config: Config;
  fetch: StoreFetch;
  now: () => number;
}

/** A store module's factory: null when its settings are absent (the API then answers `<store> is not configured`). */
export type StoreFactory = (ctx: StoreContext) => SecretStore | null;
