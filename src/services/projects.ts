// Projects of an organization (docs/api.md#projects-and-team): every new project comes with its Default Agent (and, for a
// person creating it, their project key); deleting a project takes everything in it along — agents, secrets,
// rules, approvals, connections and keys by the store's cascades, request logs and spend here — and the
// gateway forgets its agents at once. Deleting an organization (a partner's unclaimed one) does the same for
// every project in it.
import { and, asc, eq, inArray, ne, type SQL } from "drizzle-orm";
import { badRequest, conflict, notFound } from "../core/errors.ts";
import { newShortId, nowIso } from "../core/ids.ts";
import type { AgentService } from "./agents.ts";
import type { ApiKeyService } from "./apiKeys.ts";
import type { ServiceDeps } from "./deps.ts";
import { slugify, type OrganizationService, type Project } from "./organizations.ts";
import type { RequestLogService } from "./requestLogs.ts";
import type { SpendService } from "./budgets/spend.ts";
import type { Project as ProjectRecord } from "../core/records/accounts.ts";

export const PROJECT_NOT_FOUND = "Project not found";
export const ONLY_PROJECT_MESSAGE = "Cannot delete the only project in the organization";

export function projectView(p: Project): ProjectRecord {
  return { id: p.id, name: p.name, slug: p.slug, organizationId: p.organizationId, createdAt: p.createdAt, updatedAt: p.updatedAt };
}

const slugTaken = (slug: string) => conflict(`A project with slug "${slug}" already exists`);

