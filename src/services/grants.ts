// Agent grants (CONTRACT §3.2, §5.1 "Grants"): which secrets (and, with the apps issue, which app
// connections) an agent in mode `grants` may use. Writes take effect at once: the gateway listens.
import { and, eq, inArray, or } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { nowIso } from "../core/ids.ts";
import { agentSecretGrants, secrets, type AgentMode, type SecretScope, type SecretType } from "../store/schema.ts";
import type { AgentService } from "./agents.ts";
import type { ServiceDeps } from "./deps.ts";

export interface SecretGrant {
  secretId: string;
  name: string;
  type: SecretType;
  scope: SecretScope;
}

export interface GrantSet {
  agentId: string;
  mode: AgentMode;
  connections: unknown[];
  secrets: SecretGrant[];
}

export const CONNECTION_NOT_FOUND = "Connection not found";

export class GrantService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly agents: AgentService,
  ) {}

  private get db() {
    return this.deps.db;
  }

  /** The secret ids of the attachable pool (the project's own and its organization's) among `ids`. */
  private attachable(projectId: string, organizationId: string, ids: string[]): Set<string> {
    if (ids.length === 0) return new Set();
    const rows = this.db
      .select({ id: secrets.id })
      .from(secrets)
      .where(
        and(
          inArray(secrets.id, ids),
          or(and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)), and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId))),
        ),
      )
      .all();
    return new Set(rows.map((r) => r.id));
  }

  /** The secret rows an agent may inject: partner secrets always; the others in mode `all` or when granted. */
  injectableRows(agent: { id: string; projectId: string; mode: AgentMode }, organizationId: string, partnerId: string | null) {
    const rows = this.deps.db.transaction(() => ({ rows: this.secretRows(agent.projectId, organizationId, partnerId), granted: new Set(this.secretIds(agent.id)) }));
    return rows.rows.filter((s) => s.scope === "partner" || agent.mode === "all" || rows.granted.has(s.id));
  }

  private secretRows(projectId: string, organizationId: string, partnerId: string | null) {
    const scopes = [
      and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)),
      and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId)),
    ];
    if (partnerId) scopes.push(and(eq(secrets.scope, "partner"), eq(secrets.partnerId, partnerId)));
    return this.db.select().from(secrets).where(or(...scopes)).all();
  }

  secretIds(agentId: string): string[] {
    return this.db.select({ id: agentSecretGrants.secretId }).from(agentSecretGrants).where(eq(agentSecretGrants.agentId, agentId)).all().map((r) => r.id);
  }

  /** agentId → granted secret ids, for every agent given. */
  secretIdsByAgent(agentIds: string[]): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    if (agentIds.length === 0) return out;
    for (const r of this.db.select().from(agentSecretGrants).where(inArray(agentSecretGrants.agentId, agentIds)).all()) {
      if (!out.has(r.agentId)) out.set(r.agentId, new Set());
      out.get(r.agentId)!.add(r.secretId);
    }
    return out;
  }

  grantSet(projectId: string, agentId: string): GrantSet {
    const agent = this.agents.get(projectId, agentId, "flat");
    const rows = this.db
      .select({ secretId: secrets.id, name: secrets.name, type: secrets.type, scope: secrets.scope, createdAt: agentSecretGrants.createdAt })
      .from(agentSecretGrants)
      .innerJoin(secrets, eq(agentSecretGrants.secretId, secrets.id))
      .where(eq(agentSecretGrants.agentId, agentId))
      .all()
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.secretId.localeCompare(b.secretId));
    return { agentId, mode: agent.mode, connections: [], secrets: rows.map(({ createdAt: _c, ...g }) => g) };
  }

  grantSecret(projectId: string, organizationId: string, agentId: string, secretId: string): GrantSet {
    this.agents.get(projectId, agentId, "flat");
    if (!this.attachable(projectId, organizationId, [secretId]).has(secretId)) throw ApiError.flat(404, "Secret not found");
    this.db.insert(agentSecretGrants).values({ agentId, secretId, createdAt: nowIso() }).onConflictDoNothing().run();
    this.changed(agentId);
    return this.grantSet(projectId, agentId);
  }

  revokeSecret(projectId: string, agentId: string, secretId: string): void {
    this.agents.get(projectId, agentId, "flat");
    this.db.delete(agentSecretGrants).where(and(eq(agentSecretGrants.agentId, agentId), eq(agentSecretGrants.secretId, secretId))).run();
    this.changed(agentId);
  }

  /** Legacy `PUT /agents/{id}/secrets`: replaces every secret grant, all or nothing. */
  replaceSecrets(projectId: string, organizationId: string, agentId: string, secretIds: string[]): void {
    this.agents.get(projectId, agentId);
    const unique = [...new Set(secretIds)];
    const found = this.attachable(projectId, organizationId, unique);
    if (found.size !== unique.length) throw ApiError.envelope(400, "One or more secrets not found");
    const now = nowIso();
    this.db.transaction((tx) => {
      tx.delete(agentSecretGrants).where(eq(agentSecretGrants.agentId, agentId)).run();
      for (const secretId of unique) tx.insert(agentSecretGrants).values({ agentId, secretId, createdAt: now }).run();
    });
    this.changed(agentId);
  }

  private changed(agentId: string): void {
    this.deps.events.emit({ kind: "grant", agentId });
  }
}
