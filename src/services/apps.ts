// Catalog reads (docs/api.md#records; docs/policy.md#evaluation effective-app-permissions): the
// catalog joined with a scope's configuration and connections, and how the rules treat each tool.
import { APPS, findApp } from "../apps/index.ts";
import { samplePath } from "../apps/match.ts";
import type { AppDefinition } from "../apps/types.ts";
import { ApiError } from "../core/errors.ts";
import { compilePathPattern, compileHostPattern } from "../core/patterns.ts";
import { combine, evaluateScope } from "../core/policy.ts";
import type { AgentService } from "./agents.ts";
import type { AppConfigService } from "./appConfigs.ts";
import { agentRules, compileAgentRules, targetResolver, type RulesAgent } from "./agentRules.ts";
import type { BlocklistService } from "./blocklist.ts";
import type { ConnectionService } from "./connections.ts";
import type { GrantService } from "./grants.ts";
import type { PolicyOwner, PolicyService } from "./policy.ts";
import type { SecretService } from "./secrets.ts";
import type { AppItem, PermissionDefinition } from "../core/records/apps.ts";
import type { EffectiveAppPermissions } from "../core/records/policy.ts";

const unknownProvider = (provider: string) => ApiError.flat(404, `Unknown provider: ${provider}`);

export function appOrThrow(provider: string): AppDefinition {
  const app = findApp(provider);
  if (!app) throw unknownProvider(provider);
  return app;
}

export function permissionDefinition(app: AppDefinition): PermissionDefinition {
  if (app.tools.length === 0) throw ApiError.flat(404, `No permission definition for provider: ${app.id}`);
  const groups = (["read", "write"] as const)
    .map((category) => ({ category, tools: app.tools.filter((t) => t.category === category).map((t) => ({ id: t.id, name: t.name, description: t.description })) }))
    .filter((g) => g.tools.length > 0);
  return { provider: app.id, groups };
}

type Deps = {
  agents: AgentService;
  appConfigs: AppConfigService;
  connections: ConnectionService;
  policy: PolicyService;
  blocklist: BlocklistService;
  grants: GrantService;
  secrets: SecretService;
};

export class AppCatalogService {
  constructor(private readonly s: Deps) {}

  /** App items for a project: availability, its configuration view and the connections it can see. */
  async items(projectId: string, organizationId: string): Promise<AppItem[]> {
    const out = [];
    for (const app of APPS) out.push(await this.item(app, projectId, organizationId));
    return out;
  }

  async item(app: AppDefinition, projectId: string, organizationId: string): Promise<AppItem> {
    const owner: PolicyOwner = { scope: "project", projectId, organizationId };
    const oauth = app.connectionType === "oauth";
    const connections = [];
    for (const c of await this.s.connections.listForProject(projectId, organizationId, app.id)) {
      connections.push({ id: c.id, label: c.label, status: await this.s.connections.effectiveStatus(c), scopes: c.scopes, connectedAt: c.connectedAt });
    }
    return {
      id: app.id,
      name: app.name,
      description: app.description,
      available: oauth ? (await this.s.appConfigs.oauthClient(owner, app.id)) !== null : true,
      connectionType: app.connectionType,
      fields: app.fields.map((f) => ({ name: f.name, label: f.label, secret: f.secret })),
      configurable: oauth,
      config: oauth ? await this.s.appConfigs.view(owner, app.id) : null,
      connections,
    };
  }

  /**
   * How the published rules (and the agent's grants) treat each tool of an app: the verdict of the same
   * evaluation the gateway runs, on a request shaped like the tool.
   */
  async effectivePermissions(owner: PolicyOwner, provider: string, agentId: string | null, connectionId: string | null): Promise<EffectiveAppPermissions> {
    const app = appOrThrow(provider);
    permissionDefinition(app);
    const projectId = owner.scope === "project" ? owner.projectId : null;
    const agent = agentId && projectId ? await this.s.agents.get(projectId, agentId) : null;
    if (connectionId) {
      if (projectId) await this.s.connections.visibleToProject(projectId, owner.organizationId, connectionId);
      else await this.s.connections.owned(owner, connectionId);
    }
    const judge = await this.toolJudge(owner, agent ? { id: agent.id, name: agent.name, projectId: agent.projectId, organizationId: owner.organizationId } : null);
    return { provider: app.id, agentId: agent?.id ?? null, connectionId, groups: judge(app, connectionId) };
  }

  /**
   * The rules of a scope (and agent) compiled once, as a function giving each tool's verdict for an app and
   * winning connection: several apps or connections can be judged without rebuilding the rules.
   */
  async toolJudge(owner: PolicyOwner, agent: RulesAgent | null) {
    const projectId = owner.scope === "project" ? owner.projectId : null;
    const secrets = projectId ? await this.s.secrets.rowsForGateway(projectId, owner.organizationId, null) : [];
    const compiledSecrets = secrets.map((s) => ({ id: s.id, scope: s.scope, hostMatch: compileHostPattern(s.hostPattern), pathMatch: compilePathPattern(s.pathPattern) }));
    const connections = projectId ? await this.s.connections.listForProject(projectId, owner.organizationId) : await this.s.connections.listForOwner(owner);
    const rules = await agentRules(this.s, owner.organizationId, projectId, agent);
    const { organization: org, project } = compileAgentRules(rules, targetResolver(compiledSecrets, connections));
    const verdictName = { allow: "allow", block: "block", approval: "approval", rate: "rate_limited" } as const;
    return (app: AppDefinition, connectionId: string | null) =>
      permissionDefinition(app).groups.map((g) => ({
        category: g.category,
        tools: g.tools.map((t) => {
          const tool = app.tools.find((x) => x.id === t.id)!;
          const host = tool.host.startsWith("*.") ? `x${tool.host.slice(1)}` : tool.host;
          const req = { host, path: samplePath(tool.path), method: tool.method, agentId: agent?.id ?? "", connectionId, body: null };
          const orgDecision = evaluateScope(org.ordered, org.fallback, req);
          const projectDecision = evaluateScope(project.ordered, project.fallback, req);
          const combined = combine(orgDecision, projectDecision);
          // combine() leaves a tie with an organization that matched nothing when the project's rule is only its
          // Default Rule (so request logs stay quiet); this read names that Default Rule.
          const d = combined.rule === null && projectDecision.verdict === combined.verdict ? projectDecision : combined;
          const rate = d.verdict === "rate" && d.rule ? { rateLimit: d.rule.rateLimit, rateLimitWindow: d.rule.rateLimitWindow } : { rateLimit: null, rateLimitWindow: null };
          return {
            toolId: t.id,
            verdict: verdictName[d.verdict],
            ...rate,
            decidedBy: d.rule ? { scope: d.rule.scope, logicalId: d.rule.logicalId, name: d.rule.name } : null,
          };
        }),
      }));
  }
}
