// Partners (docs/api.md#partners, cloud): companies that set up organizations for their customers. A partner is
// created by the operator (`credgate partner create`), with its partner key and its owner's invite. A partner
// organization comes with a Default project and agent, a placeholder owner holding an org key and a project
// key, and a claim link; the partner may replace the link, rotate the three credentials, manage its projects,
// and delete it while nobody has claimed it.
import { and, asc, eq, inArray } from "drizzle-orm";
import { badRequest, conflict, notFound } from "../core/errors.ts";
import { newId, nowIso, randomHex } from "../core/ids.ts";
import { tokenHash } from "../crypto/hash.ts";
import type { AgentService } from "./agents.ts";
import type { ApiKeyService } from "./apiKeys.ts";
import type { ClaimService } from "./claims.ts";
import { issueCredential } from "./credentials.ts";
import type { ServiceDeps } from "./deps.ts";
import { isPlaceholderEmail, type Organization, type OrganizationService, type Project } from "./organizations.ts";
import { ALREADY_CLAIMED } from "./claims.ts";
import { projectView, type ProjectService } from "./projects.ts";
import type { PartnerMember, PartnerOrganization, PartnerOrgCreated } from "../core/records/partner.ts";

export const ORG_NOT_FOUND = "Organization not found";
export const PARTNER_MEMBER_NOT_FOUND = "Partner member not found";
export const PARTNER_OWNER_FIXED = "The partner owner cannot be changed or removed";
export const INVITE_LIFETIME_MS = 7 * 24 * 3600 * 1000;
/** A claim placeholder named as a partner member or owner: it is no one, so no such user (docs/api.md#accounts-and-sessions). */
export const USER_NOT_FOUND = "User not found";

