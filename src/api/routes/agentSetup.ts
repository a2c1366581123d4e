// Agent setup (docs/api.md#agent-setup): the container configuration the OneCLI node SDK consumes, credential
// stubs for agent frameworks, and the gateway skill an agent reads to learn how the gateway behaves.
import { cloudAgentSetup } from "../../services/cloudSetup.ts";
import { ApiError } from "../../core/errors.ts";
import type { Services } from "../../services/index.ts";
import { usableDatabaseSecrets, type AgentAccess } from "../../services/access.ts";
import { databaseEnv } from "../../core/databaseUrls.ts";
import type { Config } from "../../runtime/config.ts";
import type { AgentRow } from "../../services/agents.ts";
import { GATEWAY_SKILL } from "../skill.ts";
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import * as S from "../schemas.ts";
import { returns, returnsText } from "../responses.ts";

export const PLACEHOLDER = "credgate-managed";
export const CA_CONTAINER_PATH = "/tmp/credgate-gateway-ca.pem";
const CODEX_HOME = "/home/node/.codex";
const NO_ANTHROPIC_WARNING = "No Anthropic credentials configured — the agent will use its own API key if available.";
// An unsigned JWT ({"alg":"none"}) whose claims only say "placeholder": Codex parses id_token, never verifies it.
const PLACEHOLDER_ID_TOKEN =
  "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJpc3MiOiJjcmVkZ2F0ZSIsInN1YiI6ImNyZWRnYXRlLW1hbmFnZWQiLCJlbWFpbCI6ImNyZWRnYXRlLW1hbmFnZWRAbG9jYWxob3N0In0.";

type AuthMode = "api-key" | "oauth";

export function codexStubContent(authMode: AuthMode): string {
  const content =
    authMode === "oauth"
      ? {
          auth_mode: "chatgpt",
          OPENAI_API_KEY: null,
          tokens: { id_token: PLACEHOLDER_ID_TOKEN, access_token: PLACEHOLDER, refresh_token: PLACEHOLDER, account_id: PLACEHOLDER },
          last_refresh: new Date().toISOString(),
        }
      : { auth_mode: "apikey", OPENAI_API_KEY: PLACEHOLDER };
  return JSON.stringify(content, null, 2);
}

/** The agent a container-config request names: `?agent=`, else the default agent (recreated if missing). */
async function agentFor(services: Services, projectId: string, identifier: string | null): Promise<AgentRow> {
  if (identifier) {
    const row = await services.agents.findByIdentifier(projectId, identifier);
    if (!row) {
      throw ApiError.flat(
        404,
        `No agent with identifier "${identifier}" exists in this project. Create it first via POST /v1/agents, or omit the "agent" query parameter to use the project's default agent.`,
        { code: "AGENT_NOT_FOUND", agentIdentifier: identifier },
      );
    }
    return row;
  }
  return (await services.agents.findDefault(projectId)) ?? services.agents.createDefault(projectId);
}

/**
 * The agent's database URLs as a container reaches the database listener (docs/databases.md#connecting): the
 * container's gateway host, the listener's port; none while the listener is off.
 */
function containerDatabaseEnv(config: Config, access: AgentAccess, token: string): Record<string, string> {
  if (config.dbPort === 0) return {};
  const list = [...usableDatabaseSecrets(access.secrets).values()].map((s) => ({ name: s.name, databases: s.injectionConfig!.database!.databases ?? null }));
  if (list.length === 0) return {};
  const host = new URL(`http://${config.containerGatewayHost}`).hostname.replace(/^\[|\]$/g, "");
  return databaseEnv(list, { host, port: config.dbPort, token, caPath: CA_CONTAINER_PATH });
}

