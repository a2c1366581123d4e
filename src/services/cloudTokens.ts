// Google Cloud and Azure access tokens minted at the gateway (docs/cloud-identities.md#minting): a Google
// service account's signed JWT exchanged at the key's token_uri, an Azure app's client credentials at its
// tenant's token endpoint, through the gateway's own egress path. Used until 5 minutes before they expire and
// minted once for everyone: the gateway processes of an instance share one SharedCache entry (a worker asks the
// primary), the instances on one database the `minted_tokens` row and its lease (mintLease.ts).
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { parseGcpKey, type AzureClientSecretConfig, type GcpKey } from "../core/cloudIdentity.ts";
import type { SharedCache, SharedCaches } from "../core/sharedCache.ts";
import { KnownTokens } from "../core/knownTokens.ts";
import { azureTokenRequest, gcpTokenRequest, readTokenAnswer, TOKEN_REQUEST_HEADERS, type TokenRequest } from "../core/tokenExchange.ts";
import { gcpAssertion } from "../crypto/gcpAssertion.ts";
import { log } from "../observability/log.ts";
import { clockNow } from "../runtime/clock.ts";
import type { ServiceDeps } from "./deps.ts";
import { leasedToken, type Minted, type TokenOutcome } from "./mintLease.ts";
import type { EgressCheck } from "./notifications/index.ts";
import type { Outbound } from "./outbound.ts";

const MINT_TIMEOUT_MS = 15_000;

export type { TokenOutcome };

/**
 * What a token is minted for. The cache key says it whole, so a primary asked by a worker knows what to mint:
 * GCP per (account, key id, token endpoint, scopes), Azure per (tenant, client, scope).
 */
type Subject = { cloud: "gcp"; email: string; keyId: string; tokenUri: string; scopes: string } | { cloud: "azure"; tenantId: string; clientId: string; scope: string };

