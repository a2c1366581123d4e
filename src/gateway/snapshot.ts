// The gateway's in-memory view, so the hot path never touches the database: an index of every agent by
// token hash, and per agent its resolved credentials (values decrypted once, patterns compiled). Change
// events (from this process or, over the store's notifications, from other instances) drop what they affect
// at once; the next request rebuilds it, once for all requests waiting on it.
import { metrics } from "../observability/metrics.ts";
import { tokenHash } from "../crypto/hash.ts";
import { compileHostPattern, compilePathPattern, type HostMatcher, type PathMatcher } from "../core/patterns.ts";
import type { ClaimPending } from "./claim.ts";
import type { PathReadings } from "../core/pathReadings.ts";
import type { Injectable } from "../core/inject.ts";
import type { AuthMode } from "../core/secretRules.ts";
import type { AgentMode, ConnectionAccess, SecretScope } from "../core/model.ts";
import type { Services } from "../services/index.ts";
import type { SecretRow } from "../services/secrets.ts";
import type { AgentRow } from "../services/agents.ts";
import type { PartnerBudget } from "../services/budgets/partnerBudget.ts";
import type { ScopeBudget } from "../services/budgets/scopeBudgets.ts";
import { needsBody, type CompiledRule } from "../core/policy.ts";
import { compiledApp, type CompiledApp } from "../apps/match.ts";
import type { Resources } from "../core/resources.ts";
import { agentRules, compileAgentRules, targetResolver } from "../services/agentRules.ts";
import type { ConnectionCredential } from "../services/connections.ts";
import type { AgentAccess } from "../services/access.ts";
import type { ChangeEvent } from "../events/bus.ts";
import { log } from "../observability/log.ts";
import { RememberedApprovals } from "./rememberedApprovals.ts";
import { databaseCredentials, mcpServersFor, sshCredentials, type CompiledMcpServer, type DatabaseCredential, type SshCredential } from "./snapshotProtocols.ts";

export type { CompiledMcpServer, DatabaseCredential, McpGrant, SshCredential } from "./snapshotProtocols.ts";

export interface AgentEntry {
  id: string;
  projectId: string;
  organizationId: string;
  name: string;
  identifier: string;
  mode: AgentMode;
}

export interface CompiledSecret extends Injectable {
  id: string;
  name: string;
  scope: SecretScope;
  /** Application order: partner (1) → organization (2) → project (3); later writes win. */
  tier: number;
  /** Catch-all path patterns go before specific ones within a tier. */
  catchAllPath: boolean;
  createdAt: string;
  hostMatch: HostMatcher;
  pathMatch: PathMatcher;
  /** Inline plaintext; null for external-vault and secret-store secrets (resolved at request time, `valueRef`). */
  value: string | null;
  /** Where a value kept outside credgate is read: the `op://` or store reference (docs/injection.md#secret-stores). */
  valueRef: string | null;
}

export interface AgentCredentials {
  agent: AgentEntry;
  /** Credentials this agent may inject, in application order. */
  injectable: CompiledSecret[];
  /**
   * Every secret of the project and organization: the guidance rewrite's "exists but not granted" (HTTP secrets
   * only) and the leak guard's needles (database passwords included, held by no HTTP host).
   */
  visible: CompiledSecret[];
  /** The database secrets this agent may use, by name, project over organization (docs/databases.md#connecting). */
  databases: Map<string, DatabaseCredential>;
  /** The SSH keys this agent may use, project's before organization's, newest first (docs/ssh.md#the-ssh-secret). */
  ssh: SshCredential[];
  /** App connections this agent may inject (usable, and granted in mode `grants`). */
  connections: CompiledConnection[];
  /** Every connection of the project and organization, for policy targets and the guidance rewrite. */
  visibleConnections: CompiledConnection[];
  policy: AgentPolicy;
  /** Spend budgets on the partner LLM secrets this agent may inject, by secret id (docs/budgets.md#partner-budgets). */
  partnerBudgets: Map<string, PartnerBudget>;
  /**
   * The agent's, its project's and its organization's budgets that apply to a call with each LLM key type, in
   * refusal order (docs/budgets.md#budgets-for-every-scope): no query, nor any filtering, per request.
   */
  scopeBudgets: Record<"llm_a" | "llm_b", readonly ScopeBudget[]>;
  /** Set while the organization is an unclaimed partner organization (docs/guards.md#claim-required). */
  claim: ClaimPending | null;
  /** The project's MCP servers with this agent's grant of each (docs/mcp.md#at-the-gateway). */
  mcpServers: CompiledMcpServer[];
}

