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
}

export function createServices(deps: ServiceDeps): Services {
  const agents = new AgentService(deps);
  return {
    deps,
    orgs: new OrganizationService(deps),
    apiKeys: new ApiKeyService(deps),
    sessions: new SessionService(deps),
    loginThrottle: new LoginThrottle(),
    agents,
    secrets: new SecretService(deps),
    grants: new GrantService(deps, agents),
    policy: new PolicyService(deps),
    approvals: new ApprovalService(deps),
    requestLogs: new RequestLogService(deps, agents),
    outbound: new Outbound(deps.config),
  };
}
