// The services, built once by the composition root and handed to the API and the gateway.
import type { ServiceDeps } from "./deps.ts";
import { AgentService } from "./agents.ts";
import { ApiKeyService } from "./apiKeys.ts";
import { ApprovalService } from "./approvals.ts";
import { GrantService } from "./grants.ts";
import { PolicyService } from "./policy.ts";
import { OrganizationService } from "./organizations.ts";
import { SecretService } from "./secrets.ts";
import { Outbound } from "./outbound.ts";
import { RequestLogService } from "./requestLogs.ts";
import { LoginThrottle, SessionService } from "./sessions.ts";
import { MigrationService } from "./migration.ts";

export interface Services {
  deps: ServiceDeps;
  orgs: OrganizationService;
  apiKeys: ApiKeyService;
  sessions: SessionService;
  loginThrottle: LoginThrottle;
  agents: AgentService;
  secrets: SecretService;
  grants: GrantService;
  policy: PolicyService;
  approvals: ApprovalService;
  requestLogs: RequestLogService;
  outbound: Outbound;
  migration: MigrationService;
}

export function createServices(deps: ServiceDeps): Services {
  const agents = new AgentService(deps);
  const secrets = new SecretService(deps);
  const policy = new PolicyService(deps);
  const outbound = new Outbound(deps.config);
  return {
    deps,
    orgs: new OrganizationService(deps),
    apiKeys: new ApiKeyService(deps),
    sessions: new SessionService(deps),
    loginThrottle: new LoginThrottle(),
    agents,
    secrets,
    grants: new GrantService(deps, agents),
    policy,
    approvals: new ApprovalService(deps),
    requestLogs: new RequestLogService(deps, agents),
    outbound,
    migration: new MigrationService(deps, secrets, agents, policy, outbound),
  };
}
