// GitHub App installation tokens (docs/injection.md#github-app): minted from the app's private key (an RS256
// JWT sent to `POST /app/installations/<id>/access_tokens`), used until 5 minutes before they expire, and minted
// once for everyone: the gateway processes of an instance share one SharedCache entry (a worker asks the
// primary), and the instances on one database share the `minted_tokens` row — the token, sealed, and a lease that
// only one process at a time can take to mint (the same conditional-write idea as the OAuth refresh's
// compare-and-swap, docs/operations.md#gateway-workers-and-caches).
import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { SharedCache, SharedCaches } from "../core/sharedCache.ts";
import { nowIso } from "../core/ids.ts";
import { log } from "../observability/log.ts";
import { clockNow } from "../runtime/clock.ts";
import type { ServiceDeps } from "./deps.ts";
import type { EgressCheck } from "./notifications/index.ts";
import type { Outbound } from "./outbound.ts";

export const GITHUB_API = "https://api.github.com";
/** A token is used until this long before its expiry (docs/injection.md#github-app). */
export const EXPIRY_MARGIN_MS = 5 * 60 * 1000;
/** How long a process may hold the mint lease; a crashed minter's lease lapses after it. */
const LEASE_MS = 30_000;
/** How often a process waiting on another's mint looks at the row again. */
const POLL_MS = 200;
const MINT_TIMEOUT_MS = 15_000;
/** A failed mint is not retried for this long (every request meanwhile gets 502 at once rather than another mint). */
const FAILURE_TTL_MS = 5_000;
/** How long a caller waits in all (another instance minting, then its own attempt). */
const WAIT_MS = 45_000;

export type MintedToken = { ok: true; token: string } | { ok: false; reason: string };

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    const t = this.deps.store.t.mintedTokens;
    const db = this.deps.store.db;
    const id = rowKey(ref);
    const owner = `${this.deps.instanceId}:${process.pid}`;
    const deadline = Date.now() + WAIT_MS;
    while (Date.now() < deadline) {
      const [row] = await db.select().from(t).where(eq(t.key, id)).limit(1);
      const fresh = row?.tokenSealed && row.expiresAt !== null ? row.expiresAt - EXPIRY_MARGIN_MS - clockNow() : 0;
      if (row?.tokenSealed && fresh > 0) return { value: { ok: true, token: this.deps.sealer.open(row.tokenSealed) }, ttlMs: fresh };
      // Take the lease: create the row holding it, or take it over when nobody holds it (or a holder's lapsed).
      const now = Date.now();
      const lease = { leaseOwner: owner, leaseUntil: now + LEASE_MS, updatedAt: nowIso() };
      let taken = row
        ? (await db.update(t).set(lease).where(and(eq(t.key, id), or(isNull(t.leaseUntil), lt(t.leaseUntil, now)))).returning({ key: t.key })).length > 0
        : (await db.insert(t).values({ key: id, tokenSealed: null, expiresAt: null, ...lease }).onConflictDoNothing().returning({ key: t.key })).length > 0;
      if (!taken) {
        await sleep(POLL_MS);
        continue;
      }
      const minted = await this.#mint(ref, pem);
      if (!minted.ok) {
        await db.update(t).set({ leaseOwner: null, leaseUntil: null, updatedAt: nowIso() }).where(and(eq(t.key, id), eq(t.leaseOwner, owner)));
        return { value: { ok: false, reason: minted.reason }, ttlMs: FAILURE_TTL_MS };
      }
      await db
        .update(t)
        .set({ tokenSealed: this.deps.sealer.seal(minted.token), expiresAt: minted.expiresAt, leaseOwner: null, leaseUntil: null, updatedAt: nowIso() })
        .where(eq(t.key, id));
      return { value: { ok: true, token: minted.token }, ttlMs: Math.max(0, minted.expiresAt - EXPIRY_MARGIN_MS - clockNow()) };
    }
    return { value: { ok: false, reason: "timed out waiting for another instance to mint the token" }, ttlMs: 0 };
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

  async #mint(ref: GithubAppRef, pem: string): Promise<{ ok: true; token: string; expiresAt: number } | { ok: false; reason: string }> {
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
