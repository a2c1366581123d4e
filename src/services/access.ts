// Who may inject what (docs/injection.md#agent-modes, docs/injection.md#grants): for one agent, from its mode,
// its grants and the credentials its project can see — the project's and the organization's secrets and app
// connections, and the partner's secrets while the organization is partner-managed — which ones it may
// inject. The one answer the gateway snapshot, the agent setup (container-config) and effective credentials
// share, so what the API says an agent gets is what the gateway gives it.
import { findApp } from "../apps/index.ts";
import type { AgentMode, SecretScope } from "../core/model.ts";
import { credentialStatus } from "../core/policy.ts";
import type { CredentialStatus, EffectiveCredentials } from "../core/records/grants.ts";
import type { ConnectionGrantRow, ConnectionRow, OrganizationRow, SecretRow } from "../store/rows.ts";
import type { AgentService } from "./agents.ts";
import { agentRules } from "./agentRules.ts";
import type { AppCatalogService } from "./apps.ts";
import type { BlocklistService } from "./blocklist.ts";
import type { ConnectionService } from "./connections.ts";
import type { GrantService } from "./grants.ts";
import type { OrganizationService } from "./organizations.ts";
import type { PolicyService } from "./policy.ts";
import type { SecretService } from "./secrets.ts";

/** What the decision needs to know of an agent. */
export interface AccessAgent {
  id: string;
  projectId: string;
  organizationId: string;
  mode: AgentMode;
}

/** An agent's grants: the secrets it was given, and its grant of each connection it was given. */
export interface Grants<G> {
  secretIds: ReadonlySet<string>;
  connections: ReadonlyMap<string, G>;
}

/** Each credential the agent can see, and whether it may inject it. */
export interface Access<S, C, G> {
  secrets: { secret: S; injectable: boolean }[];
  connections: { connection: C; grant: G | null; injectable: boolean }[];
}

/**
 * The decision, pure: partner secrets apply in every mode (the partner pays for them, docs/budgets.md#partner-budgets);
 * the project's and the organization's secrets and connections in mode `all`, or in mode `grants` when
 * granted. Whether a connection can inject at all (its status) is the gateway's concern, not access.
 */
export function decideAccess<S extends { id: string; scope: SecretScope }, C extends { id: string }, G>(
  mode: AgentMode,
  grants: Grants<G>,
  secrets: S[],
  connections: C[],
): Access<S, C, G> {
  return {
    secrets: secrets.map((secret) => ({ secret, injectable: secret.scope === "partner" || mode === "all" || grants.secretIds.has(secret.id) })),
    connections: connections.map((connection) => {
      const grant = grants.connections.get(connection.id) ?? null;
      return { connection, grant, injectable: mode === "all" || grant !== null };
    }),
  };
}

/**
 * The database secrets an agent may use through the PostgreSQL broker (docs/databases.md#connecting), by name
 * (the startup `user`): those it may use by mode and grants, a project's over its organization's of the same
 * name, then the newest (`secrets` comes newest first). Partner secrets are never database secrets.
 */
export function usableDatabaseSecrets<S extends { name: string; scope: SecretScope; injectionConfig: { database?: unknown } | null }>(
  secrets: readonly { secret: S; injectable: boolean }[],
): Map<string, S> {
  const out = new Map<string, S>();
  for (const scope of ["project", "organization"] as const) {
    for (const { secret, injectable } of secrets) {
      if (injectable && secret.scope === scope && secret.injectionConfig?.database !== undefined && !out.has(secret.name)) out.set(secret.name, secret);
    }
  }
  return out;
}

/** The partner whose secrets an organization's agents receive: its partner while managed and not detached. */
export function servingPartner(organization: Pick<OrganizationRow, "partnerId" | "partnerDetached"> | null | undefined): string | null {
  return organization?.partnerId && !organization.partnerDetached ? organization.partnerId : null;
}

/** An agent's access as read from the store: secrets newest first, connections as the project lists them. */
export interface AgentAccess extends Access<SecretRow, ConnectionRow, ConnectionGrantRow> {
  organization: OrganizationRow | null;
}

type Deps = {
  agents: AgentService;
  orgs: OrganizationService;
  secrets: SecretService;
  grants: GrantService;
  connections: ConnectionService;
  apps: AppCatalogService;
  policy: PolicyService;
  blocklist: BlocklistService;
};

export class AccessService {
  constructor(private readonly s: Deps) {}

  /** Reads what the decision needs (five queries; four in mode `all`) and decides. */
  async forAgent(agent: AccessAgent): Promise<AgentAccess> {
    const organization = (await this.s.orgs.getOrganization(agent.organizationId)) ?? null;
    const secrets = (await this.s.secrets.rowsForGateway(agent.projectId, agent.organizationId, servingPartner(organization))).sort(
      (a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id),
    );
    const grants: Grants<ConnectionGrantRow> = {
      secretIds: new Set(agent.mode === "grants" ? await this.s.grants.secretIds(agent.id) : []),
      connections: new Map((await this.s.grants.connectionGrantRows(agent.id)).map((g) => [g.connectionId, g])),
    };
    const connections = await this.s.connections.listForProject(agent.projectId, agent.organizationId);
    return { organization, ...decideAccess(agent.mode, grants, secrets, connections) };
  }

  /**
   * `GET /agents/{id}/effective-credentials`: every credential the agent can see, `not_granted` when it may
   * not inject it, else how the published rules that apply to it treat it.
   */
  async effectiveCredentials(projectId: string, organizationId: string, agentId: string): Promise<EffectiveCredentials> {
    const row = await this.s.agents.get(projectId, agentId);
    const agent = { id: row.id, name: row.name, projectId, organizationId, mode: row.mode };
    const access = await this.forAgent(agent);
    const rules = await agentRules(this.s, organizationId, projectId, agent);
    const scopes = [rules.organization, rules.project];
    const judge = await this.s.apps.toolJudge({ scope: "project", projectId, organizationId }, agent);
    return {
      agentId: agent.id,
      mode: agent.mode,
      secrets: access.secrets.map(({ secret: s, injectable }) => ({
        id: s.id,
        name: s.name,
        type: s.type,
        scope: s.scope,
        hostPattern: s.hostPattern,
        status: injectable ? credentialStatus(scopes, s) : "not_granted",
      })),
      connections: access.connections.map(({ connection: c, grant, injectable }) => ({
        id: c.id,
        provider: c.provider,
        label: c.label,
        scope: c.scope,
        status: injectable ? connectionStatus(judge, c.id, c.provider) : "not_granted",
        access: grant?.access ?? null,
      })),
    };
  }
}

/** How the rules treat a connection for an agent: every tool blocked → blocked; any tool not freely allowed → limited. */
function connectionStatus(judge: Awaited<ReturnType<AppCatalogService["toolJudge"]>>, connectionId: string, provider: string): CredentialStatus {
  const app = findApp(provider);
  // An app without a permission definition: no per-tool rules can bear on it.
  if (!app || app.tools.length === 0) return "usable";
  const verdicts = judge(app, connectionId).flatMap((g) => g.tools.map((t) => t.verdict));
  if (verdicts.every((v) => v === "block")) return "blocked";
  return verdicts.some((v) => v !== "allow") ? "limited" : "usable";
}
