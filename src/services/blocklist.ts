// App blocklists (docs/policy.md#app-blocklists): predefined hosts of an app, activated
// on demand, and custom host rules. Each enabled entry is a managed block rule, live as soon as written.
import { and, asc, eq, isNull, or } from "drizzle-orm";
import type { AppDefinition } from "../apps/types.ts";
import type { RuleInput } from "../core/policy.ts";
import { ApiError } from "../core/errors.ts";
import { creationTime, newId, nowIso } from "../core/ids.ts";
import type { BlocklistRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import type { PolicyOwner } from "./policyOwner.ts";
import type { BlocklistEntry } from "../core/records/apps.ts";

export type { BlocklistEntry };

export type { BlocklistRow };

export const RULE_NOT_FOUND = "Blocklist rule not found";
const ALREADY_BLOCKED = "This host is already blocked";

export class BlocklistService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  private ownerWhere(owner: PolicyOwner) {
    const { blocklistRules } = this.t;
    return owner.scope === "project"
      ? and(eq(blocklistRules.scope, "project"), eq(blocklistRules.projectId, owner.projectId))!
      : and(eq(blocklistRules.scope, "organization"), eq(blocklistRules.organizationId, owner.organizationId))!;
  }

  private rows(owner: PolicyOwner, provider: string): Promise<BlocklistRow[]> {
    const { blocklistRules } = this.t;
    return this.db
      .select()
      .from(blocklistRules)
      .where(and(this.ownerWhere(owner), eq(blocklistRules.provider, provider)))
      .orderBy(asc(blocklistRules.createdAt), asc(blocklistRules.id));
  }

  private entry(row: BlocklistRow): BlocklistEntry {
    return { hostId: row.hostId, ruleId: row.id, enabled: row.enabled, custom: row.custom, name: row.name, hostPattern: row.hostPattern, scope: row.scope };
  }

  /** Every predefined host (active or not) plus the custom rules; an organization rule wins in a project's view. */
  async list(owner: PolicyOwner, app: AppDefinition): Promise<BlocklistEntry[]> {
    const org = await this.rows({ scope: "organization", organizationId: owner.organizationId }, app.id);
    const own = owner.scope === "project" ? await this.rows(owner, app.id) : [];
    const ruleFor = (hostId: string) => org.find((r) => r.hostId === hostId) ?? own.find((r) => r.hostId === hostId);
    const predefined = app.blocklist.map((h): BlocklistEntry => {
      const row = ruleFor(h.id);
      return row ? this.entry(row) : { hostId: h.id, ruleId: null, enabled: false, custom: false, name: h.name, hostPattern: h.hostPattern, scope: null };
    });
    const customs: BlocklistEntry[] = [];
    for (const row of [...org, ...own]) {
      if (row.custom && !customs.some((c) => c.hostId === row.hostId)) customs.push(this.entry(row));
    }
    return [...predefined, ...customs];
  }

  /** Activates a predefined host of the app in this scope. */
  activate(owner: PolicyOwner, app: AppDefinition, hostId: string): Promise<BlocklistEntry> {
    const host = app.blocklist.find((h) => h.id === hostId);
    if (!host) throw ApiError.envelope(400, "Unknown blocklist host ID");
    return this.insert(owner, app.id, { hostId: host.id, custom: false, name: host.name, hostPattern: host.hostPattern });
  }

  /** A custom rule; its hostId is `custom:<hostPattern>`. */
  addCustom(owner: PolicyOwner, app: AppDefinition, name: string, hostPattern: string): Promise<BlocklistEntry> {
    return this.insert(owner, app.id, { hostId: `custom:${hostPattern}`, custom: true, name, hostPattern });
  }

  private async insert(owner: PolicyOwner, provider: string, fields: { hostId: string; custom: boolean; name: string; hostPattern: string }): Promise<BlocklistEntry> {
    const { blocklistRules } = this.t;
    const existing = (await this.rows(owner, provider)).find((r) => r.hostId === fields.hostId);
    const now = creationTime();
    if (existing?.enabled) throw ApiError.envelope(409, ALREADY_BLOCKED);
    const row = await this.deps.store.transaction(async () => {
      let row: BlocklistRow;
      if (existing) {
        [row] = (await this.db.update(blocklistRules).set({ enabled: true, name: fields.name, updatedAt: now }).where(eq(blocklistRules.id, existing.id)).returning()) as [BlocklistRow];
      } else {
        [row] = (await this.db
          .insert(blocklistRules)
          .values({
            id: newId(),
            scope: owner.scope,
            organizationId: owner.organizationId,
            projectId: owner.scope === "project" ? owner.projectId : null,
            provider,
            ...fields,
            enabled: true,
            createdAt: now,
            updatedAt: now,
          })
          .returning()) as [BlocklistRow];
      }
      await this.#audit(row, existing ?? null, row);
      return row;
    });
    this.changed(owner.organizationId);
    return this.entry(row);
  }

  private async owned(owner: PolicyOwner, provider: string, ruleId: string): Promise<BlocklistRow> {
    const { blocklistRules } = this.t;
    const [row] = await this.db
      .select()
      .from(blocklistRules)
      .where(and(eq(blocklistRules.id, ruleId), eq(blocklistRules.provider, provider), this.ownerWhere(owner)))
      .limit(1);
    if (!row) throw ApiError.envelope(404, RULE_NOT_FOUND);
    return row;
  }

  async setEnabled(owner: PolicyOwner, provider: string, ruleId: string, enabled: boolean): Promise<void> {
    const row = await this.owned(owner, provider, ruleId);
    await this.deps.store.transaction(async () => {
      await this.db.update(this.t.blocklistRules).set({ enabled, updatedAt: nowIso() }).where(eq(this.t.blocklistRules.id, row.id));
      await this.#audit(row, row, { ...row, enabled });
    });
    this.changed(owner.organizationId);
  }

  async delete(owner: PolicyOwner, provider: string, ruleId: string): Promise<void> {
    const row = await this.owned(owner, provider, ruleId);
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t.blocklistRules).where(eq(this.t.blocklistRules.id, row.id));
      await this.#audit(row, row, null);
    });
    this.changed(owner.organizationId);
  }

  /** A blocklist rule's change in the current write's audit event (docs/operations.md#audit-log). */
  #audit(rule: BlocklistRow, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "blocklist_rule", targetId: rule.id, projectId: rule.projectId, before, after });
  }

  /**
   * The managed block rules of an organization (scope organization) and of one project (scope project):
   * one per enabled entry, no identities, network target `{hostPattern, pathPattern:"/*"}`.
   */
  async managedRules(organizationId: string, projectId: string | null): Promise<{ organization: RuleInput[]; project: RuleInput[] }> {
    const { blocklistRules } = this.t;
    const rows = await this.db
      .select()
      .from(blocklistRules)
      .where(
        and(
          eq(blocklistRules.organizationId, organizationId),
          eq(blocklistRules.enabled, true),
          or(eq(blocklistRules.scope, "organization"), projectId ? eq(blocklistRules.projectId, projectId) : isNull(blocklistRules.id)),
        ),
      )
      .orderBy(asc(blocklistRules.createdAt), asc(blocklistRules.id));
    const rule = (r: BlocklistRow): RuleInput => ({
      id: r.id,
      logicalId: r.id,
      scope: r.scope,
      name: `Block ${r.name}`,
      enabled: true,
      isDefault: false,
      source: "blocklist",
      action: "block",
      rateLimit: null,
      rateLimitWindow: null,
      requireApproval: false,
      conditions: null,
      identities: [],
      targets: [{ kind: "network", hostPattern: r.hostPattern, pathPattern: "/*" }],
    });
    return { organization: rows.filter((r) => r.scope === "organization").map(rule), project: rows.filter((r) => r.scope === "project").map(rule) };
  }

  private changed(organizationId: string): void {
    this.deps.events.emit({ kind: "app", organizationId });
  }
}
