// First start: the Default Organization, Default Project, owner@localhost, the Default Agent, one project
// key and one org key. Later starts find them again (and re-pin keys fixed by CREDGATE_BOOTSTRAP_*).
import { eq } from "drizzle-orm";
import { settings } from "../store/schema.ts";
import type { Services } from "./index.ts";

export interface BootstrapInfo {
  organizationId: string;
  projectId: string;
  userId: string;
  projectApiKey: string;
  orgApiKey: string;
  defaultAgentToken: string;
  /** True when this call created everything (first start): the keys are then printed. */
  created: boolean;
}

const KEY = "bootstrap";

export function bootstrap(services: Services): BootstrapInfo {
  const { db, config } = services.deps;
  const stored = db.select().from(settings).where(eq(settings.key, KEY)).get();
  let ids: { organizationId: string; projectId: string; userId: string };
  const created = !stored;
  if (stored) {
    ids = JSON.parse(stored.value);
  } else {
    ids = db.transaction(() => {
      const org = services.orgs.createOrganization("Default Organization");
      const project = services.orgs.createProject(org.id, "Default Project");
      const user = services.orgs.createUser("owner@localhost", "Owner");
      services.orgs.addMember(org.id, user.id, "owner");
      services.agents.createDefault(project.id);
      const value = { organizationId: org.id, projectId: project.id, userId: user.id };
      db.insert(settings).values({ key: KEY, value: JSON.stringify(value) }).run();
      return value;
    });
  }
  const projectApiKey = services.apiKeys.keyFor({ kind: "project", ...ids }, config.bootstrapApiKey);
  const orgApiKey = services.apiKeys.keyFor({ kind: "organization", userId: ids.userId, organizationId: ids.organizationId }, config.bootstrapOrgApiKey);
  const agent = services.agents.findDefault(ids.projectId) ?? services.agents.createDefault(ids.projectId);
  const defaultAgentToken = services.agents.view(agent, true).accessToken!;
  return { ...ids, projectApiKey, orgApiKey, defaultAgentToken, created };
}
