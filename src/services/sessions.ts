// Dashboard sessions: `credgate_session` cookie, revocable server-side. A person's session (password, invite,
// claim) lasts 30 days; one made from an API key is that key (docs/api.md#accounts-and-sessions): it remembers the
// key's hash, lives only while a key with that value does, and lasts 12 hours at most.
import { and, asc, eq } from "drizzle-orm";
import { tokenHash } from "../crypto/hash.ts";
import { newId, nowIso, randomHex } from "../core/ids.ts";
import type { ServiceDeps } from "./deps.ts";

export const SESSION_COOKIE = "credgate_session";
export const SESSION_LIFETIME_MS = 30 * 24 * 3600 * 1000;
export const KEY_SESSION_LIFETIME_MS = 12 * 3600 * 1000;

/** A live session: whose, and (for a session made from an API key) the hash of the key it was made from. */
export interface ResolvedSession {
  id: string;
  userId: string;
  apiKeyHash: string | null;
}

export class SessionService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  /**
   * Creates a session and returns the cookie value (shown only here). `apiKey`: the key it is made from — the
   * session is then that key's, for 12 hours at most.
   */
  async create(userId: string, apiKey: string | null = null): Promise<{ token: string; expiresAt: string }> {
    const token = randomHex(32);
    const expiresAt = new Date(Date.now() + (apiKey === null ? SESSION_LIFETIME_MS : KEY_SESSION_LIFETIME_MS)).toISOString();
    const id = newId();
    const apiKeyHash = apiKey === null ? null : tokenHash(apiKey);
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.sessions).values({ id, tokenHash: tokenHash(token), userId, createdAt: nowIso(), expiresAt, revokedAt: null, apiKeyHash });
      // Signing in is done by the user it signs in.
      this.deps.audit.actAs({ kind: "user", id: userId, userId }, await this.#firstOrganization(userId));
      await this.deps.audit.record({ targetType: "session", targetId: id, projectId: null, before: null, after: { userId, expiresAt } });
    });
    return { token, expiresAt };
  }

  /** The live session for a cookie value, or null when unknown, expired or revoked. */
  async resolve(token: string): Promise<ResolvedSession | null> {
    const [row] = await this.db.select().from(this.t.sessions).where(eq(this.t.sessions.tokenHash, tokenHash(token))).limit(1);
    if (!row || row.revokedAt !== null || row.expiresAt <= nowIso()) return null;
    return { id: row.id, userId: row.userId, apiKeyHash: row.apiKeyHash };
  }

  async revoke(id: string): Promise<void> {
    const revokedAt = nowIso();
    await this.deps.store.transaction(async () => {
      const [session] = await this.db.update(this.t.sessions).set({ revokedAt }).where(eq(this.t.sessions.id, id)).returning({ userId: this.t.sessions.userId });
      const organizationId = session && (await this.#firstOrganization(session.userId));
      if (organizationId) this.deps.audit.setOrganization(organizationId);
      await this.deps.audit.record({ targetType: "session", targetId: id, projectId: null, before: { revokedAt: null }, after: { revokedAt } });
    });
  }

  /** The organization a session acts in without X-Organization-Id: the user's first (its sign-in events belong there). */
  async #firstOrganization(userId: string): Promise<string | undefined> {
    const { memberships } = this.t;
    const [first] = await this.db
      .select({ organizationId: memberships.organizationId })
      .from(memberships)
      .where(and(eq(memberships.userId, userId), eq(memberships.status, "active")))
      .orderBy(asc(memberships.createdAt), asc(memberships.organizationId))
      .limit(1);
    return first?.organizationId;
  }

  async revokeAllOf(userId: string): Promise<void> {
    await this.db.update(this.t.sessions).set({ revokedAt: nowIso() }).where(eq(this.t.sessions.userId, userId));
  }
}
