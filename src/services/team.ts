// Team (docs/api.md#projects-and-team): provisions (a placeholder member with a project of its own and a key that works at
// once, claimed within 7 days), the member list, role changes and removal. Removing a member revokes their
// keys in the organization and their sessions; demoting an admin kills their organization key (the holder
// check reads the current role on every request).
import { and, eq } from "drizzle-orm";
import { badRequest, notFound } from "../core/errors.ts";
import type { ClaimService } from "./claims.ts";
import type { ServiceDeps } from "./deps.ts";
import type { OrganizationService } from "./organizations.ts";
import type { ProjectService } from "./projects.ts";
import type { SessionService } from "./sessions.ts";
import type { Provision, TeamMember } from "../core/records/accounts.ts";

export const MEMBER_NOT_FOUND = "Member not found";
export const OWNER_IS_FIXED = "The organization owner cannot be changed or removed";

export class TeamService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly orgs: OrganizationService,
    private readonly projects: ProjectService,
    private readonly sessions: SessionService,
    private readonly claims: ClaimService,
  ) {}

  /** A placeholder member with the role, its project `Default` (Default Agent, the placeholder's key) and a claim link. */
  async provision(organizationId: string, role: "admin" | "member"): Promise<Provision> {
    await this.claims.purgeExpired();
    return this.deps.store.transaction(async () => {
      const placeholder = await this.orgs.createPlaceholderUser();
      await this.orgs.addMember(organizationId, placeholder.id, role, "pending");
      const { project, apiKey } = await this.projects.create(organizationId, "Default", { creatorUserId: placeholder.id, automatic: true });
      const link = await this.claims.issueProvisionLink(organizationId, project.id, placeholder.id);
      return { id: link.id, userId: placeholder.id, projectId: project.id, apiKey: apiKey, claimUrl: link.url, expiresAt: link.expiresAt };
    });
  }

  async members(organizationId: string): Promise<TeamMember[]> {
    await this.claims.purgeExpired();
    return this.orgs.members(organizationId);
  }

  async #member(organizationId: string, userId: string): Promise<TeamMember> {
    const member = (await this.orgs.members(organizationId)).find((m) => m.userId === userId);
    if (!member) throw notFound(MEMBER_NOT_FOUND);
    if (member.role === "owner") throw badRequest(OWNER_IS_FIXED);
    return member;
  }

  async setRole(organizationId: string, userId: string, role: "admin" | "member"): Promise<TeamMember> {
    const member = await this.#member(organizationId, userId);
    if (member.role !== role) await this.orgs.setRole(organizationId, userId, role);
    return { ...member, role };
  }

  /**
   * Removes a member: their keys in this organization die and their sessions end. An unclaimed provision's
   * placeholder is deleted outright (its claim link with it).
   */
  async remove(organizationId: string, userId: string): Promise<void> {
    const member = await this.#member(organizationId, userId);
    const { apiKeys } = this.deps.store.t;
    await this.deps.store.transaction(async () => {
      await this.orgs.removeMember(organizationId, userId);
      await this.deps.store.db.delete(apiKeys).where(and(eq(apiKeys.userId, userId), eq(apiKeys.organizationId, organizationId)));
      await this.sessions.revokeAllOf(userId);
      const user = await this.orgs.getUser(userId);
      if (member.status === "pending" && user && user.passwordHash === null) await this.orgs.deleteUser(userId);
    });
  }
}