export interface CompiledConnection {
  id: string;
  provider: string;
  label: string | null;
  /** The app's display name. */
  displayName: string;
  scope: "project" | "organization";
  /** Status `connected` or `error`: the connection can inject. */
  usable: boolean;
  app: CompiledApp;
  /** The decrypted credential (null when not usable). A refresh replaces the whole snapshot entry. */
  credential: ConnectionCredential | null;
  /** This agent's grant of the connection, if any. */
  grant: { access: ConnectionAccess; resources: Resources | null } | null;
}

/** The published rules that apply to one agent, compiled, per scope in evaluation order. */
export interface AgentPolicy {
  organization: { ordered: CompiledRule[]; fallback: CompiledRule | null };
  project: { ordered: CompiledRule[]; fallback: CompiledRule | null };
  /** No rule at all: every request is allowed without evaluation. */
  empty: boolean;
  /** A loaded rule has body conditions, so the first 16 KiB of bodies must be read. */
  needsBody: boolean;
}

const TOKEN_CACHE_MAX = 10_000;
const NO_SCOPE_BUDGETS: AgentCredentials["scopeBudgets"] = { llm_a: [], llm_b: [] };
const TIER: Record<SecretScope, number> = { partner: 1, organization: 2, project: 3 };

export class GatewaySnapshot {
  #agents = new Map<string, AgentEntry>();
  /** Token → agent for tokens seen since the agents were last loaded (unknown tokens are not remembered). */
  #byToken = new Map<string, AgentEntry>();
  #credentials = new Map<string, AgentCredentials>();
  #building = new Map<string, Promise<AgentCredentials>>();
  /** Agent index changes still being read from the store; lookups that miss wait for them. */
  #agentsLoading: Promise<void> | null = null;
  /** Bumped by every credentials-affecting event: a build that started before it is not kept. */
  #generation = 0;

  private constructor(
    private readonly services: Services,
    /** Which agents may pass which rule's approval hold (docs/policy.md#remembered-approvals). */
    readonly remembered: RememberedApprovals,
  ) {}

  /** The snapshot with every agent loaded, following the change events from then on. */
  static async create(services: Services): Promise<GatewaySnapshot> {
    const snapshot = new GatewaySnapshot(services, await RememberedApprovals.create(services));
    await snapshot.#load(null);
    services.deps.events.on((event) => snapshot.#onEvent(event));
    return snapshot;
  }

  #onEvent(event: ChangeEvent): void {
    // Not about credentials (remembered approvals are kept by `remembered`, beside them).
    if (event.kind === "approval" || event.kind === "delivery" || event.kind === "remembered") return;
    if (event.kind === "agent" || event.kind === "reload") {
      // What the change may have invalidated stops working now (a regenerated token gets 407 from the next
      // request on); the rest of the index is read again from the store.
      const id = event.kind === "agent" ? event.agentId : null;
      if (id === null) this.#agents = new Map();
      else this.#forget(id);
      this.#byToken = new Map();
      this.#queueLoad(id);
    }
    if (event.kind !== "membership") {
      this.#generation++;
      this.#credentials.clear();
      this.#building.clear();
    }
  }

