// The services, built once by the composition root and handed to the API and the gateway.
import { findApp } from "../apps/index.ts";
import type { ServiceDeps } from "./deps.ts";
import { AccessService } from "./access.ts";
import { AuditService } from "./audit.ts";
import { auditAnchorOf } from "./auditCheckpoints.ts";
import { AgentService } from "./agents.ts";
import { AppConfigService } from "./appConfigs.ts";
import { AppCatalogService } from "./apps.ts";
import { BlocklistService } from "./blocklist.ts";
import { ConnectionService } from "./connections.ts";
import { OAuthService } from "./oauth.ts";
import { ApiKeyService } from "./apiKeys.ts";
import { ApprovalService } from "./approvals.ts";
import { GrantService } from "./grants.ts";
import { PolicyService } from "./policy.ts";
import { OrganizationService } from "./organizations.ts";
import { SecretService } from "./secrets.ts";
import { Outbound } from "./outbound.ts";
import { RequestLogService } from "./requestLogs.ts";
import { LoginThrottle } from "./loginThrottle.ts";
import { SessionService } from "./sessions.ts";
import { ClaimService } from "./claims.ts";
import { AccountService } from "./accounts.ts";
import { PartnerService } from "./partners.ts";
import { ProjectService } from "./projects.ts";
import { TeamService } from "./team.ts";
import { MigrationService } from "./migration.ts";
import { RateLimitService } from "./rateLimits.ts";
import { PartnerBudgetService } from "./budgets/partnerBudgets.ts";
import { BudgetLedger } from "./budgets/ledger.ts";
import { ScopeBudgetService } from "./budgets/scopeBudgets.ts";
import { SpendService } from "./budgets/spend.ts";
import { loadPriceTable } from "./pricing.ts";
import type { PriceTable } from "../core/pricing.ts";
import { NotificationService, type EgressCheck } from "./notifications/index.ts";
import { RememberedApprovalService } from "./rememberedApprovals.ts";
import { SharedCaches } from "../core/sharedCache.ts";
import { GithubAppTokens } from "./githubApps.ts";
import { CloudTokens } from "./cloudTokens.ts";
import { SecretTester } from "./secretTests.ts";
import { McpServerService } from "./mcpServers.ts";
import { McpGrantService } from "./mcpGrants.ts";
import { McpAuthService } from "./mcpAuth.ts";
import { egressFetch } from "./mcp/egressFetch.ts";
import { storeFetch } from "./storeFetch.ts";
import { VaultResolver } from "../vault/resolver.ts";
import { storesFrom } from "../vault/stores/index.ts";

export interface Services {
  deps: ServiceDeps;
  orgs: OrganizationService;
  apiKeys: ApiKeyService;
  sessions: SessionService;
  loginThrottle: LoginThrottle;
  agents: AgentService;
  secrets: SecretService;
  grants: GrantService;
  /** Which credentials an agent may inject: one answer for the gateway, the agent setup and the API. */
  access: AccessService;
  connections: ConnectionService;
  appConfigs: AppConfigService;
  blocklist: BlocklistService;
  oauth: OAuthService;
  apps: AppCatalogService;
  policy: PolicyService;
  approvals: ApprovalService;
  rememberedApprovals: RememberedApprovalService;
  /** Channels, deliveries and `notify(scope, event, data)` (docs/policy.md#notifications). */
  notifications: NotificationService;
  requestLogs: RequestLogService;
  outbound: Outbound;
  migration: MigrationService;
  rateLimits: RateLimitService;
  /** Partner budgets: the records and the spend of partner keys (docs/budgets.md#partner-budgets). */
  partnerBudgets: PartnerBudgetService;
  /** Budgets for every scope (docs/budgets.md#budgets-for-every-scope): the records. */
  scopeBudgets: ScopeBudgetService;
  /** Admission and spend of every budget of a request (docs/budgets.md#admission). */
  budgetLedger: BudgetLedger;
  /** Spend records and the spend report (docs/budgets.md#spend-report). */
  spend: SpendService;
  /** Cloud mode (docs/api.md#projects-and-team, docs/api.md#accounts-and-sessions): projects, the team and its provisions, claim links. */
  projects: ProjectService;
  team: TeamService;
  claims: ClaimService;
  accounts: AccountService;
  partners: PartnerService;
  /** What the gateway meters LLM usage with (CREDGATE_PRICING_FILE over the defaults). */
  prices: PriceTable;
  /** GitHub App installation tokens, minted once for every process and instance (docs/injection.md#github-app). */
  githubApps: GithubAppTokens;
  cloudTokens: CloudTokens;
  /** The secret form's test of AWS and GitHub App secrets against their issuer. */
  secretTests: SecretTester;
  /** MCP servers registered as apps (docs/mcp.md): the records, their tools and status. */
  mcpServers: McpServerService;
  /** Agents' grants of MCP servers' tools (docs/mcp.md#tool-grants). */
  mcpGrants: McpGrantService;
  /** The OAuth login credgate runs for MCP servers, and their token refreshes (docs/mcp.md#the-login). */
  mcpAuth: McpAuthService;
  /** The caches the instance's gateway processes share (docs/operations.md#gateway-workers-and-caches). */
  caches: SharedCaches;
  /**
   * Values kept outside credgate (docs/injection.md#secret-stores): 1Password `op://` references and secret store
   * references, read through one cache per instance; `peek` is synchronous for the gateway's hot path.
   */
  stores: VaultResolver;
}

