// First start: the Default Organization, Default Project, owner@localhost, the Default Agent, one project
// key and one org key. Later starts find them again (and re-pin keys fixed by CREDGATE_BOOTSTRAP_*).
// Runs under the store's startup lock, so instances starting together on one database create it once.
// The new keys stay marked unprinted until a start actually serves (a first start whose port is taken must
// not swallow them): the first serving instance takes the mark and prints them.
import { eq } from "drizzle-orm";
import type { Services } from "./index.ts";

export interface BootstrapInfo {
  organizationId: string;
  projectId: string;
  userId: string;
  projectApiKey: string;
  orgApiKey: string;
  defaultAgentToken: string;
}

const KEY = "bootstrap";
const UNPRINTED = "bootstrap_keys_unprinted";

export function bootstrap(services: Services): Promise<BootstrapInfo> {
  const { store, config } = services.deps;
  const { settings } = store.t;
  return store.exclusive(async () => {
    const [stored] = await store.db.select().from(settings).where(eq(settings.key, KEY)).limit(1);
    let ids: { organizationId: string; projectId: string; userId: string };
    if (stored) {
      ids = JSON.parse(stored.value);
    } else {
      const org = await services.orgs.createOrganization("Default Organization");
      const project = await services.orgs.createProject(org.id, "Default Project");
      const user = await services.orgs.createUser("owner@localhost", "Owner");
      await services.orgs.addMember(org.id, user.id, "owner");
      await services.agents.createDefault(project.id);
      ids = { organizationId: org.id, projectId: project.id, userId: user.id };
      await store.db.insert(settings).values([
        { key: KEY, value: JSON.stringify(ids) },
        { key: UNPRINTED, value: "true" },
      ]);
    }
    const projectApiKey = await services.apiKeys.keyFor({ kind: "project", ...ids }, config.bootstrapApiKey);
    const orgApiKey = await services.apiKeys.keyFor({ kind: "organization", userId: ids.userId, organizationId: ids.organizationId }, config.bootstrapOrgApiKey);
    const agent = (await services.agents.findDefault(ids.projectId)) ?? (await services.agents.createDefault(ids.projectId));
    const defaultAgentToken = services.agents.accessToken(agent);
    return { ...ids, projectApiKey, orgApiKey, defaultAgentToken };
  });
}

/** What the bootstrap made, read without writing anything (`credgate keys`, `credgate run`); null before it ran. */
export async function readBootstrap(services: Services): Promise<BootstrapInfo | null> {
  const { store } = services.deps;
  const { settings } = store.t;
  const [stored] = await store.db.select().from(settings).where(eq(settings.key, KEY)).limit(1);
  if (!stored) return null;
  const ids: { organizationId: string; projectId: string; userId: string } = JSON.parse(stored.value);
  const projectApiKey = await services.apiKeys.storedKey({ kind: "project", ...ids });
  const orgApiKey = await services.apiKeys.storedKey({ kind: "organization", userId: ids.userId, organizationId: ids.organizationId });
  const agent = await services.agents.findDefault(ids.projectId);
  if (!projectApiKey || !orgApiKey || !agent) return null;
  return { ...ids, projectApiKey, orgApiKey, defaultAgentToken: services.agents.accessToken(agent) };
}

/** True once, for the first start that serves after the keys were made: that start prints them. */
export async function takeUnprintedKeys(services: Services): Promise<boolean> {
  const { store } = services.deps;
  const { settings } = store.t;
  const taken = await store.db.delete(settings).where(eq(settings.key, UNPRINTED)).returning({ key: settings.key });
  return taken.length > 0;
}