  #queueLoad(agentId: string | null): void {
    const load = (this.#agentsLoading ?? Promise.resolve()).then(() => this.#load(agentId));
    const tracked = load.then(
      () => {
        if (this.#agentsLoading === tracked) this.#agentsLoading = null;
      },
      (err: Error) => {
        if (this.#agentsLoading === tracked) this.#agentsLoading = null;
        log.error("gateway agent index not refreshed, retrying", { error: err.message });
        setTimeout(() => this.#queueLoad(agentId), 1000).unref();
      },
    );
    this.#agentsLoading = tracked;
  }

  #forget(agentId: string): void {
    for (const [hash, a] of this.#agents) if (a.id === agentId) this.#agents.delete(hash);
  }

  /** Reads one agent (or every agent) into the index. */
  async #load(agentId: string | null): Promise<void> {
    const entry = (a: AgentRow & { organizationId: string }): AgentEntry => ({
      id: a.id,
      projectId: a.projectId,
      organizationId: a.organizationId,
      name: a.name,
      identifier: a.identifier,
      mode: a.mode,
    });
    if (agentId === null) {
      const next = new Map<string, AgentEntry>();
      for (const a of await this.services.agents.allWithOrganization()) next.set(a.tokenHash, entry(a));
      this.#agents = next;
    } else {
      const a = await this.services.agents.withOrganization(agentId);
      this.#forget(agentId);
      if (a) this.#agents.set(a.tokenHash, entry(a));
    }
    this.#byToken = new Map();
  }

  /** The agent holding this access token, or null (unknown or regenerated). */
  agentForToken(token: string): AgentEntry | null | Promise<AgentEntry | null> {
    // Every in-tunnel request re-checks its token: remember the hash lookups of the live tokens.
    const known = this.#byToken.get(token);
    if (known !== undefined) return known;
    const agent = this.#agents.get(tokenHash(token)) ?? null;
    if (agent) {
      if (this.#byToken.size >= TOKEN_CACHE_MAX) this.#byToken.clear();
      this.#byToken.set(token, agent);
      return agent;
    }
    // A token issued or changed a moment ago may still be on its way into the index.
    const loading = this.#agentsLoading;
    return loading ? loading.then(() => this.#agents.get(tokenHash(token)) ?? null) : null;
  }

  /** The agent's resolved view: from memory, or built once from the store for every request waiting on it. */
  credentials(agent: AgentEntry): AgentCredentials | Promise<AgentCredentials> {
    const cached = this.#credentials.get(agent.id);
    if (cached) return cached;
    let building = this.#building.get(agent.id);
    if (!building) {
      const generation = this.#generation;
      metrics.snapshotRebuilds.inc();
      building = this.#build(agent).then(
        (c) => {
          if (this.#generation === generation) this.#credentials.set(agent.id, c);
          this.#building.delete(agent.id);
          return c;
        },
        (err) => {
          this.#building.delete(agent.id);
          throw err;
        },
      );
      this.#building.set(agent.id, building);
    }
    return building;
  }

  async #build(agent: AgentEntry): Promise<AgentCredentials> {
    // Which credentials the agent may inject: services/access.ts, the answer the API gives too.
    const access = await this.services.access.forAgent(agent);
    const org = access.organization;
    // A database password is never injected into HTTP: its secret is used by the database listener only.
    const injectableIds = new Set(access.secrets.filter((s) => s.injectable && s.secret.injectionConfig?.database === undefined && s.secret.injectionConfig?.ssh === undefined).map((s) => s.secret.id));
    const compiled = access.secrets.map((s) => this.#compile(s.secret)).sort(
      (a, b) => a.tier - b.tier || Number(b.catchAllPath) - Number(a.catchAllPath) || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id),
    );
    const injectable = compiled.filter((s) => injectableIds.has(s.id));
    const connections = this.#connections(access);
    return {
      agent,
      injectable,
      visible: compiled.filter((s) => s.scope !== "partner"),
      databases: databaseCredentials(this.services, access),
      ssh: sshCredentials(this.services, access),
      connections: connections.injectable,
      visibleConnections: connections.all,
      policy: await this.#policy(agent, compiled, connections.all),
      partnerBudgets: await this.#partnerBudgets(agent, injectable),
      scopeBudgets: await this.#scopeBudgets(agent),
      claim: org && !org.claimed ? await this.services.claims.pending(org.id) : null,
      mcpServers: await mcpServersFor(this.services, agent),
    };
  }

  async #partnerBudgets(agent: AgentEntry, injectable: CompiledSecret[]): Promise<Map<string, PartnerBudget>> {
    const partnerLlm = injectable.filter((s) => s.scope === "partner" && s.type !== "generic").map((s) => s.id);
    const rows = await this.services.partnerBudgets.forSecrets(partnerLlm, agent.organizationId);
    return new Map(rows.map((b) => [b.secretId, b]));
  }

  async #scopeBudgets(agent: AgentEntry): Promise<AgentCredentials["scopeBudgets"]> {
    const all = await this.services.scopeBudgets.forAgent(agent);
    if (all.length === 0) return NO_SCOPE_BUDGETS;
    return { llm_a: all.filter((b) => b.secretType !== "llm_b"), llm_b: all.filter((b) => b.secretType !== "llm_a") };
  }

