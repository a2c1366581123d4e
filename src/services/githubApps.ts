// GitHub App installation tokens (docs/injection.md#github-app): minted from the app's private key (an RS256
// JWT sent to `POST /app/installations/<id>/access_tokens`), used until 5 minutes before they expire, and minted
// once for everyone: the gateway processes of an instance share one SharedCache entry (a worker asks the
// primary), and the instances on one database share the `minted_tokens` row and its lease (mintLease.ts, as the
// cloud identities do, docs/operations.md#gateway-workers-and-caches).
import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import { eq } from "drizzle-orm";
import type { SharedCache, SharedCaches } from "../core/sharedCache.ts";
import { log } from "../observability/log.ts";
import type { ServiceDeps } from "./deps.ts";
import { leasedToken, type Minted, type TokenOutcome } from "./mintLease.ts";
import type { EgressCheck } from "./notifications/index.ts";
import type { Outbound } from "./outbound.ts";

export const GITHUB_API = "https://api.github.com";
const MINT_TIMEOUT_MS = 15_000;

export type MintedToken = TokenOutcome;

export interface GithubAppRef {
  appId: number;
  installationId: number;
}

const cacheKey = (ref: GithubAppRef) => `${ref.appId}:${ref.installationId}`;
const rowKey = (ref: GithubAppRef) => `github-app:${ref.appId}:${ref.installationId}`;
const b64url = (s: string | Buffer) => Buffer.from(s).toString("base64url");

/** The app's JWT: RS256, `iss` = app id, `iat` = now − 60 s (clock drift), `exp` = now + 9 min (GitHub allows 10). */
export function appJwt(appId: number, key: KeyObject, nowMs = Date.now()): string {
  const now = Math.floor(nowMs / 1000);
  const head = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const body = b64url(JSON.stringify({ iat: now - 60, exp: now + 540, iss: appId }));
  const signature = sign("RSA-SHA256", Buffer.from(`${head}.${body}`), key);
  return `${head}.${body}.${b64url(signature)}`;
}

export class GithubAppTokens {
  readonly #cache: SharedCache<MintedToken>;
  /** Private keys by app and installation, as the gateway last saw them (the primary mints with them). */
  readonly #keys = new Map<string, string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly outbound: Outbound,
    private readonly egress: EgressCheck,
    caches: SharedCaches,
  ) {
    this.#cache = caches.define<MintedToken>("github-app-token", {
      load: (key) => this.#load(key),
      failed: (reason) => ({ ok: false, reason }),
    });
  }

  /** The token while the cache holds it (synchronous: the hot path needs no promise on a hit). */
  peek(ref: GithubAppRef): MintedToken | undefined {
    return this.#cache.peek(cacheKey(ref))?.value;
  }

  /** The installation's token: cached, or being minted (once, for every process and instance). */
  token(ref: GithubAppRef, privateKey: string): Promise<MintedToken> {
    this.#keys.set(cacheKey(ref), privateKey);
    return this.#cache.get(cacheKey(ref)).then((entry) => entry.value);
  }

  async #load(key: string): Promise<{ value: MintedToken; ttlMs: number }> {
    const [appId, installationId] = key.split(":").map(Number) as [number, number];
    const ref = { appId, installationId };
    const pem = this.#keys.get(key) ?? (await this.#keyFromStore(ref));
    if (!pem) return { value: { ok: false, reason: "no secret holds this GitHub App's key" }, ttlMs: 0 };
    return leasedToken(this.deps, rowKey(ref), () => this.#mint(ref, pem));
  }

  /**
   * Mints a token with exactly this key, outside the cache (the secret form's test: the key, app and installation
   * work together). The token is not kept.
   */
  async check(ref: GithubAppRef, privateKey: string): Promise<{ ok: true; expiresAt: number } | { ok: false; reason: string }> {
    const minted = await this.#mint(ref, privateKey);
    return minted.ok ? { ok: true, expiresAt: minted.expiresAt } : minted;
  }

  /** A primary asked by a worker has not seen the key: the newest secret for this app and installation holds it. */
  async #keyFromStore(ref: GithubAppRef): Promise<string | null> {
    const { secrets } = this.deps.store.t;
    const rows = await this.deps.store.db.select().from(secrets).where(eq(secrets.type, "generic"));
    const row = rows
      .filter((r) => r.injectionConfig?.githubApp?.appId === ref.appId && r.injectionConfig.githubApp.installationId === ref.installationId && r.valueSealed !== null)
      .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1))[0];
    return row ? this.deps.sealer.open(row.valueSealed!) : null;
  }

  async #mint(ref: GithubAppRef, pem: string): Promise<Minted> {
    const url = new URL(`${GITHUB_API}/app/installations/${ref.installationId}/access_tokens`);
    try {
      const jwt = appJwt(ref.appId, createPrivateKey(pem));
      const verdict = await this.egress.check(url.hostname, 443);
      if (verdict.kind !== "dial") return { ok: false, reason: verdict.kind === "denied" ? `egress denied (${verdict.address})` : verdict.reason };
      const res = await this.outbound.fetchAt(url, verdict.target, {
        method: "POST",
        headers: { authorization: `Bearer ${jwt}`, accept: "application/vnd.github+json", "x-github-api-version": "2022-11-28", "user-agent": "credgate" },
        redirect: "manual",
        signal: AbortSignal.timeout(MINT_TIMEOUT_MS),
      });
      const body = (await res.json().catch(() => null)) as { token?: unknown; expires_at?: unknown; message?: unknown } | null;
      if (res.status !== 201 || typeof body?.token !== "string" || typeof body.expires_at !== "string") {
        const reason = `GitHub answered ${res.status}${typeof body?.message === "string" ? `: ${body.message}` : ""}`;
        log.warn("github app token not minted", { appId: ref.appId, installationId: ref.installationId, reason });
        return { ok: false, reason };
      }
      const expiresAt = Date.parse(body.expires_at);
      if (!Number.isFinite(expiresAt)) return { ok: false, reason: "GitHub answered without a valid expires_at" };
      log.info("github app token minted", { appId: ref.appId, installationId: ref.installationId, expiresAt: body.expires_at });
      return { ok: true, token: body.token, expiresAt };
    } catch (err) {
      log.warn("github app token not minted", { appId: ref.appId, installationId: ref.installationId, reason: (err as Error).message });
      return { ok: false, reason: (err as Error).message };
    }
  }
}
