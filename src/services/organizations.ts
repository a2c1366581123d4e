// Organizations, projects, users and memberships: the tenancy every other record hangs off.
import { and, asc, eq } from "drizzle-orm";
import { newId, newShortId, nowIso } from "../core/ids.ts";
import { memberships, organizations, projects, users, type Role } from "../store/schema.ts";
import type { ServiceDeps } from "./deps.ts";

export type Organization = typeof organizations.$inferSelect;
export type Project = typeof projects.$inferSelect;
export type User = typeof users.$inferSelect;

/** Lowercased name, runs of non-alphanumerics replaced by `-`, trimmed of `-` (CONTRACT §5.6). */
export function slugify(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

export class OrganizationService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.db;
  }

  createOrganization(name: string, opts: { partnerId?: string; claimed?: boolean } = {}): Organization {
    const org: Organization = {
      id: newShortId(),
      name,
      slug: slugify(name) || "organization",
      partnerId: opts.partnerId ?? null,
      claimed: opts.claimed ?? true,
      partnerDetached: false,
      createdAt: nowIso(),
    };
    this.db.insert(organizations).values(org).run();
    return org;
  }

  /** Creates a project; an automatic creation whose slug is taken gets a random `-xxxxxx` suffix. */
  createProject(organizationId: string, name: string): Project {
    let slug = slugify(name) || "project";
    if (this.db.select({ id: projects.id }).from(projects).where(and(eq(projects.organizationId, organizationId), eq(projects.slug, slug))).get()) {
      slug = `${slug}-${newShortId(6)}`;
    }
    const now = nowIso();
    const project: Project = { id: newShortId(), organizationId, name, slug, createdAt: now, updatedAt: now };
    this.db.insert(projects).values(project).run();
    return project;
  }

  rename(id: string, name: string): void {
    this.db.update(organizations).set({ name }).where(eq(organizations.id, id)).run();
  }

  getOrganization(id: string): Organization | undefined {
    return this.db.select().from(organizations).where(eq(organizations.id, id)).get();
  }

  getProject(id: string): Project | undefined {
    return this.db.select().from(projects).where(eq(projects.id, id)).get();
  }

  /** The organization's first project (oldest), the default context of a session without `X-Project-Id`. */
  firstProject(organizationId: string): Project | undefined {
    return this.db.select().from(projects).where(eq(projects.organizationId, organizationId)).orderBy(asc(projects.createdAt), asc(projects.id)).limit(1).get();
  }

  createUser(email: string, name: string | null = null): User {
    const user: User = { id: newId(), email: email.toLowerCase(), name, passwordHash: null, createdAt: nowIso() };
    this.db.insert(users).values(user).run();
    return user;
  }

  getUser(id: string): User | undefined {
    return this.db.select().from(users).where(eq(users.id, id)).get();
  }

  getUserByEmail(email: string): User | undefined {
    return this.db.select().from(users).where(eq(users.email, email.toLowerCase())).get();
  }

  updateUserName(id: string, name: string): User | undefined {
    this.db.update(users).set({ name }).where(eq(users.id, id)).run();
    return this.getUser(id);
  }

  addMember(organizationId: string, userId: string, role: Role, status: "active" | "pending" = "active"): void {
    this.db.insert(memberships).values({ organizationId, userId, role, status, createdAt: nowIso() }).run();
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  setRole(organizationId: string, userId: string, role: Role): void {
    this.db.update(memberships).set({ role }).where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId))).run();
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  removeMember(organizationId: string, userId: string): void {
    this.db.delete(memberships).where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId))).run();
    this.deps.events.emit({ kind: "membership", organizationId });
  }

  /** The user's active role in the organization, or null when not an active member. */
  activeRole(organizationId: string, userId: string): Role | null {
    const m = this.db
      .select({ role: memberships.role, status: memberships.status })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
      .get();
    return m && m.status === "active" ? m.role : null;
  }

  /** Active memberships of a user, oldest first (the first is a session's default organization). */
  membershipsOf(userId: string): { organizationId: string; name: string; role: Role }[] {
    return this.db
      .select({ organizationId: memberships.organizationId, name: organizations.name, role: memberships.role })
      .from(memberships)
      .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
      .where(and(eq(memberships.userId, userId), eq(memberships.status, "active")))
      .orderBy(asc(memberships.createdAt), asc(memberships.organizationId))
      .all();
  }
}