export function agentSetupRoutes(caPem: string): RouteDef[] {
  return [
    route({
      method: "GET",
      path: "/container-config",
      query: S.ContainerConfigQuery,
      response: returns(R.ContainerConfig),
      access: "project",
      handler: async ({ services, ctx, query }) => {
        const config = services.deps.config;
        const agent = await agentFor(services, ctx.projectId, query.get("agent")?.trim() || null);
        const token = services.agents.accessToken(agent);
        // An https:// gateway URL means TLS on the proxy hop too (docs/operations.md#tls); the container's CA file covers it.
        const secure = config.gatewayUrl.startsWith("https:");
        const proxy = `${secure ? "https" : "http"}://x:${token}@${config.containerGatewayHost}`;
        const env: Record<string, string> = {
          HTTPS_PROXY: proxy,
          HTTP_PROXY: proxy,
          https_proxy: proxy,
          http_proxy: proxy,
          NODE_EXTRA_CA_CERTS: CA_CONTAINER_PATH,
          REQUESTS_CA_BUNDLE: CA_CONTAINER_PATH,
          NODE_USE_ENV_PROXY: "1",
          GIT_TERMINAL_PROMPT: "0",
          GIT_HTTP_PROXY_AUTHMETHOD: "basic",
          ...(secure ? { GIT_PROXY_SSL_CAINFO: CA_CONTAINER_PATH } : {}),
        };
        const access = await services.access.forAgent({ ...agent, organizationId: ctx.organizationId });
        const usable = access.secrets.filter((s) => s.injectable).map((s) => s.secret);
        const modes = (type: string) => new Set(usable.filter((s) => s.type === type).map((s) => s.metadata?.authMode ?? "api-key"));
        const llmA = modes("llm_a");
        const llmB = modes("llm_b");
        if (llmA.has("api-key")) env.ANTHROPIC_API_KEY = PLACEHOLDER;
        if (llmA.has("oauth")) env.CLAUDE_CODE_OAUTH_TOKEN = PLACEHOLDER;
        if (llmB.has("api-key")) env.OPENAI_API_KEY = PLACEHOLDER;
        // Google Cloud and Azure placeholders (docs/cloud-identities.md#agent-setup).
        const cloud = cloudAgentSetup(usable, (row) => services.secrets.openValue(row));
        Object.assign(env, cloud.env);
        const credentialStubs: { containerPath: string; content: string }[] = [...cloud.stubs];
        if (llmB.has("oauth")) {
          env.CODEX_HOME = CODEX_HOME;
          credentialStubs.push({ containerPath: `${CODEX_HOME}/auth.json`, content: codexStubContent("oauth") });
        }
        Object.assign(env, containerDatabaseEnv(config, access, token));
        const mcpServers = (await services.mcpGrants.forAgent(agent))
          .filter((m) => m.grant !== null)
          .map(({ server, grant }) => ({
            id: server.id,
            name: server.name,
            url: server.url,
            status: server.status,
            access: grant!.access,
            tools: grant!.access === "full" ? [] : [...grant!.allow, ...grant!.ask],
          }));
        return {
          env,
          caCertificate: caPem,
          caCertificateContainerPath: CA_CONTAINER_PATH,
          credentialStubs,
          ...(llmA.size === 0 ? { warnings: [NO_ANTHROPIC_WARNING] } : {}),
          // Absent when there are none: the node SDK's shape stays as it was for agents without MCP servers.
          ...(mcpServers.length > 0 ? { mcpServers } : {}),
        };
      },
    }),
    route({
      method: "GET",
      path: "/credential-stubs",
      response: returns(R.CredentialStubList),
      access: "project",
      handler: () => ({ agents: ["codex"] }),
    }),
    route({
      method: "GET",
      path: "/credential-stubs/:agent",
      response: returns(R.CredentialStub),
      access: "project",
      handler: async ({ services, ctx, params }) => {
        if (params.agent !== "codex") throw ApiError.flat(404, `No credential stub for agent "${params.agent}"`);
        const oauth = (await services.secrets.listForProject(ctx.projectId, ctx.organizationId)).some((s) => s.type === "llm_b" && s.metadata?.authMode === "oauth");
        const authMode: AuthMode = oauth ? "oauth" : "api-key";
        return { agent: "codex", filePath: "~/.codex/auth.json", content: codexStubContent(authMode), authMode, permissions: "0600" };
      },
    }),
    route({
      method: "GET",
      path: "/skill/gateway",
      query: S.SkillQuery,
      response: returnsText("text/markdown; charset=utf-8", "The gateway skill: YAML front-matter, proxy use, placeholders and the agent-facing error codes"),
      access: "project",
      handler: () => new Response(GATEWAY_SKILL, { headers: { "content-type": "text/markdown; charset=utf-8" } }),
    }),
  ];
}