export class ProjectService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly orgs: OrganizationService,
    private readonly agents: AgentService,
    private readonly apiKeys: ApiKeyService,
    private readonly requestLogs: RequestLogService,
    private readonly spend: SpendService,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  /** The organization's projects, oldest first. */
  list(organizationId: string): Promise<Project[]> {
    const { projects } = this.t;
    return this.db.select().from(projects).where(eq(projects.organizationId, organizationId)).orderBy(asc(projects.createdAt), asc(projects.id));
  }

  /** A project of the organization, or 404 (another organization's project does not exist for the caller). */
  async get(organizationId: string, projectId: string): Promise<Project> {
    const project = await this.orgs.getProject(projectId);
    if (!project || project.organizationId !== organizationId) throw notFound(PROJECT_NOT_FOUND);
    return project;
  }

  async #slugOwner(organizationId: string, slug: string, except?: string): Promise<boolean> {
    const { projects } = this.t;
    const where = and(eq(projects.organizationId, organizationId), eq(projects.slug, slug), except ? ne(projects.id, except) : undefined);
    const [row] = await this.db.select({ id: projects.id }).from(projects).where(where).limit(1);
    return row !== undefined;
  }

  /**
   * A project named by a person (409 when its slug is taken) or made automatically (`automatic`: a taken slug
   * gets a random suffix), with its Default Agent, and the creator's project key when a person created it.
   */
  create(organizationId: string, name: string, opts: { creatorUserId: string; automatic?: boolean }): Promise<{ project: Project; apiKey: string }>;
  create(organizationId: string, name: string, opts?: { automatic?: boolean }): Promise<{ project: Project; apiKey: null }>;
  async create(organizationId: string, name: string, opts: { creatorUserId?: string; automatic?: boolean } = {}): Promise<{ project: Project; apiKey: string | null }> {
    return this.deps.store.transaction(async () => {
      let slug = slugify(name) || "project";
      if (await this.#slugOwner(organizationId, slug)) {
        if (!opts.automatic) throw slugTaken(slug);
        slug = `${slug}-${newShortId(6)}`;
      }
      const now = nowIso();
      const project: Project = { id: newShortId(), organizationId, name, slug, createdAt: now, updatedAt: now };
      await this.db.insert(this.t.projects).values(project);
      await this.#audit(organizationId, project.id, null, project);
      await this.agents.createDefault(project.id);
      const apiKey = opts.creatorUserId ? await this.apiKeys.keyFor({ kind: "project", userId: opts.creatorUserId, projectId: project.id, organizationId }) : null;
      return { project, apiKey };
    });
  }

  /** Renames a project; its slug is derived again (409 when another project of the organization has it). */
  async rename(organizationId: string, projectId: string, name: string): Promise<Project> {
    const before = await this.get(organizationId, projectId);
    const slug = slugify(name) || "project";
    if (await this.#slugOwner(organizationId, slug, projectId)) throw slugTaken(slug);
    const { projects } = this.t;
    await this.deps.store.transaction(async () => {
      await this.db.update(projects).set({ name, slug, updatedAt: nowIso() }).where(eq(projects.id, projectId));
      await this.#audit(organizationId, projectId, before, { ...before, name, slug });
    });
    return this.get(organizationId, projectId);
  }

  /** Deletes a project and everything in it; the organization keeps at least one project. */
  async delete(organizationId: string, projectId: string): Promise<void> {
    const before = await this.get(organizationId, projectId);
    const { projects } = this.t;
    await Promise.all([this.requestLogs.flush(), this.spend.flush()]);
    await this.deps.store.transaction(async () => {
      await this.deps.store.lockKey(`projects:${organizationId}`);
      const all = await this.db.select({ id: projects.id }).from(projects).where(eq(projects.organizationId, organizationId));
      if (all.length <= 1) throw badRequest(ONLY_PROJECT_MESSAGE);
      await this.#purge([projectId], organizationId);
      await this.db.delete(projects).where(eq(projects.id, projectId));
      await this.#audit(organizationId, projectId, before, null);
    });
  }

  /** A project's change in the current write's audit event (docs/operations.md#audit-log). */
  #audit(organizationId: string, projectId: string, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "project", targetId: projectId, organizationId, projectId, before, after });
  }

  /** Deletes an organization with everything in it (its projects, members' keys, secrets, budgets, logs). */
  async deleteOrganization(organizationId: string): Promise<void> {
    const { organizations } = this.t;
    await Promise.all([this.requestLogs.flush(), this.spend.flush()]);
    await this.deps.store.transaction(async () => {
      const ids = (await this.list(organizationId)).map((p) => p.id);
      await this.#purge(ids, organizationId);
      await this.#announceSecrets(and(eq(this.t.secrets.scope, "organization"), eq(this.t.secrets.organizationId, organizationId))!, "organization");
      // Its request logs went with its projects (#purge walks the per-project index).
      const { budgetSpend } = this.t;
      await this.db.delete(budgetSpend).where(eq(budgetSpend.organizationId, organizationId));
      const [gone] = await this.db.delete(organizations).where(eq(organizations.id, organizationId)).returning();
      await this.deps.audit.record({ targetType: "organization", targetId: organizationId, organizationId, projectId: null, before: gone ?? null, after: null });
      this.deps.events.emit({ kind: "organization", organizationId });
    });
  }

  /**
   * What the cascades do not reach: the projects' request logs and spend records (written in batches: callers flush this
   * process's queue first). The gateway is told about every agent that goes, so their tokens stop working at once.
   */
  async #purge(projectIds: string[], organizationId: string): Promise<void> {
    if (projectIds.length === 0) return;
    const { agents, requestLogs, spendRecords } = this.t;
    const gone = await this.db.select({ id: agents.id, projectId: agents.projectId }).from(agents).where(inArray(agents.projectId, projectIds));
    await this.db.delete(requestLogs).where(and(eq(requestLogs.organizationId, organizationId), inArray(requestLogs.projectId, projectIds)));
    await this.db.delete(spendRecords).where(and(eq(spendRecords.organizationId, organizationId), inArray(spendRecords.projectId, projectIds)));
    for (const a of gone) this.deps.events.emit({ kind: "agent", projectId: a.projectId, agentId: a.id });
    await this.#announceSecrets(and(eq(this.t.secrets.scope, "project"), inArray(this.t.secrets.projectId, projectIds))!, "project");
  }

  /**
   * The cascade deletes these secrets without the secret service: each is announced as a secret change, as a delete
   * through the API would be, so that what holds something for one lets go — a Vault database lease is revoked
   * (services/storeRefChanges.ts, docs/vault.md#database-leases) — here and on every other instance.
   */
  async #announceSecrets(which: SQL, scope: "project" | "organization"): Promise<void> {
    const { secrets } = this.t;
    const rows = await this.db.select({ id: secrets.id }).from(secrets).where(which);
    for (const r of rows) this.deps.events.emit({ kind: "secret", scope, id: r.id });
  }
}
