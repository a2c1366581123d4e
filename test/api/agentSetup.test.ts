// Agent setup (docs/api.md#agent-setup): container config in the node SDK shape, credential stubs, the skill.
import { sql } from "drizzle-orm";
import { describe, expect, test } from "bun:test";
import { createTestApi, TEST_CA_PEM } from "../support/app.ts";
import { expectFlat } from "./helpers.ts";

const NO_ANTHROPIC = "No Anthropic credentials configured — the agent will use its own API key if available.";

describe("GET /v1/container-config", () => {
  test("default agent: proxy env with its token, CA, git settings, the llm_a warning", async () => {
    const api = await createTestApi({ CREDGATE_CONTAINER_GATEWAY_HOST: "gw.internal:10255" });
    const token = (await api.call("GET", "/v1/agents/default")).body.accessToken as string;
    const res = await api.call("GET", "/v1/container-config");
    expect(res.status).toBe(200);
    const proxy = `http://x:${token}@gw.internal:10255`;
    expect(res.body).toEqual({
      env: {
        HTTPS_PROXY: proxy,
        HTTP_PROXY: proxy,
        https_proxy: proxy,
        http_proxy: proxy,
        NODE_EXTRA_CA_CERTS: "/tmp/credgate-gateway-ca.pem",
        REQUESTS_CA_BUNDLE: "/tmp/credgate-gateway-ca.pem",
        NODE_USE_ENV_PROXY: "1",
        GIT_TERMINAL_PROMPT: "0",
        GIT_HTTP_PROXY_AUTHMETHOD: "basic",
      },
      caCertificate: TEST_CA_PEM,
      caCertificateContainerPath: "/tmp/credgate-gateway-ca.pem",
      credentialStubs: [],
      warnings: [NO_ANTHROPIC],
    });
    expect(res.body.env.SSL_CERT_FILE).toBeUndefined();
  });

  test("LLM placeholders follow the secrets the agent can inject (mode and grants)", async () => {
    const api = await createTestApi();
    const llmA = (await api.call("POST", "/v1/secrets", { body: { name: "anthropic", type: "llm_a", value: "sk-ant-api03-abcdefgh" } })).body.id;
    await api.call("POST", "/v1/org/secrets", { key: api.orgKey, body: { name: "claude oauth", type: "llm_a", value: "sk-ant-oat01-abcdefgh" } });
    await api.call("POST", "/v1/secrets", { body: { name: "openai", type: "llm_b", value: "sk-proj-abcdefgh" } });
    const codexAuth = JSON.stringify({ tokens: { access_token: "eyJ.access.token", account_id: "acct-1" } });
    await api.call("POST", "/v1/secrets", { body: { name: "codex", type: "llm_b", value: codexAuth } });

    const all = (await api.call("GET", "/v1/container-config")).body;
    expect(all.env.ANTHROPIC_API_KEY).toBe("credgate-managed");
    expect(all.env.CLAUDE_CODE_OAUTH_TOKEN).toBe("credgate-managed");
    expect(all.env.OPENAI_API_KEY).toBe("credgate-managed");
    expect(all.env.CODEX_HOME).toBe("/home/node/.codex");
    expect(all.warnings).toBeUndefined();
    expect(all.credentialStubs).toHaveLength(1);
    expect(all.credentialStubs[0].containerPath).toBe("/home/node/.codex/auth.json");
    const stub = JSON.parse(all.credentialStubs[0].content);
    expect(stub.auth_mode).toBe("chatgpt");
    expect(stub.tokens.access_token).toBe("credgate-managed");
    expect(all.credentialStubs[0].content).not.toContain("eyJ.access.token");

    // A grants-mode agent sees only what it was granted.
    const agent = (await api.call("POST", "/v1/agents", { body: { name: "Coder", identifier: "coder" } })).body.id;
    const none = (await api.call("GET", "/v1/container-config?agent=coder")).body;
    expect(none.env.ANTHROPIC_API_KEY).toBeUndefined();
    expect(none.env.OPENAI_API_KEY).toBeUndefined();
    expect(none.warnings).toEqual([NO_ANTHROPIC]);
    expect((await api.call("PUT", `/v1/agents/${agent}/grants/secrets/${llmA}`)).status).toBe(200);
    const granted = (await api.call("GET", "/v1/container-config?agent=coder")).body;
    expect(granted.env.ANTHROPIC_API_KEY).toBe("credgate-managed");
    expect(granted.env.CLAUDE_CODE_OAUTH_TOKEN).toBeUndefined();
    expect(granted.warnings).toBeUndefined();
    const coderToken = (await api.call("GET", "/v1/agents")).body.find((a: any) => a.id === agent).accessToken;
    expect(granted.env.HTTPS_PROXY).toContain(`x:${coderToken}@`);
  });

  test("unknown agent identifier → 404 with code; a deleted default agent is recreated", async () => {
    const api = await createTestApi();
    const res = await api.call("GET", "/v1/container-config?agent=ghost");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error:
        'No agent with identifier "ghost" exists in this project. Create it first via POST /v1/agents, or omit the "agent" query parameter to use the project\'s default agent.',
      code: "AGENT_NOT_FOUND",
      agentIdentifier: "ghost",
    });
    // Remove the default agent behind the API's back (the API refuses to delete it).
    await api.core.store.query(sql`DELETE FROM agents WHERE is_default = ${true}`);
    const again = await api.call("GET", "/v1/container-config");
    expect(again.status).toBe(200);
    const def = await api.call("GET", "/v1/agents/default");
    expect(def.status).toBe(200);
    expect(again.body.env.HTTPS_PROXY).toContain(def.body.accessToken);
  });

  test("needs a project key", async () => {
    const api = await createTestApi();
    expect((await api.call("GET", "/v1/container-config", { key: null })).status).toBe(401);
  });
});