export class CloudTokens {
  readonly #cache: SharedCache<TokenOutcome>;
  /** Secret values by cache key, as the gateway last gave them (the primary mints with them). */
  readonly #values = new Map<string, string>();
  /** Every token this process has used, for the leak guard (docs/guards.md#credential-leak-guard). */
  readonly known = new KnownTokens();
  /** Parsed keys by secret value: a value is parsed once, not per request. */
  readonly #keys = new Map<string, GcpKey | null>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly outbound: Outbound,
    private readonly egress: EgressCheck,
    caches: SharedCaches,
  ) {
    this.#cache = caches.define<TokenOutcome>("cloud-token", {
      load: (key) => this.#load(key),
      failed: (reason) => ({ ok: false, reason }),
    });
  }

  /** The service-account key in a secret's value (parsed once per value). */
  gcpKey(value: string): GcpKey | null {
    let key = this.#keys.get(value);
    if (key === undefined) {
      key = parseGcpKey(value);
      if (this.#keys.size > 1000) this.#keys.clear();
      this.#keys.set(value, key);
    }
    return key;
  }

  /** The cache key of a Google service account's tokens for `scopes` (space-separated). */
  gcpKeyFor(key: GcpKey, scopes: string): string {
    return JSON.stringify(["gcp", key.clientEmail, key.privateKeyId, key.tokenUri, scopes]);
  }

  azureKeyFor(cfg: AzureClientSecretConfig, scope: string): string {
    return JSON.stringify(["azure", cfg.tenantId, cfg.clientId, scope]);
  }

  /** The token while the cache holds it (synchronous: the hot path needs no promise on a hit). */
  peek(cacheKey: string): TokenOutcome | undefined {
    return this.#cache.peek(cacheKey)?.value;
  }

  /** The token: cached, or being minted (once, for every process and instance) with the secret's `value`. */
  token(cacheKey: string, value: string): Promise<TokenOutcome> {
    this.#values.set(cacheKey, value);
    return this.#cache.get(cacheKey).then((entry) => {
      if (entry.value.ok) this.known.add(entry.value.token, cacheKey.startsWith('["gcp"') ? "gcp" : "azure");
      return entry.value;
    });
  }

  async #load(cacheKey: string): Promise<{ value: TokenOutcome; ttlMs: number }> {
    const subject = subjectOf(cacheKey);
    if (subject === null) return { value: { ok: false, reason: "not a cloud token key" }, ttlMs: 0 };
    const value = this.#values.get(cacheKey) ?? (await this.#valueFromStore(subject));
    if (value === null) return { value: { ok: false, reason: "no secret holds this identity's key" }, ttlMs: 0 };
    const rowKey = `cloud:${createHash("sha256").update(cacheKey).digest("hex").slice(0, 40)}`;
    return leasedToken(this.deps, rowKey, () => this.#mint(subject, value));
  }

  /** A primary asked by a worker has not seen the value: the newest secret for this identity holds it. */
  async #valueFromStore(subject: Subject): Promise<string | null> {
    const { secrets } = this.deps.store.t;
    const rows = await this.deps.store.db.select().from(secrets).where(eq(secrets.type, "generic"));
    const sorted = rows.filter((r) => r.valueSealed !== null).sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1));
    for (const row of sorted) {
      const cfg = row.injectionConfig;
      if (subject.cloud === "azure") {
        const az = cfg?.azureClientSecret;
        if (az && az.tenantId === subject.tenantId && az.clientId === subject.clientId) return this.deps.sealer.open(row.valueSealed!);
      } else if (cfg?.gcpServiceAccount) {
        const value = this.deps.sealer.open(row.valueSealed!);
        const key = parseGcpKey(value);
        if (key && key.clientEmail === subject.email && key.privateKeyId === subject.keyId && key.tokenUri === subject.tokenUri) return value;
      }
    }
    return null;
  }

  async #mint(subject: Subject, value: string): Promise<Minted> {
    const who = subject.cloud === "gcp" ? { account: subject.email } : { tenantId: subject.tenantId, clientId: subject.clientId };
    try {
      let request: TokenRequest;
      if (subject.cloud === "gcp") {
        const key = parseGcpKey(value);
        if (key === null) return { ok: false, reason: "the stored value is not a service-account key" };
        request = gcpTokenRequest(key.tokenUri, gcpAssertion(key, subject.scopes));
      } else {
        request = azureTokenRequest(subject.tenantId, subject.clientId, value, subject.scope);
      }
      const { url, form } = request;
      const verdict = await this.egress.check(url.hostname, Number(url.port) || 443);
      if (verdict.kind !== "dial") return { ok: false, reason: verdict.kind === "denied" ? `egress denied (${verdict.address})` : verdict.reason };
      const res = await this.outbound.fetchAt(url, verdict.target, {
        method: "POST",
        headers: TOKEN_REQUEST_HEADERS,
        body: form.toString(),
        redirect: "manual",
        signal: AbortSignal.timeout(MINT_TIMEOUT_MS),
      });
      const answer = readTokenAnswer(subject.cloud === "gcp" ? "Google" : "Azure AD", res.status, await res.json().catch(() => null));
      if (!answer.ok) {
        log.warn("cloud token not minted", { cloud: subject.cloud, ...who, reason: answer.reason });
        return answer;
      }
      log.info("cloud token minted", { cloud: subject.cloud, ...who, expiresIn: answer.expiresInSeconds });
      return { ok: true, token: answer.token, expiresAt: clockNow() + answer.expiresInSeconds * 1000 };
    } catch (err) {
      log.warn("cloud token not minted", { cloud: subject.cloud, ...who, reason: (err as Error).message });
      return { ok: false, reason: (err as Error).message };
    }
  }
}

function subjectOf(cacheKey: string): Subject | null {
  try {
    const v = JSON.parse(cacheKey) as string[];
    if (v[0] === "gcp" && v.length === 5) return { cloud: "gcp", email: v[1]!, keyId: v[2]!, tokenUri: v[3]!, scopes: v[4]! };
    if (v[0] === "azure" && v.length === 4) return { cloud: "azure", tenantId: v[1]!, clientId: v[2]!, scope: v[3]! };
  } catch {}
  return null;
}
