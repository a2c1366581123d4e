// Dashboard sessions: `credgate_session` cookie, 30-day absolute lifetime, revocable server-side.
import { eq } from "drizzle-orm";
import { tokenHash } from "../crypto/hash.ts";
import { newId, nowIso, randomHex } from "../core/ids.ts";
import { sessions } from "../store/schema.ts";
import type { ServiceDeps } from "./deps.ts";

export const SESSION_COOKIE = "credgate_session";
export const SESSION_LIFETIME_MS = 30 * 24 * 3600 * 1000;

export class SessionService {
  constructor(private readonly deps: ServiceDeps) {}

  /** Creates a session and returns the cookie value (shown only here). */
  create(userId: string): { token: string; expiresAt: string } {
    const token = randomHex(32);
    const expiresAt = new Date(Date.now() + SESSION_LIFETIME_MS).toISOString();
    this.deps.db.insert(sessions).values({ id: newId(), tokenHash: tokenHash(token), userId, createdAt: nowIso(), expiresAt, revokedAt: null }).run();
    return { token, expiresAt };
  }

  /** The live session for a cookie value, or null when unknown, expired or revoked. */
  resolve(token: string): { id: string; userId: string } | null {
    const row = this.deps.db.select().from(sessions).where(eq(sessions.tokenHash, tokenHash(token))).get();
    if (!row || row.revokedAt !== null || row.expiresAt <= nowIso()) return null;
    return { id: row.id, userId: row.userId };
  }

  revoke(id: string): void {
    this.deps.db.update(sessions).set({ revokedAt: nowIso() }).where(eq(sessions.id, id)).run();
  }

  revokeAllOf(userId: string): void {
    this.deps.db.update(sessions).set({ revokedAt: nowIso() }).where(eq(sessions.userId, userId)).run();
  }
}

/** Login throttling (§5.16): 10 failures in 15 minutes for one email or key → refuse until they age out. */
export class LoginThrottle {
  readonly #failures = new Map<string, number[]>();
  constructor(
    private readonly limit = 10,
    private readonly windowMs = 15 * 60 * 1000,
  ) {}

  #recent(subject: string, now: number): number[] {
    const list = (this.#failures.get(subject) ?? []).filter((t) => now - t < this.windowMs);
    if (list.length === 0) this.#failures.delete(subject);
    else this.#failures.set(subject, list);
    return list;
  }

  blocked(subject: string, now = Date.now()): boolean {
    return this.#recent(subject, now).length >= this.limit;
  }

  fail(subject: string, now = Date.now()): void {
    this.#failures.set(subject, [...this.#recent(subject, now), now]);
  }

  succeed(subject: string): void {
    this.#failures.delete(subject);
  }
}