describe("credential stubs and skill", () => {
  test("GET /v1/credential-stubs lists codex; unknown framework → flat 404", async () => {
    const api = await createTestApi();
    expect((await api.call("GET", "/v1/credential-stubs")).body).toEqual({ agents: ["codex"] });
    expectFlat(await api.call("GET", "/v1/credential-stubs/claude"), 404, 'No credential stub for agent "claude"');
  });

  test("codex stub: api-key by default, oauth once an OAuth llm_b secret is visible", async () => {
    const api = await createTestApi();
    const apiKey = (await api.call("GET", "/v1/credential-stubs/codex")).body;
    expect(apiKey).toEqual({
      agent: "codex",
      filePath: "~/.codex/auth.json",
      content: JSON.stringify({ auth_mode: "apikey", OPENAI_API_KEY: "credgate-managed" }, null, 2),
      authMode: "api-key",
      permissions: "0600",
    });
    await api.call("POST", "/v1/org/secrets", { key: api.orgKey, body: { name: "codex", type: "llm_b", value: JSON.stringify({ tokens: { access_token: "at", account_id: "a" } }) } });
    const oauth = (await api.call("GET", "/v1/credential-stubs/codex")).body;
    expect(oauth.authMode).toBe("oauth");
    const content = JSON.parse(oauth.content);
    expect(content.auth_mode).toBe("chatgpt");
    expect(content.OPENAI_API_KEY).toBeNull();
    expect(content.tokens).toMatchObject({ access_token: "credgate-managed", refresh_token: "credgate-managed", account_id: "credgate-managed" });
    expect(typeof content.tokens.id_token).toBe("string");
    expect(Number.isNaN(Date.parse(content.last_refresh))).toBe(false);
    expect(oauth.content).toBe(JSON.stringify(content, null, 2));
  });

  test("GET /v1/skill/gateway: markdown with front-matter and every agent-facing error code", async () => {
    const api = await createTestApi();
    const res = await api.call("GET", "/v1/skill/gateway?agent_framework=claude");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(res.text.startsWith("---\nname: credgate-gateway\n")).toBe(true);
    expect(res.text).toContain("credgate-managed");
    const codes = [
      "proxy_authentication_required", "blocked_by_policy", "blocked_by_default_policy", "rate_limited", "manual_approval_denied",
      "gateway_restarting", "approval_store_unavailable", "budget_exceeded", "claim_required", "resource_access_denied",
      "connection_not_found", "multiple_connections", "multiple_providers", "credential_unavailable", "upstream_unreachable",
      "upstream_timeout", "bad_gateway", "access_restricted", "app_not_connected", "credential_not_found",
    ];
    for (const code of codes) expect(res.text).toContain(`\`${code}\``);
  });
});
