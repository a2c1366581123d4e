// Claim links (docs/api.md#states, docs/api.md#projects-and-team, docs/api.md#partners, docs/api.md#accounts-and-sessions `POST /claim`): a partner organization's (one at a time, no
// expiry; reissuing replaces it) and a team provision's (7 days). Claiming puts the signed-in user in the
// placeholder's place: its membership (as owner of a partner organization, with the provisioned role
// otherwise) and its keys, which keep working; then the placeholder is gone. Settled in one transaction with
// the link's organization locked, so a link is claimed once even when two instances race.
import { and, eq, inArray, isNotNull, lte } from "drizzle-orm";
import { conflict, notFound } from "../core/errors.ts";
import { newId, nowIso, randomHex } from "../core/ids.ts";
import type { ClaimKind, Role } from "../core/model.ts";
import { tokenHash } from "../crypto/hash.ts";
import type { ServiceDeps } from "./deps.ts";
import type { OrganizationService } from "./organizations.ts";

export const PROVISION_LIFETIME_MS = 7 * 24 * 3600 * 1000;
export const CLAIM_NOT_FOUND = "Claim link not found or expired";
export const ALREADY_CLAIMED = "Organization has already been claimed";

const RANK: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

export interface ClaimResult {
  kind: ClaimKind;
  organizationId: string;
  projectId: string;
}

