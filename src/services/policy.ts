// Policy rules of one scope (docs/policy.md#rules): draft CRUD, ordering, the Default Rule, publish into numbered
// generations (new ids, same logicalId; newest 10 kept) and the published rules the gateway enforces.
import { and, asc, desc, eq, inArray, isNull, lt, max, type SQL } from "drizzle-orm";
import { ApiError, conflict, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { PolicyScope, RateWindow, RuleAction, RuleCondition, RuleIdentity, RuleTarget } from "../core/model.ts";
import { grantSetRules } from "../core/grantRules.ts";
import type { RuleInput } from "../core/policy.ts";
import type { PolicyRule } from "../core/records/policy.ts";
import type { PolicyRuleRow } from "../store/rows.ts";
import type { BlocklistService } from "./blocklist.ts";
import type { ServiceDeps } from "./deps.ts";
import type { GrantService } from "./grants.ts";
import type { PolicyOwner } from "./policyOwner.ts";

export type { PolicyRuleRow };
export type { PolicyOwner } from "./policyOwner.ts";

export interface RuleFields {
  name: string;
  description: string | null;
  enabled: boolean;
  action: RuleAction;
  rateLimit: number | null;
  rateLimitWindow: RateWindow | null;
  requireApproval: boolean;
  conditions: RuleCondition[] | null;
  identities: RuleIdentity[];
  targets: RuleTarget[];
}

export const RULE_NOT_FOUND = "Policy rule not found.";
const KEEP_GENERATIONS = 10;
const unprocessable = (message: string) => ApiError.envelope(422, message);

/** Looks up what rule targets name, so a rule can only reference what exists in its organization. */
export interface ReferenceChecker {
  /** Provider of a connection, with its owner; null when none exists. */
  connection(id: string): Promise<{ provider: string; scope: "project" | "organization"; organizationId: string; projectId: string | null } | null>;
  /** Whether the catalog knows the provider, and which of `tools` it does not know. */
  provider(provider: string): { known: boolean; unknownTools(tools: string[]): string[] };
}

export const noConnections: ReferenceChecker = {
  connection: async () => null,
  provider: () => ({ known: false, unknownTools: (tools) => tools }),
};

export class PolicyService {
  references: ReferenceChecker = noConnections;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly blocklist: BlocklistService,
    private readonly grants: GrantService,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  private ownerWhere(owner: PolicyOwner): SQL {
    const { policyRules } = this.t;
    return owner.scope === "project"
      ? and(eq(policyRules.scope, "project"), eq(policyRules.projectId, owner.projectId))!
      : and(eq(policyRules.scope, "organization"), eq(policyRules.organizationId, owner.organizationId), isNull(policyRules.projectId))!;
  }

  view(row: PolicyRuleRow): PolicyRule {
    const { organizationId: _o, projectId: _p, ...rest } = row;
    return rest;
  }

  /**
   * The live managed rules of a scope, read-only (`?include=managed`): its blocklist rules and, for a project,
   * the grant rules of every agent (agents in list order), read with a fixed number of queries.
   */
  async managedRules(owner: PolicyOwner): Promise<PolicyRule[]> {
    const blocklist = await this.blocklist.managedRules(owner.organizationId, owner.scope === "project" ? owner.projectId : null);
    const rules: RuleInput[] = owner.scope === "project" ? [...blocklist.project] : [...blocklist.organization];
    if (owner.scope === "project") for (const g of await this.grants.grantsOfProject(owner.projectId)) rules.push(...grantSetRules(g.agent, g));
    return rules.map((r) => managedRuleView(r, owner.scope));
  }

  /** A draft rule's change in the current write's audit event (docs/operations.md#audit-log). */
  #audit(rule: PolicyRuleRow, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "policy_rule", targetId: rule.id, projectId: rule.projectId, before, after });
  }

  /** The rule set of a project or an organization, as the target of a reorder or a publish. */
  #ownerTarget(owner: PolicyOwner) {
    return owner.scope === "project"
      ? { targetType: "project_policy", targetId: owner.projectId, projectId: owner.projectId }
      : { targetType: "organization_policy", targetId: owner.organizationId, projectId: null };
  }

  private emit(owner: PolicyOwner): void {
    this.deps.events.emit({ kind: "policy", organizationId: owner.organizationId });
  }

  // ── reads ───────────────────────────────────────────────────────────────────────────────────────────

  drafts(owner: PolicyOwner): Promise<PolicyRuleRow[]> {
    const { policyRules } = this.t;
    return this.db
      .select()
      .from(policyRules)
      .where(and(this.ownerWhere(owner), eq(policyRules.status, "draft")))
      .orderBy(asc(policyRules.priority), asc(policyRules.id));
  }

  async newestGeneration(owner: PolicyOwner): Promise<number> {
    const { policyRules } = this.t;
    const [row] = await this.db.select({ g: max(policyRules.generation) }).from(policyRules).where(and(this.ownerWhere(owner), eq(policyRules.status, "published")));
    return row?.g ?? 0;
  }

  /** The enforced rules: the newest published generation (custom and Default), ordered. */
  async published(owner: PolicyOwner): Promise<PolicyRuleRow[]> {
    const { policyRules } = this.t;
    const generation = await this.newestGeneration(owner);
    if (generation === 0) return [];
    return this.db
      .select()
      .from(policyRules)
      .where(and(this.ownerWhere(owner), eq(policyRules.status, "published"), eq(policyRules.generation, generation)))
      .orderBy(asc(policyRules.priority), asc(policyRules.id));
  }

  async customRules(owner: PolicyOwner, status: "draft" | "published"): Promise<PolicyRuleRow[]> {
    return (status === "draft" ? await this.drafts(owner) : await this.published(owner)).filter((r) => !r.isDefault);
  }

  async getDraft(owner: PolicyOwner, id: string): Promise<PolicyRuleRow> {
    const { policyRules } = this.t;
    const [row] = await this.db
      .select()
      .from(policyRules)
      .where(and(this.ownerWhere(owner), eq(policyRules.status, "draft"), eq(policyRules.id, id), eq(policyRules.isDefault, false)))
      .limit(1);
    if (!row) throw notFound(RULE_NOT_FOUND);
    return row;
  }

  async defaultRule(owner: PolicyOwner, status: "draft" | "published"): Promise<PolicyRuleRow | null> {
    return (status === "draft" ? await this.drafts(owner) : await this.published(owner)).find((r) => r.isDefault) ?? null;
  }

  async lastPublish(owner: PolicyOwner) {
    const { policyPublishes } = this.t;
    const [row] = await this.db
      .select()
      .from(policyPublishes)
      .where(
        and(
          eq(policyPublishes.scope, owner.scope),
          eq(policyPublishes.organizationId, owner.organizationId),
          owner.scope === "project" ? eq(policyPublishes.projectId, owner.projectId) : isNull(policyPublishes.projectId),
        ),
      )
      .orderBy(desc(policyPublishes.generation))
      .limit(1);
    if (!row) return null;
    const appliedBy = row.appliedByEmail ? { name: row.appliedByName, email: row.appliedByEmail } : null;
    return { generation: row.generation, ruleCount: row.ruleCount, appliedAt: row.appliedAt, appliedBy };
  }

  // ── writes ──────────────────────────────────────────────────────────────────────────────────────────

  /** The service checks of docs/policy.md#rules create body, in order, on a complete (merged) rule. */
  async check(owner: PolicyOwner, rule: RuleFields): Promise<void> {
    const { secrets, projects, agents } = this.t;
    if (rule.action === "block" && (rule.rateLimit !== null || rule.rateLimitWindow !== null || rule.requireApproval)) {
      throw unprocessable("rate-limit and approval modifiers require action = allow");
    }
    if ((rule.rateLimit === null) !== (rule.rateLimitWindow === null)) throw unprocessable("rateLimit and rateLimitWindow must be provided together");
    if (rule.targets.length === 0) throw unprocessable("A rule must name at least one target.");
    for (const t of rule.targets) {
      if (t.kind === "secret" && (t.secretId === undefined) === (t.secretScope === undefined)) {
        throw unprocessable("A secret target must name either a specific secret or a level, not both.");
      }
    }
    const secretRows: ((typeof secrets.$inferSelect) | null)[] = [];
    /** The connection each connection target names (null: none exists), by connection id. */
    const connectionsById = new Map<string, Awaited<ReturnType<ReferenceChecker["connection"]>>>();
    for (const t of rule.targets) {
      if (t.kind === "secret" && t.secretId) secretRows.push((await this.db.select().from(secrets).where(eq(secrets.id, t.secretId)).limit(1))[0] ?? null);
      if (t.kind === "connection" && !connectionsById.has(t.connectionId)) connectionsById.set(t.connectionId, await this.references.connection(t.connectionId));
    }
    const connectionList = [...connectionsById.values()];
    if (owner.scope === "project") {
      const orgLevel =
        rule.targets.some((t) => t.kind === "secret" && t.secretScope === "organization") ||
        secretRows.some((s) => s && s.scope === "organization" && s.organizationId === owner.organizationId) ||
        connectionList.some((c) => c && c.scope === "organization" && c.organizationId === owner.organizationId);
      if (orgLevel) throw unprocessable("A project rule's target can't scope to organization-level resources.");
    }
    const belongs = (o: { organizationId: string | null; projectId: string | null }) =>
      o.organizationId === owner.organizationId && (owner.scope === "organization" || o.projectId === null || o.projectId === owner.projectId);
    const projectOrg = async (projectId: string | null) =>
      projectId ? ((await this.db.select().from(projects).where(eq(projects.id, projectId)).limit(1))[0]?.organizationId ?? null) : null;
    let foreign = secretRows.some((s) => s && s.scope === "partner") || connectionList.some((c) => c && !belongs(c));
    for (const s of secretRows) {
      if (s && s.scope !== "partner" && !belongs({ organizationId: s.organizationId ?? (await projectOrg(s.projectId)), projectId: s.projectId })) foreign = true;
    }
    if (foreign) throw unprocessable("A referenced connection or secret does not belong to this organization.");
    const agentIds = rule.identities.map((i) => i.id);
    const agentRows = agentIds.length
      ? await this.db.select({ id: agents.id, projectId: agents.projectId, organizationId: projects.organizationId }).from(agents).innerJoin(projects, eq(agents.projectId, projects.id)).where(inArray(agents.id, agentIds))
      : [];
    const agentOk = (id: string) => agentRows.some((a) => a.id === id && a.organizationId === owner.organizationId && (owner.scope === "organization" || a.projectId === owner.projectId));
    if (!agentIds.every(agentOk) || secretRows.some((s) => s === null) || connectionList.some((c) => c === null)) {
      throw unprocessable("A referenced identity or resource does not exist.");
    }
    for (const t of rule.targets) {
      if (t.kind !== "app" && t.kind !== "connection") continue;
      const provider = t.kind === "app" ? t.provider : connectionsById.get(t.connectionId)!.provider;
      const known = this.references.provider(provider);
      if (!known.known) throw unprocessable(`Unknown provider: ${provider}`);
      const unknown = known.unknownTools(t.tools);
      if (unknown.length > 0) throw unprocessable(`Unknown tool id(s) for "${provider}": ${unknown.join(", ")}`);
    }
  }

  async create(owner: PolicyOwner, fields: RuleFields): Promise<PolicyRuleRow> {
    await this.check(owner, fields);
    const priority = (await this.drafts(owner)).filter((r) => !r.isDefault).reduce((m, r) => Math.max(m, r.priority), 0) + 1;
    const now = nowIso();
    const row: PolicyRuleRow = {
      id: newId(),
      logicalId: newId(),
      scope: owner.scope,
      organizationId: owner.organizationId,
      projectId: owner.scope === "project" ? owner.projectId : null,
      status: "draft",
      generation: 0,
      priority,
      isDefault: false,
      source: "custom",
      ...fields,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.policyRules).values(row);
      await this.#audit(row, null, row);
    });
    return row;
  }

  async update(owner: PolicyOwner, id: string, patch: Partial<RuleFields>): Promise<PolicyRuleRow> {
    const current = await this.getDraft(owner, id);
    const merged: RuleFields = { ...pickFields(current), ...patch };
    await this.check(owner, merged);
    return this.deps.store.transaction(async () => {
      await this.db.update(this.t.policyRules).set({ ...patch, updatedAt: nowIso() }).where(eq(this.t.policyRules.id, id));
      const after = await this.getDraft(owner, id);
      await this.#audit(after, current, after);
      return after;
    });
  }

  async delete(owner: PolicyOwner, id: string): Promise<void> {
    const row = await this.getDraft(owner, id);
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t.policyRules).where(eq(this.t.policyRules.id, id));
      await this.#audit(row, row, null);
    });
  }

  async reorder(owner: PolicyOwner, orderedIds: string[]): Promise<PolicyRuleRow[]> {
    const { policyRules } = this.t;
    const custom = await this.customRules(owner, "draft");
    const ids = new Set(custom.map((r) => r.id));
    if (orderedIds.length !== ids.size || new Set(orderedIds).size !== orderedIds.length || !orderedIds.every((id) => ids.has(id))) {
      throw conflict("Rule set changed — refresh and try again.");
    }
    await this.deps.store.transaction(async () => {
      for (const [i, id] of orderedIds.entries()) await this.db.update(policyRules).set({ priority: i + 1 }).where(eq(policyRules.id, id));
      const order = (rows: PolicyRuleRow[]) => [...rows].sort((a, b) => a.priority - b.priority).map((r) => r.id);
      await this.deps.audit.record({ ...this.#ownerTarget(owner), before: { order: order(custom) }, after: { order: orderedIds } });
    });
    return this.customRules(owner, "draft");
  }

  async setDefault(owner: PolicyOwner, action: RuleAction): Promise<PolicyRuleRow> {
    const existing = await this.defaultRule(owner, "draft");
    return this.deps.store.transaction(async () => {
      if (!existing) {
        const row = await this.insertDefault(owner, action);
        await this.#audit(row, null, row);
        return row;
      }
      await this.db.update(this.t.policyRules).set({ action, updatedAt: nowIso() }).where(eq(this.t.policyRules.id, existing.id));
      await this.#audit(existing, existing, { ...existing, action });
      return { ...existing, action };
    });
  }

  private async insertDefault(owner: PolicyOwner, action: RuleAction): Promise<PolicyRuleRow> {
    const now = nowIso();
    const row: PolicyRuleRow = {
      id: newId(),
      logicalId: newId(),
      scope: owner.scope,
      organizationId: owner.organizationId,
      projectId: owner.scope === "project" ? owner.projectId : null,
      status: "draft",
      generation: 0,
      priority: 0,
      enabled: true,
      isDefault: true,
      source: "default",
      name: "Default Rule",
      description: null,
      action,
      rateLimit: null,
      rateLimitWindow: null,
      requireApproval: false,
      conditions: null,
      identities: [],
      targets: [],
      createdAt: now,
      updatedAt: now,
    };
    await this.db.insert(this.t.policyRules).values(row);
    return row;
  }

  async publish(owner: PolicyOwner, by: { name: string | null; email: string } | null): Promise<{ generation: number; ruleCount: number }> {
    const { policyRules, policyPublishes } = this.t;
    const result = await this.deps.store.transaction(async () => {
      if (!(await this.defaultRule(owner, "draft"))) await this.insertDefault(owner, "allow");
      const drafts = await this.drafts(owner);
      const generation = (await this.newestGeneration(owner)) + 1;
      const now = nowIso();
      for (const d of drafts) await this.db.insert(policyRules).values({ ...d, id: newId(), status: "published", generation, updatedAt: now });
      await this.db
        .delete(policyRules)
        .where(and(this.ownerWhere(owner), eq(policyRules.status, "published"), lt(policyRules.generation, generation - KEEP_GENERATIONS + 1)));
      await this.db
        .insert(policyPublishes)
        .values({
          id: newId(),
          scope: owner.scope,
          organizationId: owner.organizationId,
          projectId: owner.scope === "project" ? owner.projectId : null,
          generation,
          ruleCount: drafts.length,
          appliedAt: now,
          appliedByName: by?.name ?? null,
          appliedByEmail: by?.email ?? null,
        });
      await this.deps.audit.record({ ...this.#ownerTarget(owner), before: null, after: { generation, ruleCount: drafts.length } });
      return { generation, ruleCount: drafts.length };
    });
    this.emit(owner);
    return result;
  }

  /** Every published rule of an organization and its projects, for the gateway snapshot. */
  async publishedForOrganization(organizationId: string): Promise<{ organization: PolicyRuleRow[]; projects: Map<string, PolicyRuleRow[]> }> {
    const { policyRules } = this.t;
    const rows = await this.db.select().from(policyRules).where(and(eq(policyRules.organizationId, organizationId), eq(policyRules.status, "published")));
    const newest = new Map<string, number>();
    const key = (r: PolicyRuleRow) => r.projectId ?? "";
    for (const r of rows) newest.set(key(r), Math.max(newest.get(key(r)) ?? 0, r.generation));
    const live = rows.filter((r) => r.generation === newest.get(key(r))).sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id));
    const projectsMap = new Map<string, PolicyRuleRow[]>();
    for (const r of live) if (r.projectId) projectsMap.set(r.projectId, [...(projectsMap.get(r.projectId) ?? []), r]);
    return { organization: live.filter((r) => r.projectId === null), projects: projectsMap };
  }
}

const EPOCH = "1970-01-01T00:00:00.000Z";

/** A managed rule as the rule record shows it: published, unnumbered, without description or conditions. */
function managedRuleView(r: RuleInput, scope: PolicyScope): PolicyRule {
  return {
    id: r.id,
    logicalId: r.logicalId,
    scope,
    status: "published",
    generation: 0,
    priority: 0,
    enabled: r.enabled,
    isDefault: r.isDefault,
    source: r.source,
    name: r.name,
    description: null,
    action: r.action,
    rateLimit: r.rateLimit,
    rateLimitWindow: r.rateLimitWindow,
    requireApproval: r.requireApproval,
    // Managed rules (blocklist hosts, grants) never have body conditions.
    conditions: null,
    identities: r.identities.map((i) => ({ type: "agent", id: i.id })),
    targets: r.targets,
    createdAt: EPOCH,
    updatedAt: EPOCH,
  };
}

export function pickFields(r: PolicyRuleRow): RuleFields {
  return {
    name: r.name,
    description: r.description,
    enabled: r.enabled,
    action: r.action,
    rateLimit: r.rateLimit,
    rateLimitWindow: r.rateLimitWindow,
    requireApproval: r.requireApproval,
    conditions: r.conditions,
    identities: r.identities,
    targets: r.targets,
  };
}

export type { PolicyScope };