/** What the composition root hands in from outside the services. */
export interface ServiceParts {
  /** The egress guard notifications are sent through (src/gateway/egressGuard.ts). */
  egress: (outbound: Outbound) => EgressCheck;
}

export function createServices(base: Omit<ServiceDeps, "audit">, parts: ServiceParts): Services {
  const deps: ServiceDeps = { ...base, audit: new AuditService(base.store, auditAnchorOf(base.sealer, base.config)) };
  const agents = new AgentService(deps);
  const secrets = new SecretService(deps);
  const caches = new SharedCaches();
  const outbound = new Outbound(deps.config, caches);
  const egress = parts.egress(outbound);
  const stores = new VaultResolver({
    host: deps.config.opConnectHost,
    token: deps.config.opConnectToken,
    fetch: (url, init) => outbound.fetch(url, init),
    stores: storesFrom({ config: deps.config, fetch: storeFetch(outbound, egress), now: Date.now }),
    storeCacheSeconds: deps.config.storeCacheSeconds,
    commands: deps.config.secretCommands,
    caches,
  });
  secrets.stores = stores;
  const orgs = new OrganizationService(deps);
  const connections = new ConnectionService(deps);
  const appConfigs = new AppConfigService(deps);
  const mcpServers = new McpServerService(deps, egressFetch(outbound, egress));
  const mcpGrants = new McpGrantService(deps, agents, mcpServers);
  const grants = new GrantService(deps, agents, connections, mcpGrants);
  const blocklist = new BlocklistService(deps);
  const policy = new PolicyService(deps, blocklist, grants);
  // Rule targets may name app connections and catalog tools: the policy service checks them against these.
  policy.references = {
    connection: async (id) => {
      const row = await connections.byId(id);
      return row ? { provider: row.provider, scope: row.scope, organizationId: row.organizationId, projectId: row.projectId } : null;
    },
    provider: (provider) => {
      const app = findApp(provider);
      const known = new Set(app?.tools.map((t) => t.id));
      return { known: app !== null, unknownTools: (tools) => tools.filter((t) => !known.has(t)) };
    },
  };
  const apiKeys = new ApiKeyService(deps);
  const sessions = new SessionService(deps);
  const requestLogs = new RequestLogService(deps, agents);
  const spend = new SpendService(deps);
  const projects = new ProjectService(deps, orgs, agents, apiKeys, requestLogs, spend);
  const claims = new ClaimService(deps, orgs);
  const notifications = new NotificationService(deps, outbound, egress);
  const githubApps = new GithubAppTokens(deps, outbound, egress, caches);
  const cloudTokens = new CloudTokens(deps, outbound, egress, caches);
  const rememberedApprovals = new RememberedApprovalService(deps);
  const budgetLedger = new BudgetLedger(deps, spend, notifications);
  const partnerBudgets = new PartnerBudgetService(deps, budgetLedger);
  const apps = new AppCatalogService({ agents, appConfigs, connections, policy, blocklist, grants, secrets });
  return {
    deps,
    orgs,
    apiKeys,
    sessions,
    loginThrottle: new LoginThrottle(deps),
    agents,
    secrets,
    grants,
    connections,
    appConfigs,
    blocklist,
    oauth: new OAuthService(deps, appConfigs, connections, agents, orgs, grants, outbound, caches),
    apps,
    access: new AccessService({ agents, orgs, secrets, grants, connections, apps, policy, blocklist }),
    policy,
    approvals: new ApprovalService(deps, notifications, rememberedApprovals),
    rememberedApprovals,
    notifications,
    requestLogs,
    outbound,
    migration: new MigrationService(deps, secrets, agents, policy, outbound),
    rateLimits: new RateLimitService(deps),
    partnerBudgets,
    scopeBudgets: new ScopeBudgetService(deps, agents, budgetLedger),
    budgetLedger,
    spend,
    prices: loadPriceTable(deps.config.pricingFile),
    projects,
    team: new TeamService(deps, orgs, projects, sessions, claims),
    claims,
    accounts: new AccountService(deps, orgs, projects),
    partners: new PartnerService(deps, orgs, projects, agents, apiKeys, claims),
    githubApps,
    cloudTokens,
    secretTests: new SecretTester(secrets, githubApps, outbound, egress, stores),
    mcpServers,
    mcpGrants,
    mcpAuth: new McpAuthService(deps, mcpServers, caches),
    caches,
    stores,
  };
}