export class PartnerService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly orgs: OrganizationService,
    private readonly projects: ProjectService,
    private readonly agents: AgentService,
    private readonly apiKeys: ApiKeyService,
    private readonly claims: ClaimService,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  /**
   * A partner with its partner key and its owner (an account by that email, made without a password if there is
   * none), who gets an invite to set one. Returns the key and the invite URL (null when the owner has a password).
   */
  async create(name: string, ownerEmail: string): Promise<{ partnerId: string; partnerKey: string; inviteUrl: string | null }> {
    return this.deps.store.transaction(async () => {
      const { partners, apiKeys, partnerMembers } = this.t;
      const partnerId = newId();
      const now = nowIso();
      if (isPlaceholderEmail(ownerEmail)) throw notFound(USER_NOT_FOUND);
      await this.db.insert(partners).values({ id: partnerId, name, createdAt: now });
      const cred = issueCredential(this.deps.sealer, "partner");
      await this.db.insert(apiKeys).values({ id: newId(), kind: "partner", tokenHash: cred.tokenHash, tokenSealed: cred.tokenSealed, userId: null, organizationId: null, projectId: null, partnerId, createdAt: now });
      const owner = (await this.orgs.getUserByEmail(ownerEmail)) ?? (await this.orgs.createUser(ownerEmail));
      const [taken] = await this.db.select({ partnerId: partnerMembers.partnerId }).from(partnerMembers).where(eq(partnerMembers.userId, owner.id)).limit(1);
      if (taken) throw conflict("This user already belongs to another partner");
      await this.db.insert(partnerMembers).values({ partnerId, userId: owner.id, role: "owner", createdAt: now });
      const inviteUrl = owner.passwordHash ? null : await this.invite(owner.id, partnerId);
      await this.deps.audit.record({ targetType: "partner", targetId: partnerId, projectId: null, before: null, after: { name, ownerEmail, partnerKey: cred.tokenHash } });
      return { partnerId, partnerKey: cred.token, inviteUrl };
    });
  }

  /** An invite to set a password (accept-invite), valid 7 days. */
  async invite(userId: string, partnerId: string | null): Promise<string> {
    const token = randomHex(32);
    await this.db.insert(this.t.invites).values({ id: newId(), tokenHash: tokenHash(token), userId, partnerId, expiresAt: new Date(Date.now() + INVITE_LIFETIME_MS).toISOString(), createdAt: nowIso() });
    return `${this.deps.config.publicUrl.replace(/\/+$/, "")}/accept-invite?token=${token}`;
  }

  /**
   * `POST /auth/accept-invite`: the invited user's password is set and the invite used up; null when unknown,
   * expired, held by a claim placeholder (which never signs in), or made for a partner membership since removed.
   */
  async acceptInvite(token: string, passwordHash: string): Promise<string | null> {
    const { invites, partnerMembers } = this.t;
    return this.deps.store.transaction(async () => {
      const [invite] = await this.db.select().from(invites).where(eq(invites.tokenHash, tokenHash(token))).limit(1);
      if (!invite || !invite.userId || invite.expiresAt <= nowIso()) return null;
      const user = await this.orgs.getUser(invite.userId);
      if (!user || isPlaceholderEmail(user.email)) return null;
      if (invite.partnerId !== null) {
        const [member] = await this.db
          .select({ userId: partnerMembers.userId })
          .from(partnerMembers)
          .where(and(eq(partnerMembers.partnerId, invite.partnerId), eq(partnerMembers.userId, invite.userId)))
          .limit(1);
        if (!member) return null;
      }
      await this.orgs.setPassword(invite.userId, passwordHash);
      await this.db.delete(invites).where(eq(invites.id, invite.id));
      this.deps.audit.actAs({ kind: "user", id: invite.userId, userId: invite.userId });
      await this.deps.audit.record({ targetType: "user", targetId: invite.userId, projectId: null, before: { password: null }, after: { password: passwordHash } });
      return invite.userId;
    });
  }

  /** The partner a user is a member of, with their role. */
  async membershipOf(userId: string): Promise<{ id: string; name: string; role: "owner" | "admin" | "member" } | null> {
    const { partnerMembers, partners } = this.t;
    const [row] = await this.db
      .select({ id: partners.id, name: partners.name, role: partnerMembers.role })
      .from(partnerMembers)
      .innerJoin(partners, eq(partners.id, partnerMembers.partnerId))
      .where(eq(partnerMembers.userId, userId))
      .limit(1);
    return row ?? null;
  }

  /** A new organization for a customer: Default project and agent, a placeholder owner's keys, a claim link. */
  async createOrganization(partnerId: string, name: string): Promise<PartnerOrgCreated> {
    return this.deps.store.transaction(async () => {
      const org = await this.orgs.createOrganization(name, { partnerId, claimed: false });
      this.deps.audit.setOrganization(org.id);
      await this.deps.audit.record({ targetType: "organization", targetId: org.id, organizationId: org.id, projectId: null, before: null, after: org });
      const placeholder = await this.orgs.createPlaceholderUser();
      await this.orgs.addMember(org.id, placeholder.id, "owner", "pending");
      const { project, apiKey } = await this.projects.create(org.id, "Default", { creatorUserId: placeholder.id, automatic: true });
      const orgApiKey = await this.apiKeys.keyFor({ kind: "organization", userId: placeholder.id, organizationId: org.id });
      const agent = (await this.agents.findDefault(project.id))!;
      const agentToken = this.agents.accessToken(agent);
      const claimUrl = await this.claims.issueOrganizationLink(org.id, placeholder.id);
      return { organizationId: org.id, projectId: project.id, agentId: agent.id, orgApiKey, projectApiKey: apiKey, agentToken, claimUrl };
    });
  }

  /** The partner's organization, or 404 (another partner's does not exist for this one). */
  async organization(partnerId: string, organizationId: string): Promise<Organization> {
    const org = await this.orgs.getOrganization(organizationId);
    if (!org || org.partnerId !== partnerId) throw notFound(ORG_NOT_FOUND);
    return org;
  }

  async #unclaimed(partnerId: string, organizationId: string): Promise<Organization> {
    const org = await this.organization(partnerId, organizationId);
    if (org.claimed) throw conflict(ALREADY_CLAIMED);
    return org;
  }

  async listOrganizations(partnerId: string): Promise<PartnerOrganization[]> {
    const { organizations } = this.t;
    const orgs = await this.db.select().from(organizations).where(eq(organizations.partnerId, partnerId)).orderBy(asc(organizations.createdAt), asc(organizations.id));
    return Promise.all(orgs.map((o) => this.view(o)));
  }

  async view(org: Organization): Promise<PartnerOrganization> {
    const claimer = org.claimedByUserId ? await this.orgs.getUser(org.claimedByUserId) : undefined;
    return {
      id: org.id,
      name: org.name,
      slug: org.slug,
      status: !org.claimed ? "unclaimed" : org.partnerDetached ? "detached" : "claimed",
      claimedByEmail: claimer?.email ?? null,
      claimedAt: org.claimedAt ?? null,
      createdAt: org.createdAt,
      projects: (await this.projects.list(org.id)).map(projectView),
    };
  }

  async deleteOrganization(partnerId: string, organizationId: string): Promise<void> {
    await this.#unclaimed(partnerId, organizationId);
    const placeholders = await this.#placeholders(organizationId);
    await this.projects.deleteOrganization(organizationId);
    if (placeholders.length > 0) await this.db.delete(this.t.users).where(inArray(this.t.users.id, placeholders));
  }

  /** The placeholder owner(s) of an unclaimed organization: users without a password holding a pending membership. */
  async #placeholders(organizationId: string): Promise<string[]> {
    const { memberships, users } = this.t;
    const rows = await this.db
      .select({ id: users.id, passwordHash: users.passwordHash })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.status, "pending")));
    return rows.filter((r) => r.passwordHash === null).map((r) => r.id);
  }

  async reissueClaimLink(partnerId: string, organizationId: string): Promise<string> {
    await this.#unclaimed(partnerId, organizationId);
    const [placeholder] = await this.#placeholders(organizationId);
    if (!placeholder) throw notFound(ORG_NOT_FOUND);
    return this.claims.issueOrganizationLink(organizationId, placeholder);
  }

  /** New org key, project key (of the first project) and Default Agent token; the old values die at once. */
  async rotateTokens(partnerId: string, organizationId: string): Promise<{ orgApiKey: string; projectApiKey: string; agentToken: string }> {
    await this.#unclaimed(partnerId, organizationId);
    const [placeholder] = await this.#placeholders(organizationId);
    const project = await this.orgs.firstProject(organizationId);
    if (!placeholder || !project) throw notFound(ORG_NOT_FOUND);
    const orgApiKey = await this.apiKeys.regenerate({ kind: "organization", userId: placeholder, organizationId });
    const projectApiKey = await this.apiKeys.regenerate({ kind: "project", userId: placeholder, projectId: project.id, organizationId });
    const agent = (await this.agents.findDefault(project.id)) ?? (await this.agents.createDefault(project.id));
    const agentToken = await this.agents.regenerateToken(project.id, agent.id);
    return { orgApiKey, projectApiKey, agentToken };
  }

  async projectsOf(partnerId: string, organizationId: string): Promise<Project[]> {
    await this.organization(partnerId, organizationId);
    return this.projects.list(organizationId);
  }

  async createProject(partnerId: string, organizationId: string, name: string): Promise<Project> {
    await this.#unclaimed(partnerId, organizationId);
    return (await this.projects.create(organizationId, name)).project;
  }

  async deleteProject(partnerId: string, organizationId: string, projectId: string): Promise<void> {
    await this.#unclaimed(partnerId, organizationId);
    await this.projects.delete(organizationId, projectId);
  }

  /** The partner's people, oldest first. */
  async members(partnerId: string): Promise<PartnerMember[]> {
    const { partnerMembers, users } = this.t;
    return this.db
      .select({ userId: users.id, email: users.email, role: partnerMembers.role, createdAt: partnerMembers.createdAt })
      .from(partnerMembers)
      .innerJoin(users, eq(users.id, partnerMembers.userId))
      .where(eq(partnerMembers.partnerId, partnerId))
      .orderBy(asc(partnerMembers.createdAt), asc(users.id));
  }

  /** Adds a person (an account by that email, made without a password if missing, with an invite to set one). */
  async addMember(partnerId: string, email: string, role: "admin" | "member") {
    return this.deps.store.transaction(async () => {
      const { partnerMembers } = this.t;
      if (isPlaceholderEmail(email)) throw notFound(USER_NOT_FOUND);
      const user = (await this.orgs.getUserByEmail(email)) ?? (await this.orgs.createUser(email));
      const [existing] = await this.db.select({ partnerId: partnerMembers.partnerId }).from(partnerMembers).where(eq(partnerMembers.userId, user.id)).limit(1);
      if (existing) throw conflict(existing.partnerId === partnerId ? "This user is already a partner member" : "This user already belongs to another partner");
      const createdAt = nowIso();
      await this.db.insert(partnerMembers).values({ partnerId, userId: user.id, role, createdAt });
      await this.#auditMember(user.id, null, { email: user.email, role });
      const inviteUrl = user.passwordHash ? null : await this.invite(user.id, partnerId);
      return { userId: user.id, email: user.email, role, createdAt, inviteUrl };
    });
  }

  async #member(partnerId: string, userId: string) {
    const member = (await this.members(partnerId)).find((m) => m.userId === userId);
    if (!member) throw notFound(PARTNER_MEMBER_NOT_FOUND);
    if (member.role === "owner") throw badRequest(PARTNER_OWNER_FIXED);
    return member;
  }

  async setMemberRole(partnerId: string, userId: string, role: "admin" | "member"): Promise<void> {
    const member = await this.#member(partnerId, userId);
    const { partnerMembers } = this.t;
    await this.deps.store.transaction(async () => {
      await this.db.update(partnerMembers).set({ role }).where(and(eq(partnerMembers.partnerId, partnerId), eq(partnerMembers.userId, userId)));
      await this.#auditMember(userId, { role: member.role }, { role });
    });
  }

  async removeMember(partnerId: string, userId: string): Promise<void> {
    const member = await this.#member(partnerId, userId);
    const { partnerMembers, invites } = this.t;
    await this.deps.store.transaction(async () => {
      await this.db.delete(partnerMembers).where(and(eq(partnerMembers.partnerId, partnerId), eq(partnerMembers.userId, userId)));
      // The invite to set a password was for this membership: it ends with it.
      await this.db.delete(invites).where(and(eq(invites.partnerId, partnerId), eq(invites.userId, userId)));
      await this.#auditMember(userId, { email: member.email, role: member.role }, null);
    });
  }

  /** A partner member's change in the current write's audit event (docs/operations.md#audit-log). */
  #auditMember(userId: string, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "partner_member", targetId: userId, organizationId: null, projectId: null, before, after });
  }
}
