// Organizations, projects, users and memberships: the tenancy every other record hangs off.
import { and, asc, eq, gt, inArray, or } from "drizzle-orm";
import type { MembershipStatus, Role } from "../core/model.ts";
import { newId, newShortId, nowIso } from "../core/ids.ts";
import type { OrganizationRow, ProjectRow, UserRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";

export type Organization = OrganizationRow;
export type Project = ProjectRow;
export type User = UserRow;

/** Lowercased name, runs of non-alphanumerics replaced by `-`, trimmed of `-` (docs/api.md#projects-and-team). */
export function slugify(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/** Claim placeholders' addresses live under this domain (`.invalid`: never a real mailbox, RFC 2606). */
const PLACEHOLDER_DOMAIN = "@claim.credgate.invalid";

/**
 * A claim placeholder's address (docs/api.md#accounts-and-sessions): such a user holds keys until someone claims
 * them and never signs in. Every address of the domain counts, so none can be made a person by another door.
 */
export function isPlaceholderEmail(email: string): boolean {
  return email.trim().toLowerCase().endsWith(PLACEHOLDER_DOMAIN);
}

export class OrganizationService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  async createOrganization(name: string, opts: { partnerId?: string; claimed?: boolean } = {}): Promise<Organization> {
    const org: Organization = {
      id: newShortId(),
      name,
      slug: slugify(name) || "organization",
      partnerId: opts.partnerId ?? null,
      claimed: opts.claimed ?? true,
      partnerDetached: false,
      claimedAt: null,
      claimedByUserId: null,
      createdAt: nowIso(),
    };
    await this.db.insert(this.t.organizations).values(org);
    return org;
  }

  /** Creates a project; an automatic creation whose slug is taken gets a random `-xxxxxx` suffix. */
  async createProject(organizationId: string, name: string): Promise<Project> {
    const { projects } = this.t;
    let slug = slugify(name) || "project";
    const [taken] = await this.db.select({ id: projects.id }).from(projects).where(and(eq(projects.organizationId, organizationId), eq(projects.slug, slug))).limit(1);
    if (taken) slug = `${slug}-${newShortId(6)}`;
    const now = nowIso();
    const project: Project = { id: newShortId(), organizationId, name, slug, createdAt: now, updatedAt: now };
    await this.db.insert(projects).values(project);
    return project;
  }

  async rename(id: string, name: string): Promise<void> {
    await this.deps.store.transaction(async () => {
      const before = await this.getOrganization(id);
      await this.db.update(this.t.organizations).set({ name }).where(eq(this.t.organizations.id, id));
      await this.deps.audit.record({ targetType: "organization", targetId: id, organizationId: id, projectId: null, before: { name: before?.name ?? null }, after: { name } });
    });
  }

  async partnerName(partnerId: string): Promise<string | null> {
    const [row] = await this.db.select({ name: this.t.partners.name }).from(this.t.partners).where(eq(this.t.partners.id, partnerId)).limit(1);
    return row?.name ?? null;
  }

  /** The partner's secrets stop applying to the organization (its gateway views are rebuilt). */
  async detachFromPartner(organizationId: string): Promise<void> {
    await this.deps.store.transaction(async () => {
      const before = await this.getOrganization(organizationId);
      await this.db.update(this.t.organizations).set({ partnerDetached: true }).where(eq(this.t.organizations.id, organizationId));
      await this.deps.audit.record({
        targetType: "organization",
        targetId: organizationId,
        organizationId,
        projectId: null,
        before: { partnerDetached: before?.partnerDetached ?? false },
        after: { partnerDetached: true },
      });
    });
    this.deps.events.emit({ kind: "organization", organizationId });
  }

  async getOrganization(id: string): Promise<Organization | undefined> {
    const [row] = await this.db.select().from(this.t.organizations).where(eq(this.t.organizations.id, id)).limit(1);
    return row;
  }

  async getProject(id: string): Promise<Project | undefined> {
    const [row] = await this.db.select().from(this.t.projects).where(eq(this.t.projects.id, id)).limit(1);
    return row;
  }

  /** The organization's first project (oldest), the default context of a session without `X-Project-Id`. */
  async firstProject(organizationId: string): Promise<Project | undefined> {
    const { projects } = this.t;
    const [row] = await this.db.select().from(projects).where(eq(projects.organizationId, organizationId)).orderBy(asc(projects.createdAt), asc(projects.id)).limit(1);
    return row;
  }

  /** Every project of these organizations, oldest first within each (the dashboard's project switcher). */
  async projectsOf(organizationIds: string[]): Promise<Project[]> {
    if (organizationIds.length === 0) return [];
    const { projects } = this.t;
    return this.db.select().from(projects).where(inArray(projects.organizationId, organizationIds)).orderBy(asc(projects.createdAt), asc(projects.id));
  }

  async createUser(email: string, name: string | null = null, passwordHash: string | null = null): Promise<User> {
    const user: User = { id: newId(), email: email.toLowerCase(), name, passwordHash, createdAt: nowIso() };
    await this.db.insert(this.t.users).values(user);
    return user;
  }

  /**
   * A stand-in user that holds a provision's or a partner organization's keys until someone claims them. It has
   * no password (nobody can sign in as it) and an address under `.invalid` (RFC 2606: never a real mailbox).
   */
  createPlaceholderUser(): Promise<User> {
    return this.createUser(`placeholder-${newId()}${PLACEHOLDER_DOMAIN}`);
  }

  async setPassword(userId: string, passwordHash: string): Promise<void> {
    await this.db.update(this.t.users).set({ passwordHash }).where(eq(this.t.users.id, userId));
  }

  async deleteUser(userId: string): Promise<void> {
    await this.db.delete(this.t.users).where(eq(this.t.users.id, userId));
  }

  async getUser(id: string): Promise<User | undefined> {
    const [row] = await this.db.select().from(this.t.users).where(eq(this.t.users.id, id)).limit(1);
    return row;
  }

  async getUserByEmail(email: string): Promise<User | undefined> {
    const [row] = await this.db.select().from(this.t.users).where(eq(this.t.users.email, email.toLowerCase())).limit(1);
    return row;
  }

  async updateUserName(id: string, name: string): Promise<User | undefined> {
    await this.deps.store.transaction(async () => {
      const before = await this.getUser(id);
      await this.db.update(this.t.users).set({ name }).where(eq(this.t.users.id, id));
      await this.deps.audit.record({ targetType: "user", targetId: id, projectId: null, before: { name: before?.name ?? null }, after: { name } });
    });
    return this.getUser(id);
  }

  async addMember(organizationId: string, userId: string, role: Role, status: "active" | "pending" = "active"): Promise<void> {
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.memberships).values({ organizationId, userId, role, status, createdAt: nowIso() });
      await this.#auditMembership(organizationId, userId, null, { role, status });
    });
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  async setRole(organizationId: string, userId: string, role: Role): Promise<void> {
    const { memberships } = this.t;
    const where = and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId));
    await this.deps.store.transaction(async () => {
      const [before] = await this.db.select({ role: memberships.role }).from(memberships).where(where).limit(1);
      await this.db.update(memberships).set({ role }).where(where);
      await this.#auditMembership(organizationId, userId, before ?? null, { role });
    });
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  async removeMember(organizationId: string, userId: string): Promise<void> {
    const { memberships } = this.t;
    await this.deps.store.transaction(async () => {
      const gone = await this.db
        .delete(memberships)
        .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
        .returning({ role: memberships.role, status: memberships.status });
      if (gone[0]) await this.#auditMembership(organizationId, userId, gone[0], null);
    });
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  /** A membership's change in the current write's audit event (docs/operations.md#audit-log); the target is the user. */
  #auditMembership(organizationId: string, userId: string, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "membership", targetId: userId, organizationId, projectId: null, before, after });
  }

  /** The user's membership of the organization, whatever its status. */
  async membership(organizationId: string, userId: string): Promise<{ role: Role; status: MembershipStatus; createdAt: string } | undefined> {
    const { memberships } = this.t;
    const [m] = await this.db
      .select({ role: memberships.role, status: memberships.status, createdAt: memberships.createdAt })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
      .limit(1);
    return m;
  }

  /**
   * The role a key of this holder acts with: an active member's role; a placeholder's (pending) role while its
   * claim link lives — a provision's or a partner organization's keys work from the start.
   */
  async keyHolderRole(organizationId: string, userId: string): Promise<Role | null> {
    const m = await this.membership(organizationId, userId);
    if (!m) return null;
    if (m.status === "active") return m.role;
    const { claimLinks } = this.t;
    const [live] = await this.db
      .select({ id: claimLinks.id })
      .from(claimLinks)
      .where(
        and(
          eq(claimLinks.userId, userId),
          eq(claimLinks.organizationId, organizationId),
          // A partner organization's link never expires; a provision's lasts 7 days.
          or(eq(claimLinks.kind, "organization"), and(eq(claimLinks.kind, "provision"), gt(claimLinks.expiresAt, nowIso()))),
        ),
      )
      .limit(1);
    return live ? m.role : null;
  }

  /** Every member of the organization (active and pending), with their user, in joining order. */
  members(organizationId: string): Promise<{ userId: string; email: string; name: string | null; role: Role; status: MembershipStatus; joinedAt: string }[]> {
    const { memberships, users } = this.t;
    return this.db
      .select({ userId: users.id, email: users.email, name: users.name, role: memberships.role, status: memberships.status, joinedAt: memberships.createdAt })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(eq(memberships.organizationId, organizationId))
      .orderBy(asc(memberships.createdAt), asc(users.id));
  }

  /** The user's active role in the organization, or null when not an active member. */
  async activeRole(organizationId: string, userId: string): Promise<Role | null> {
    const { memberships } = this.t;
    const [m] = await this.db
      .select({ role: memberships.role, status: memberships.status })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
      .limit(1);
    return m && m.status === "active" ? m.role : null;
  }

  /** Active memberships of a user, oldest first (the first is a session's default organization). */
  membershipsOf(userId: string): Promise<{ organizationId: string; name: string; role: Role }[]> {
    const { memberships, organizations } = this.t;
    return this.db
      .select({ organizationId: memberships.organizationId, name: organizations.name, role: memberships.role })
      .from(memberships)
      .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
      .where(and(eq(memberships.userId, userId), eq(memberships.status, "active")))
      .orderBy(asc(memberships.createdAt), asc(memberships.organizationId));
  }
}