export class ClaimService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly orgs: OrganizationService,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  urlOf(token: string): string {
    return `${this.deps.config.publicUrl.replace(/\/+$/, "")}/claim?token=${token}`;
  }

  /** A provision's claim link for its placeholder: returns the URL (shown once) and when it expires. */
  async issueProvisionLink(organizationId: string, projectId: string, placeholderId: string): Promise<{ id: string; url: string; expiresAt: string }> {
    const token = randomHex(32);
    const expiresAt = new Date(Date.now() + PROVISION_LIFETIME_MS).toISOString();
    const id = newId();
    const row = {
      id,
      kind: "provision" as const,
      tokenHash: tokenHash(token),
      tokenSealed: this.deps.sealer.seal(token),
      organizationId,
      projectId,
      userId: placeholderId,
      expiresAt,
      createdAt: nowIso(),
    };
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.claimLinks).values(row);
      await this.deps.audit.record({ targetType: "claim_link", targetId: id, organizationId, projectId, before: null, after: row });
    });
    return { id, url: this.urlOf(token), expiresAt };
  }

  /** A partner organization's claim link, replacing the previous one (which dies at once). */
  async issueOrganizationLink(organizationId: string, placeholderId: string): Promise<string> {
    const { claimLinks } = this.t;
    const token = randomHex(32);
    const sealed = { tokenHash: tokenHash(token), tokenSealed: this.deps.sealer.seal(token) };
    // Replaced, not upserted: SQLite cannot match a parameterised WHERE to the partial unique index.
    await this.deps.store.transaction(async () => {
      const gone = await this.db
        .delete(claimLinks)
        .where(and(eq(claimLinks.organizationId, organizationId), eq(claimLinks.kind, "organization")))
        .returning({ tokenHash: claimLinks.tokenHash });
      const id = newId();
      await this.db.insert(claimLinks).values({ id, kind: "organization", ...sealed, organizationId, projectId: null, userId: placeholderId, expiresAt: null, createdAt: nowIso() });
      await this.deps.audit.record({ targetType: "claim_link", targetId: id, organizationId, projectId: null, before: gone[0] ?? null, after: { tokenHash: sealed.tokenHash } });
    });
    this.deps.events.emit({ kind: "organization", organizationId });
    return this.urlOf(token);
  }

  /** The current claim link of an unclaimed partner organization, or null. */
  async organizationLink(organizationId: string): Promise<string | null> {
    const { claimLinks } = this.t;
    const [row] = await this.db
      .select({ tokenSealed: claimLinks.tokenSealed })
      .from(claimLinks)
      .where(and(eq(claimLinks.organizationId, organizationId), eq(claimLinks.kind, "organization")))
      .limit(1);
    return row ? this.urlOf(this.deps.sealer.open(row.tokenSealed)) : null;
  }

  /** An unclaimed partner organization's partner name and current claim link (docs/guards.md#claim-required), else null. */
  async pending(organizationId: string): Promise<{ partnerName: string; claimUrl: string } | null> {
    const org = await this.orgs.getOrganization(organizationId);
    if (!org || org.claimed || !org.partnerId) return null;
    const { partners } = this.t;
    const [partner] = await this.db.select({ name: partners.name }).from(partners).where(eq(partners.id, org.partnerId)).limit(1);
    const claimUrl = await this.organizationLink(organizationId);
    return claimUrl ? { partnerName: partner?.name ?? "a partner", claimUrl } : null;
  }

  /** `POST /claim` by `userId`. */
  async claim(userId: string, token: string): Promise<ClaimResult> {
    const { claimLinks, organizations } = this.t;
    const [found] = await this.db.select().from(claimLinks).where(eq(claimLinks.tokenHash, tokenHash(token))).limit(1);
    if (!found) throw notFound(CLAIM_NOT_FOUND);
    return this.deps.store.transaction(async () => {
      await this.deps.store.lockKey(`claim:${found.organizationId}`);
      // Read again under the lock: a concurrent claim (or a reissue) may have consumed the link.
      const [link] = await this.db.select().from(claimLinks).where(eq(claimLinks.id, found.id)).limit(1);
      if (!link || link.tokenHash !== found.tokenHash || (link.expiresAt !== null && link.expiresAt <= nowIso())) throw notFound(CLAIM_NOT_FOUND);
      const org = await this.orgs.getOrganization(link.organizationId);
      if (!org) throw notFound(CLAIM_NOT_FOUND);
      if (link.kind === "organization" && org.claimed) throw conflict(ALREADY_CLAIMED);
      const placeholder = await this.orgs.membership(org.id, link.userId);
      // An organization's link outlives the placeholder (held by the claimer now): using it again says 409.
      if (link.kind === "organization") await this.db.update(claimLinks).set({ userId }).where(eq(claimLinks.id, link.id));
      await this.#takeOver(org.id, link.userId, userId, placeholder?.role ?? "member");
      if (link.kind === "organization") {
        const claimed = { claimed: true, claimedAt: nowIso(), claimedByUserId: userId };
        await this.db.update(organizations).set(claimed).where(eq(organizations.id, org.id));
        this.deps.events.emit({ kind: "organization", organizationId: org.id });
        await this.deps.audit.record({ targetType: "organization", targetId: org.id, organizationId: org.id, projectId: null, before: org, after: { ...org, ...claimed } });
      } else {
        await this.deps.audit.record({ targetType: "claim_link", targetId: link.id, organizationId: org.id, projectId: link.projectId, before: { claimedByUserId: null }, after: { claimedByUserId: userId } });
      }
      const projectId = link.projectId ?? (await this.orgs.firstProject(org.id))?.id ?? "";
      return { kind: link.kind, organizationId: org.id, projectId };
    });
  }

  /**
   * The claimant takes the placeholder's place: its keys (replacing any of the claimant's own for the same
   * project or organization), and its membership — a claimant who is a member already keeps the higher role.
   */
  async #takeOver(organizationId: string, placeholderId: string, userId: string, role: Role): Promise<void> {
    const { apiKeys, memberships } = this.t;
    const inherited = await this.db.select().from(apiKeys).where(eq(apiKeys.userId, placeholderId));
    const projectIds = inherited.filter((k) => k.kind === "project" && k.projectId).map((k) => k.projectId!);
    if (projectIds.length > 0) {
      await this.db.delete(apiKeys).where(and(eq(apiKeys.userId, userId), eq(apiKeys.kind, "project"), inArray(apiKeys.projectId, projectIds)));
    }
    if (inherited.some((k) => k.kind === "organization")) {
      await this.db.delete(apiKeys).where(and(eq(apiKeys.userId, userId), eq(apiKeys.kind, "organization"), eq(apiKeys.organizationId, organizationId)));
    }
    await this.db.update(apiKeys).set({ userId }).where(eq(apiKeys.userId, placeholderId));
    const existing = await this.orgs.membership(organizationId, userId);
    if (!existing) {
      await this.db.insert(memberships).values({ organizationId, userId, role, status: "active", createdAt: nowIso() });
    } else if (existing.status !== "active" || RANK[role] > RANK[existing.role]) {
      const better = RANK[role] > RANK[existing.role] ? role : existing.role;
      await this.db
        .update(memberships)
        .set({ role: better, status: "active" })
        .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)));
    }
    await this.orgs.deleteUser(placeholderId);
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  /** Expired provisions are deleted: their placeholder (with its pending membership, key and link) goes. */
  async purgeExpired(now = nowIso()): Promise<number> {
    const { claimLinks, users } = this.t;
    const expired = await this.db
      .select({ userId: claimLinks.userId })
      .from(claimLinks)
      .where(and(eq(claimLinks.kind, "provision"), isNotNull(claimLinks.expiresAt), lte(claimLinks.expiresAt, now)));
    if (expired.length === 0) return 0;
    await this.db.delete(users).where(inArray(users.id, expired.map((e) => e.userId)));
    return expired.length;
  }
}
