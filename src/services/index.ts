// The services, built once by the composition root and handed to the API and the gateway.
import type { ServiceDeps } from "./deps.ts";
import { AgentService } from "./agents.ts";
import { ApiKeyService } from "./apiKeys.ts";
import { OrganizationService } from "./organizations.ts";
import { SecretService } from "./secrets.ts";
import { LoginThrottle, SessionService } from "./sessions.ts";

export interface Services {
  deps: ServiceDeps;
  orgs: OrganizationService;
  apiKeys: ApiKeyService;
  sessions: SessionService;
  loginThrottle: LoginThrottle;
  agents: AgentService;
  secrets: SecretService;
}

export function createServices(deps: ServiceDeps): Services {
  return {
    deps,
    orgs: new OrganizationService(deps),
    apiKeys: new ApiKeyService(deps),
    sessions: new SessionService(deps),
    loginThrottle: new LoginThrottle(),
    agents: new AgentService(deps),
    secrets: new SecretService(deps),
  };
}
