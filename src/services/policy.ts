// Policy rules of one scope (CONTRACT §5.3): draft CRUD, ordering, the Default Rule, publish into numbered
// generations (new ids, same logicalId; newest 10 kept) and the published rules the gateway enforces.
import { and, asc, desc, eq, inArray, isNull, lt, max, type SQL } from "drizzle-orm";
import { ApiError, conflict, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { agents, policyPublishes, policyRules, projects, secrets, type PolicyScope, type RateWindow, type RuleAction, type RuleCondition, type RuleIdentity, type RuleTarget } from "../store/schema.ts";
import type { ServiceDeps } from "./deps.ts";

export type PolicyRuleRow = typeof policyRules.$inferSelect;
export type PolicyOwner = { scope: "project"; organizationId: string; projectId: string } | { scope: "organization"; organizationId: string };

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
  connection(id: string): { provider: string; scope: "project" | "organization"; organizationId: string; projectId: string | null } | null;
  /** Whether the catalog knows the provider, and which of `tools` it does not know. */
  provider(provider: string): { known: boolean; unknownTools(tools: string[]): string[] };
}

export const noConnections: ReferenceChecker = {
  connection: () => null,
  provider: () => ({ known: false, unknownTools: (tools) => tools }),
};

export class PolicyService {
  references: ReferenceChecker = noConnections;

  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.db;
  }

  private ownerWhere(owner: PolicyOwner): SQL {
    return owner.scope === "project"
      ? and(eq(policyRules.scope, "project"), eq(policyRules.projectId, owner.projectId))!
      : and(eq(policyRules.scope, "organization"), eq(policyRules.organizationId, owner.organizationId), isNull(policyRules.projectId))!;
  }

  view(row: PolicyRuleRow): Omit<PolicyRuleRow, "organizationId" | "projectId"> {
    const { organizationId: _o, projectId: _p, ...rest } = row;
    return rest;
  }

  private emit(owner: PolicyOwner): void {
    this.deps.events.emit({ kind: "policy", organizationId: owner.organizationId });
  }

  // ── reads ───────────────────────────────────────────────────────────────────────────────────────────

  drafts(owner: PolicyOwner): PolicyRuleRow[] {
    return this.db
      .select()
      .from(policyRules)
      .where(and(this.ownerWhere(owner), eq(policyRules.status, "draft")))
      .orderBy(asc(policyRules.priority), asc(policyRules.id))
      .all();
  }

  newestGeneration(owner: PolicyOwner): number {
    const row = this.db.select({ g: max(policyRules.generation) }).from(policyRules).where(and(this.ownerWhere(owner), eq(policyRules.status, "published"))).get();
    return row?.g ?? 0;
  }

  /** The enforced rules: the newest published generation (custom and Default), ordered. */
  published(owner: PolicyOwner): PolicyRuleRow[] {
    const generation = this.newestGeneration(owner);
    if (generation === 0) return [];
    return this.db
      .select()
      .from(policyRules)
      .where(and(this.ownerWhere(owner), eq(policyRules.status, "published"), eq(policyRules.generation, generation)))
      .orderBy(asc(policyRules.priority), asc(policyRules.id))
      .all();
  }

  customRules(owner: PolicyOwner, status: "draft" | "published"): PolicyRuleRow[] {
    return (status === "draft" ? this.drafts(owner) : this.published(owner)).filter((r) => !r.isDefault);
  }

  getDraft(owner: PolicyOwner, id: string): PolicyRuleRow {
    const row = this.db
      .select()
      .from(policyRules)
      .where(and(this.ownerWhere(owner), eq(policyRules.status, "draft"), eq(policyRules.id, id), eq(policyRules.isDefault, false)))
      .get();
    if (!row) throw notFound(RULE_NOT_FOUND);
    return row;
  }

  defaultRule(owner: PolicyOwner, status: "draft" | "published"): PolicyRuleRow | null {
    return (status === "draft" ? this.drafts(owner) : this.published(owner)).find((r) => r.isDefault) ?? null;
  }

  lastPublish(owner: PolicyOwner) {
    const row = this.db
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
      .get();
    if (!row) return null;
    const appliedBy = row.appliedByEmail ? { name: row.appliedByName, email: row.appliedByEmail } : null;
    return { generation: row.generation, ruleCount: row.ruleCount, appliedAt: row.appliedAt, appliedBy };
  }

  // ── writes ──────────────────────────────────────────────────────────────────────────────────────────

  /** The service checks of CONTRACT §5.3 create body, in order, on a complete (merged) rule. */
  check(owner: PolicyOwner, rule: RuleFields): void {
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
    const secretRows = rule.targets.flatMap((t) => (t.kind === "secret" && t.secretId ? [this.db.select().from(secrets).where(eq(secrets.id, t.secretId)).get() ?? null] : []));
    const connectionRows = rule.targets.flatMap((t) => (t.kind === "connection" ? [this.references.connection(t.connectionId)] : []));
    if (owner.scope === "project") {
      const orgLevel =
        rule.targets.some((t) => t.kind === "secret" && t.secretScope === "organization") ||
        secretRows.some((s) => s && s.scope === "organization" && s.organizationId === owner.organizationId) ||
        connectionRows.some((c) => c && c.scope === "organization" && c.organizationId === owner.organizationId);
      if (orgLevel) throw unprocessable("A project rule's target can't scope to organization-level resources.");
    }
    const belongs = (o: { organizationId: string | null; projectId: string | null }) =>
      o.organizationId === owner.organizationId && (owner.scope === "organization" || o.projectId === null || o.projectId === owner.projectId);
    const projectOrg = (projectId: string | null) => (projectId ? (this.db.select().from(projects).where(eq(projects.id, projectId)).get()?.organizationId ?? null) : null);
    const foreign =
      secretRows.some((s) => s && s.scope !== "partner" && !belongs({ organizationId: s.organizationId ?? projectOrg(s.projectId), projectId: s.projectId })) ||
      secretRows.some((s) => s && s.scope === "partner") ||
      connectionRows.some((c) => c && !belongs(c));
    if (foreign) throw unprocessable("A referenced connection or secret does not belong to this organization.");
    const agentIds = rule.identities.map((i) => i.id);
    const agentRows = agentIds.length
      ? this.db.select({ id: agents.id, projectId: agents.projectId, organizationId: projects.organizationId }).from(agents).innerJoin(projects, eq(agents.projectId, projects.id)).where(inArray(agents.id, agentIds)).all()
      : [];
    const agentOk = (id: string) => agentRows.some((a) => a.id === id && a.organizationId === owner.organizationId && (owner.scope === "organization" || a.projectId === owner.projectId));
    if (!agentIds.every(agentOk) || secretRows.some((s) => s === null) || connectionRows.some((c) => c === null)) {
      throw unprocessable("A referenced identity or resource does not exist.");
    }
    for (const t of rule.targets) {
      if (t.kind !== "app" && t.kind !== "connection") continue;
      const provider = t.kind === "app" ? t.provider : this.references.connection(t.connectionId)!.provider;
      const known = this.references.provider(provider);
      if (!known.known) throw unprocessable(`Unknown provider: ${provider}`);
      const unknown = known.unknownTools(t.tools);
      if (unknown.length > 0) throw unprocessable(`Unknown tool id(s) for "${provider}": ${unknown.join(", ")}`);
    }
  }

  create(owner: PolicyOwner, fields: RuleFields): PolicyRuleRow {
    this.check(owner, fields);
    const priority = this.drafts(owner).filter((r) => !r.isDefault).reduce((m, r) => Math.max(m, r.priority), 0) + 1;
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
    this.db.insert(policyRules).values(row).run();
    return row;
  }

  update(owner: PolicyOwner, id: string, patch: Partial<RuleFields>): PolicyRuleRow {
    const current = this.getDraft(owner, id);
    const merged: RuleFields = { ...pickFields(current), ...patch };
    this.check(owner, merged);
    this.db.update(policyRules).set({ ...patch, updatedAt: nowIso() }).where(eq(policyRules.id, id)).run();
    return this.getDraft(owner, id);
  }

  delete(owner: PolicyOwner, id: string): void {
    this.getDraft(owner, id);
    this.db.delete(policyRules).where(eq(policyRules.id, id)).run();
  }

  reorder(owner: PolicyOwner, orderedIds: string[]): PolicyRuleRow[] {
    const custom = this.customRules(owner, "draft");
    const ids = new Set(custom.map((r) => r.id));
    if (orderedIds.length !== ids.size || new Set(orderedIds).size !== orderedIds.length || !orderedIds.every((id) => ids.has(id))) {
      throw conflict("Rule set changed — refresh and try again.");
    }
    this.db.transaction((tx) => {
      orderedIds.forEach((id, i) => tx.update(policyRules).set({ priority: i + 1 }).where(eq(policyRules.id, id)).run());
    });
    return this.customRules(owner, "draft");
  }

  setDefault(owner: PolicyOwner, action: RuleAction): PolicyRuleRow {
    const existing = this.defaultRule(owner, "draft");
    if (existing) {
      this.db.update(policyRules).set({ action, updatedAt: nowIso() }).where(eq(policyRules.id, existing.id)).run();
      return { ...existing, action };
    }
    return this.insertDefault(owner, action);
  }

  private insertDefault(owner: PolicyOwner, action: RuleAction): PolicyRuleRow {
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
    this.db.insert(policyRules).values(row).run();
    return row;
  }

  publish(owner: PolicyOwner, by: { name: string | null; email: string } | null): { generation: number; ruleCount: number } {
    const result = this.db.transaction(() => {
      if (!this.defaultRule(owner, "draft")) this.insertDefault(owner, "allow");
      const drafts = this.drafts(owner);
      const generation = this.newestGeneration(owner) + 1;
      const now = nowIso();
      for (const d of drafts) this.db.insert(policyRules).values({ ...d, id: newId(), status: "published", generation, updatedAt: now }).run();
      this.db
        .delete(policyRules)
        .where(and(this.ownerWhere(owner), eq(policyRules.status, "published"), lt(policyRules.generation, generation - KEEP_GENERATIONS + 1)))
        .run();
      this.db
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
        })
        .run();
      return { generation, ruleCount: drafts.length };
    });
    this.emit(owner);
    return result;
  }

  /** Every published rule of an organization and its projects, for the gateway snapshot. */
  publishedForOrganization(organizationId: string): { organization: PolicyRuleRow[]; projects: Map<string, PolicyRuleRow[]> } {
    const rows = this.db.select().from(policyRules).where(and(eq(policyRules.organizationId, organizationId), eq(policyRules.status, "published"))).all();
    const newest = new Map<string, number>();
    const key = (r: PolicyRuleRow) => r.projectId ?? "";
    for (const r of rows) newest.set(key(r), Math.max(newest.get(key(r)) ?? 0, r.generation));
    const live = rows.filter((r) => r.generation === newest.get(key(r))).sort((a, b) => a.priority - b.priority || a.id.localeCompare(b.id));
    const projectsMap = new Map<string, PolicyRuleRow[]>();
    for (const r of live) if (r.projectId) projectsMap.set(r.projectId, [...(projectsMap.get(r.projectId) ?? []), r]);
    return { organization: live.filter((r) => r.projectId === null), projects: projectsMap };
  }
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