  async #policy(agent: AgentEntry, secrets: CompiledSecret[], connections: CompiledConnection[]): Promise<AgentPolicy> {
    const rules = await agentRules(this.services, agent.organizationId, agent.projectId, agent);
    const { organization, project } = compileAgentRules(rules, targetResolver(secrets, connections));
    const all = [...organization.ordered, ...project.ordered];
    const empty = all.length === 0 && organization.fallback === null && project.fallback === null;
    return { organization, project, empty, needsBody: needsBody(all) };
  }

  /** Connections of the project and organization (`all`), and those this agent can inject with: usable (`connected` or `error`) and allowed. */
  #connections(access: AgentAccess): { all: CompiledConnection[]; injectable: CompiledConnection[] } {
    const all: CompiledConnection[] = [];
    const allowed = new Set<string>();
    for (const { connection: row, grant: g, injectable } of access.connections) {
      const app = compiledApp(row.provider);
      if (!app) continue;
      if (injectable) allowed.add(row.id);
      all.push({
        id: row.id,
        provider: row.provider,
        label: row.label,
        displayName: app.app.name,
        scope: row.scope,
        usable: row.status === "connected" || row.status === "error",
        app,
        credential: row.status === "connected" || row.status === "error" ? this.services.connections.credential(row) : null,
        grant: g ? { access: g.access, resources: g.resources ?? null } : null,
      });
    }
    const injectable = all.filter((c) => c.usable && allowed.has(c.id));
    return { all, injectable };
  }

  #compile(row: SecretRow): CompiledSecret {
    const pattern = row.pathPattern?.trim() ?? "";
    const injection = row.injectionConfig;
    return {
      id: row.id,
      name: row.name,
      scope: row.scope,
      tier: TIER[row.scope],
      catchAllPath: pattern === "" || pattern === "*" || pattern === "/*",
      createdAt: row.createdAt,
      hostMatch: compileHostPattern(row.hostPattern),
      pathMatch: compilePathPattern(row.pathPattern),
      value: this.services.secrets.openValue(row),
      valueRef: row.opRef ?? row.storeRef,
      type: row.type,
      authMode: (row.metadata?.authMode ?? "api-key") as AuthMode,
      ...(row.metadata?.accountId ? { accountId: row.metadata.accountId } : {}),
      injection,
      ...(injection?.pathRegex !== undefined ? { pathRegex: new RegExp(injection.pathRegex) } : {}),
    };
  }
}

/**
 * The credentials that apply to one request, in application order, with the LLM override of
 * docs/injection.md#precedence. A path pattern grants the credential, so it must match every reading of the
 * path (docs/injection.md#every-reading-of-a-path).
 */
export function matchingCredentials(list: CompiledSecret[], host: string, readings: PathReadings): CompiledSecret[] {
  const out = list.filter((s) => s.hostMatch(host) && readings.every(s.pathMatch));
  // Only a partner key beside an own key of its type needs the second pass (no set made for the rest).
  if (!out.some((s) => s.scope === "partner")) return out;
  const ownLlmTypes = new Set(out.filter((s) => s.scope !== "partner" && s.type !== "generic").map((s) => s.type));
  return ownLlmTypes.size === 0 ? out : out.filter((s) => !(s.scope === "partner" && ownLlmTypes.has(s.type)));
}
