// The audit log (docs/operations.md#audit-log) through the in-process API: every mutating route of cloud mode,
// performed once with a body that succeeds, leaves an event with its action template, its actor and target; no
// secret value, key, token or password reaches the audit table; GET /v1/org/audit pages and filters; the chain
// verifies and breaks where a row was edited or deleted; the checkpoint (docs/operations.md#the-checkpoint) shows a
// cut tail, a chain rewritten without the master key, a stale checkpoint and (SQLite) an older database put back.
import { beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { allRoutes } from "../../src/api/app.ts";
import { actionOf } from "../../src/api/auditedWrite.ts";
import { chainCheckLine, formatCheckpoint, readCheckpoint } from "../../src/core/auditCheckpoint.ts";
import { AUDIT_CHECKPOINT_FILE } from "../../src/runtime/auditCheckpointFile.ts";
import { chainHash, GENESIS_HASH } from "../../src/services/auditChain.ts";
import { CHECKPOINT_KEY_PURPOSE, CHECKPOINT_SETTING } from "../../src/services/auditCheckpoints.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { makePki } from "../support/upstream.ts";
import { addMember, addOrganization, expectFlat } from "./helpers.ts";

type Res = { status: number; body: any; headers: Headers; text: string };

interface EventRow {
  seq: number;
  id: string;
  action: string;
  actor_kind: string;
  actor_id: string;
  actor_email: string | null;
  target_type: string;
  target_id: string | null;
  organization_id: string | null;
  project_id: string | null;
  changes: string;
  hash: string;
}

const events = (a: TestApi, after = 0) =>
  a.core.store.query<EventRow>(sql`SELECT * FROM audit_events WHERE seq > ${after} ORDER BY seq`).then((rows) => rows.map((r) => ({ ...r, seq: Number(r.seq) })));
const lastSeq = async (a: TestApi) => Number((await a.core.store.query<{ s: number | null }>(sql`SELECT max(seq) AS s FROM audit_events`))[0]?.s ?? 0);

const cookieOf = (res: Res) => /credgate_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")![1]!;
const tokenOf = (url: string) => new URL(url).searchParams.get("token")!;

describe("every management write is recorded (cloud mode, every mutating route)", () => {
  let api: TestApi;
  /** Values that must never reach the audit table: secret values, keys, tokens, passwords, link tokens. */
  const secrets = {
    list: [] as string[],
    push(...values: unknown[]) {
      for (const v of values) {
        if (typeof v !== "string" || v.length < 8) throw new Error(`not a secret value: ${String(v)}`);
        this.list.push(v);
      }
    },
  };
  const performed = new Set<string>();
  const byAction = new Map<string, EventRow[]>();

  /** Performs one write that must succeed, and checks that an event with its action was recorded. */
  async function write(action: string, call: () => Promise<Res>): Promise<Res> {
    const before = await lastSeq(api);
    const res = await call();
    if (res.status >= 300) throw new Error(`${action} answered ${res.status}: ${res.text}`);
    const rows = (await events(api, before)).filter((r) => r.action === action);
    expect({ action, recorded: rows.length > 0 }).toEqual({ action, recorded: true });
    performed.add(action);
    byAction.set(action, [...(byAction.get(action) ?? []), ...rows]);
    return res;
  }

  beforeAll(async () => {
    api = await createTestApi({ CREDGATE_MODE: "cloud", CREDGATE_APPROVAL_POLL_SECONDS: "1", CREDGATE_CONNECT_TO: "sts.amazonaws.com:443:127.0.0.1:9" });
    secrets.push(api.projectKey, api.orgKey);
  });

  test("every route, then: no secret in the table, actors and changes as performed, every route covered", async () => {
    const { services } = api.core;
    const P = api.projectKey;
    const O = api.orgKey;
    const partner = await services.partners.create("Audit Partner", "partner-owner@example.com");
    const Pt = partner.partnerKey;
    secrets.push(Pt, tokenOf(partner.inviteUrl!));
    const call = (method: string, path: string, key: string | null, body?: unknown, headers?: Record<string, string>) => api.call(method, path, { key, body, headers });

    // Accounts and sessions.
    const password = "correct horse battery staple";
    secrets.push(password);
    const signup = await write("POST /v1/auth/signup", () => call("POST", "/v1/auth/signup", null, { email: "signer@example.com", password }));
    const signerCookie = cookieOf(signup);
    secrets.push(signerCookie);
    const login = await write("POST /v1/auth/login", () => call("POST", "/v1/auth/login", null, { apiKey: P }));
    const ownerCookie = cookieOf(login);
    secrets.push(ownerCookie);
    const session = { cookie: `credgate_session=${ownerCookie}` };
    await write("PATCH /v1/user", () => call("PATCH", "/v1/user", null, { name: "Owner Renamed" }, session));

    // Keys of a second admin (regenerating kills them).
    const admin = await addMember(api, "admin");
    secrets.push(admin.projectKey, admin.orgKey);
    secrets.push((await write("POST /v1/user/api-key/regenerate", () => call("POST", "/v1/user/api-key/regenerate", admin.projectKey))).body.apiKey);
    secrets.push((await write("POST /v1/org/api-key/regenerate", () => call("POST", "/v1/org/api-key/regenerate", admin.orgKey))).body.apiKey);
    await write("PATCH /v1/org/settings", () => call("PATCH", "/v1/org/settings", O, { name: "Audited Org" }));

    // Agents.
    const agent = (await write("POST /v1/agents", () => call("POST", "/v1/agents", P, { name: "Bot", identifier: "bot", mode: "grants" }))).body;
    const tokenOfAgent = async (id: string) => (await call("GET", "/v1/agents", P)).body.find((a: any) => a.id === id).accessToken;
    secrets.push(await tokenOfAgent(agent.id));
    await write("PATCH /v1/agents/{agentId}", () => call("PATCH", `/v1/agents/${agent.id}`, P, { name: "Bot 2" }));
    secrets.push((await write("POST /v1/agents/{agentId}/regenerate-token", () => call("POST", `/v1/agents/${agent.id}/regenerate-token`, P))).body.accessToken);

    // Secrets of every scope.
    const value = (n: number) => `sk-audit-secret-value-${n}-${crypto.randomUUID()}`;
    const generic = (v: string) => ({ name: "Stripe", type: "generic", value: v, hostPattern: "api.stripe.com", injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } });
    const v1 = value(1);
    const v2 = value(2);
    const v3 = value(3);
    const v4 = value(4);
    const v5 = value(5);
    const v6 = value(6);
    secrets.push(v1, v2, v3, v4, v5, v6);
    const secret = (await write("POST /v1/secrets", () => call("POST", "/v1/secrets", P, generic(v1)))).body;
    await write("PATCH /v1/secrets/{secretId}", () => call("PATCH", `/v1/secrets/${secret.id}`, P, { name: "Stripe live", value: v2 }));
    const orgSecret = (await write("POST /v1/org/secrets", () => call("POST", "/v1/org/secrets", O, generic(v3)))).body;
    await write("PATCH /v1/org/secrets/{secretId}", () => call("PATCH", `/v1/org/secrets/${orgSecret.id}`, O, { value: v4 }));
    // Generated SSH keys: recorded as the secrets that hold them (docs/ssh.md); the private half is never answered.
    const sshKnownHosts = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    await write("POST /v1/secrets/generate-ssh-key", () => call("POST", "/v1/secrets/generate-ssh-key", P, { name: "Deploy key", hostPattern: "github.com", ssh: { knownHosts: sshKnownHosts } }));
    await write("POST /v1/org/secrets/generate-ssh-key", () => call("POST", "/v1/org/secrets/generate-ssh-key", O, { name: "Org deploy key", hostPattern: "github.com", ssh: { knownHosts: sshKnownHosts } }));
    const partnerSecret = (await write("POST /v1/partner/secrets", () => call("POST", "/v1/partner/secrets", Pt, { name: "Shared Anthropic", type: "llm_a", value: `sk-ant-api03-${v5}` }))).body;
    await write("PATCH /v1/partner/secrets/{secretId}", () => call("PATCH", `/v1/partner/secrets/${partnerSecret.id}`, Pt, { value: `sk-ant-api03-${v6}` }));
    // The secret form's test, on an AWS secret of each scope (STS is pinned to a refused address: the answer is
    // `ok:false` at once, and still an audit event).
    for (const [prefix, key] of [["", P], ["/org", O], ["/partner", Pt]] as const) {
      const awsKey = `aws-secret-key-${crypto.randomUUID()}`;
      secrets.push(awsKey);
      const aws = { name: "AWS", type: "generic", value: awsKey, hostPattern: "*.amazonaws.com", injectionConfig: { awsSigV4: { accessKeyId: "AKIAAUDITTEST0000001" } } };
      const created = (await write(`POST /v1${prefix}/secrets`, () => call("POST", `/v1${prefix}/secrets`, key, aws))).body;
      const tested = await write(`POST /v1${prefix}/secrets/{secretId}/test`, () => call("POST", `/v1${prefix}/secrets/${created.id}/test`, key));
      expect(tested.body.ok).toBe(false);
    }

    // Grants and connections.
    await write("PUT /v1/agents/{agentId}/grants/secrets/{secretId}", () => call("PUT", `/v1/agents/${agent.id}/grants/secrets/${secret.id}`, P));
    await write("DELETE /v1/agents/{agentId}/grants/secrets/{secretId}", () => call("DELETE", `/v1/agents/${agent.id}/grants/secrets/${secret.id}`, P));
    await write("PUT /v1/agents/{agentId}/secrets", () => call("PUT", `/v1/agents/${agent.id}/secrets`, P, { secretIds: [secret.id, orgSecret.id] }));
    const resendKey = `re_${crypto.randomUUID()}`;
    const orgResendKey = `re_${crypto.randomUUID()}`;
    secrets.push(resendKey, orgResendKey);
    const connection = (await write("POST /v1/apps/{provider}/connect", () => call("POST", "/v1/apps/resend/connect", P, { fields: { apiKey: resendKey } }))).body.connection;
    await write("PUT /v1/agents/{agentId}/grants/connections/{connectionId}", () => call("PUT", `/v1/agents/${agent.id}/grants/connections/${connection.id}`, P, { access: "full" }));
    await write("DELETE /v1/agents/{agentId}/grants/connections/{connectionId}", () => call("DELETE", `/v1/agents/${agent.id}/grants/connections/${connection.id}`, P));
    const mcpToken = `mcp_${crypto.randomUUID()}`;
    secrets.push(mcpToken);
    // The server is unreachable (an internal address, refused in cloud mode): registered in error, audited all the same.
    const mcp = (await write("POST /v1/mcp-servers", () => call("POST", "/v1/mcp-servers", P, { name: "Files", url: "https://127.0.0.1:9/mcp", auth: { bearer: mcpToken } }))).body;
    await write("PATCH /v1/mcp-servers/{mcpServerId}", () => call("PATCH", `/v1/mcp-servers/${mcp.id}`, P, { name: "Files renamed" }));
    await write("POST /v1/mcp-servers/{mcpServerId}/refresh-tools", () => call("POST", `/v1/mcp-servers/${mcp.id}/refresh-tools`, P));
    await write("PUT /v1/agents/{agentId}/grants/mcp-servers/{mcpServerId}", () => call("PUT", `/v1/agents/${agent.id}/grants/mcp-servers/${mcp.id}`, P, { access: "full" }));
    await write("DELETE /v1/agents/{agentId}/grants/mcp-servers/{mcpServerId}", () => call("DELETE", `/v1/agents/${agent.id}/grants/mcp-servers/${mcp.id}`, P));
    await write("DELETE /v1/mcp-servers/{mcpServerId}", () => call("DELETE", `/v1/mcp-servers/${mcp.id}`, P));
    await write("PUT /v1/agents/{agentId}/connections", () => call("PUT", `/v1/agents/${agent.id}/connections`, P, { connections: [{ appConnectionId: connection.id }] }));
    await write("PATCH /v1/connections/{connectionId}", () => call("PATCH", `/v1/connections/${connection.id}`, P, { label: "Mail" }));
    const orgConnection = (await write("POST /v1/org/apps/{provider}/connect", () => call("POST", "/v1/org/apps/resend/connect", O, { fields: { apiKey: orgResendKey } }))).body.connection;
    await write("PATCH /v1/org/connections/{key}", () => call("PATCH", `/v1/org/connections/${orgConnection.id}`, O, { label: "Org mail" }));
    await write("DELETE /v1/org/connections/{key}", () => call("DELETE", `/v1/org/connections/${orgConnection.id}`, O));
    await write("POST /v1/agents/{agentId}/set-default", () => call("POST", `/v1/agents/${agent.id}/set-default`, P));

    // Policy, both owners.
    for (const [prefix, key] of [["", P], ["/org", O]] as const) {
      const rule = (await write(`POST /v1${prefix}/policy/rules`, () => call("POST", `/v1${prefix}/policy/rules`, key, { name: "r", action: "block", targets: [{ kind: "network", hostPattern: "evil.example.com" }] }))).body;
      await write(`PUT /v1${prefix}/policy/rules/order`, () => call("PUT", `/v1${prefix}/policy/rules/order`, key, { orderedIds: [rule.id] }));
      await write(`PATCH /v1${prefix}/policy/rules/{ruleId}`, () => call("PATCH", `/v1${prefix}/policy/rules/${rule.id}`, key, { name: "r2" }));
      await write(`PATCH /v1${prefix}/policy/default`, () => call("PATCH", `/v1${prefix}/policy/default`, key, { action: "allow" }));
      await write(`POST /v1${prefix}/policy/publish`, () => call("POST", `/v1${prefix}/policy/publish`, key));
      await write(`DELETE /v1${prefix}/policy/rules/{ruleId}`, () => call("DELETE", `/v1${prefix}/policy/rules/${rule.id}`, key));
    }

    // Apps: OAuth client configuration and blocklists, both owners.
    for (const [prefix, key] of [["", P], ["/org", O]] as const) {
      const clientSecret = `gh-client-secret-${crypto.randomUUID()}`;
      secrets.push(clientSecret);
      await write(`POST /v1${prefix}/apps/{provider}/config`, () => call("POST", `/v1${prefix}/apps/github/config`, key, { clientId: "gh-client-id", clientSecret }));
      await write(`PATCH /v1${prefix}/apps/{provider}/config/toggle`, () => call("PATCH", `/v1${prefix}/apps/github/config/toggle`, key, { enabled: false }));
      await write(`DELETE /v1${prefix}/apps/{provider}/config`, () => call("DELETE", `/v1${prefix}/apps/github/config`, key));
      const entry = (await write(`POST /v1${prefix}/apps/{provider}/blocklist`, () => call("POST", `/v1${prefix}/apps/github/blocklist`, key, { hostId: "gist" }))).body;
      await write(`PATCH /v1${prefix}/apps/{provider}/blocklist/{ruleId}`, () => call("PATCH", `/v1${prefix}/apps/github/blocklist/${entry.ruleId}`, key, { enabled: false }));
      await write(`DELETE /v1${prefix}/apps/{provider}/blocklist/{ruleId}`, () => call("DELETE", `/v1${prefix}/apps/github/blocklist/${entry.ruleId}`, key));
    }

    // An approval decision.
    const defaultAgent = (await services.agents.list(api.projectId)).find((a) => a.isDefault)!;
    const held = await services.approvals.hold({
      organizationId: api.organizationId,
      projectId: api.projectId,
      agent: { id: defaultAgent.id, name: defaultAgent.name, identifier: defaultAgent.identifier },
      method: "POST",
      url: "https://api.x.com/v1/send",
      host: "api.x.com",
      path: "/v1/send",
      headers: {},
      bodyPreview: "POST request",
      summary: { action: "POST request", details: [] },
    });
    const approvalId = held.row.id;
    await write("POST /v1/approvals/{approvalId}/decision", () => call("POST", `/v1/approvals/${approvalId}/decision`, P, { decision: "approve" }));
    expect(await held.outcome).toBe("approved");

    // Notification channels, both owners; an approval decided by its link with remember; the remembered one ended.
    for (const [prefix, key] of [["", P], ["/org", O]] as const) {
      const hookUrl = `https://hooks.example.com/${prefix || "project"}/${crypto.randomUUID()}`;
      const channel = (await write(`POST /v1${prefix}/notifications/channels`, () => call("POST", `/v1${prefix}/notifications/channels`, key, { kind: "webhook", url: hookUrl }))).body;
      secrets.push(channel.signingSecret);
      await write(`PATCH /v1${prefix}/notifications/channels/{channelId}`, () => call("PATCH", `/v1${prefix}/notifications/channels/${channel.id}`, key, { enabled: true }));
      await write(`POST /v1${prefix}/notifications/channels/{channelId}/test`, () => call("POST", `/v1${prefix}/notifications/channels/${channel.id}/test`, key));
      if (prefix === "/org") await write(`DELETE /v1${prefix}/notifications/channels/{channelId}`, () => call("DELETE", `/v1${prefix}/notifications/channels/${channel.id}`, key));
    }
    // Budgets of every scope (an agent's and the organization's), edited; the spend report reads only.
    const agentBudget = (await write("POST /v1/budgets", () => call("POST", "/v1/budgets", P, { scope: "agent", agentId: defaultAgent.id, limitCents: 500, period: "day" }))).body;
    await write("PATCH /v1/budgets/{budgetId}", () => call("PATCH", `/v1/budgets/${agentBudget.id}`, P, { limitCents: 700 }));
    await write("DELETE /v1/budgets/{budgetId}", () => call("DELETE", `/v1/budgets/${agentBudget.id}`, P));
    const orgBudget = (await write("POST /v1/org/budgets", () => call("POST", "/v1/org/budgets", O, { limitCents: 10_000, period: "month", secretType: "llm_a" }))).body;
    await write("PATCH /v1/org/budgets/{budgetId}", () => call("PATCH", `/v1/org/budgets/${orgBudget.id}`, O, { alertPercents: [50] }));
    await write("DELETE /v1/org/budgets/{budgetId}", () => call("DELETE", `/v1/org/budgets/${orgBudget.id}`, O));
    const linked = await services.approvals.hold({
      organizationId: api.organizationId,
      projectId: api.projectId,
      agent: { id: defaultAgent.id, name: defaultAgent.name, identifier: defaultAgent.identifier },
      method: "POST",
      url: "https://api.x.com/v1/send",
      host: "api.x.com",
      path: "/v1/send",
      headers: {},
      bodyPreview: "POST request",
      summary: { action: "POST request", details: [] },
      rule: { logicalId: crypto.randomUUID(), name: "Ask first" },
    });
    const linkToken = await (async () => {
      const { store, sealer } = services.deps;
      for (let i = 0; i < 100; i++) {
        const row = (await store.db.select().from(store.t.notificationDeliveries)).find((r) => r.approvalId === linked.row.id);
        if (row) return new URL(JSON.parse(sealer.open(row.payloadSealed)).data.approveUrl).searchParams.get("t")!;
        await Bun.sleep(20);
      }
      throw new Error("the approval's delivery was not queued");
    })();
    secrets.push(linkToken);
    await write("POST /v1/approvals/{approvalId}/link-decision", () =>
      call("POST", `/v1/approvals/${linked.row.id}/link-decision`, null, { token: linkToken, decision: "approve", remember: { minutes: 15 } }),
    );
    expect(await linked.outcome).toBe("approved");
    const remembered = (await call("GET", "/v1/approvals/remembered", P)).body;
    expect(remembered).toHaveLength(1);
    await write("DELETE /v1/approvals/remembered/{rememberedId}", () => call("DELETE", `/v1/approvals/remembered/${remembered[0].id}`, P));

    // Migration import (cloud).
    const imported = `sk-imported-${crypto.randomUUID()}`;
    secrets.push(imported);
    await write("POST /v1/migrate/import", () =>
      call("POST", "/v1/migrate/import", P, { version: 1, secrets: [{ ...generic(imported), name: "Imported" }], agents: [{ name: "Imported agent", identifier: "imported", mode: "all" }] }),
    );

    // Projects and the team.
    const project = (await write("POST /v1/projects", () => call("POST", "/v1/projects", O, { name: "Second" }))).body;
    secrets.push(project.apiKey);
    await write("PATCH /v1/projects/{projectId}", () => call("PATCH", `/v1/projects/${project.id}`, O, { name: "Second renamed" }));
    await write("DELETE /v1/projects/{projectId}", () => call("DELETE", `/v1/projects/${project.id}`, O));
    const provision = (await write("POST /v1/team/provisions", () => call("POST", "/v1/team/provisions", O, { role: "member" }))).body;
    secrets.push(provision.apiKey, tokenOf(provision.claimUrl));
    await write("PATCH /v1/team/members/{userId}", () => call("PATCH", `/v1/team/members/${provision.userId}`, O, { role: "admin" }));
    await write("DELETE /v1/team/members/{userId}", () => call("DELETE", `/v1/team/members/${provision.userId}`, O));
    const claimable = (await call("POST", "/v1/team/provisions", O, { role: "member" })).body;
    secrets.push(claimable.apiKey, tokenOf(claimable.claimUrl));
    await write("POST /v1/claim", () => call("POST", "/v1/claim", null, { token: tokenOf(claimable.claimUrl) }, { cookie: `credgate_session=${signerCookie}` }));

    // Partner organizations, projects, budgets, members.
    const org = (await write("POST /v1/partner/orgs", () => call("POST", "/v1/partner/orgs", Pt, { name: "Customer" }))).body;
    secrets.push(org.orgApiKey, org.projectApiKey, org.agentToken, tokenOf(org.claimUrl));
    const relinked = (await write("POST /v1/partner/orgs/{orgId}/claim-link", () => call("POST", `/v1/partner/orgs/${org.organizationId}/claim-link`, Pt))).body;
    secrets.push(tokenOf(relinked.claimUrl));
    const rotated = (await write("POST /v1/partner/orgs/{orgId}/rotate-tokens", () => call("POST", `/v1/partner/orgs/${org.organizationId}/rotate-tokens`, Pt))).body;
    secrets.push(rotated.orgApiKey, rotated.projectApiKey, rotated.agentToken);
    const partnerProject = (await write("POST /v1/partner/orgs/{orgId}/projects", () => call("POST", `/v1/partner/orgs/${org.organizationId}/projects`, Pt, { name: "Extra" }))).body;
    await write("DELETE /v1/partner/orgs/{orgId}/projects/{projectId}", () => call("DELETE", `/v1/partner/orgs/${org.organizationId}/projects/${partnerProject.id}`, Pt));
    const budgetPath = `/v1/partner/orgs/${org.organizationId}/secrets/${partnerSecret.id}/budget`;
    await write("POST /v1/partner/orgs/{orgId}/secrets/{secretId}/budget", () => call("POST", budgetPath, Pt, { limitCents: 500 }));
    await write("DELETE /v1/partner/orgs/{orgId}/secrets/{secretId}/budget", () => call("DELETE", budgetPath, Pt));
    const member = (await write("POST /v1/partner/members", () => call("POST", "/v1/partner/members", Pt, { email: "helper@example.com", role: "member" }))).body;
    await write("PATCH /v1/partner/members/{userId}/role", () => call("PATCH", `/v1/partner/members/${member.userId}/role`, Pt, { role: "admin" }));
    await write("DELETE /v1/partner/members/{userId}", () => call("DELETE", `/v1/partner/members/${member.userId}`, Pt));
    const invited = (await call("POST", "/v1/partner/members", Pt, { email: "invited@example.com", role: "member" })).body;
    const invitePassword = "another long password";
    secrets.push(tokenOf(invited.inviteUrl), invitePassword);
    const accepted = await write("POST /v1/auth/accept-invite", () => call("POST", "/v1/auth/accept-invite", null, { token: tokenOf(invited.inviteUrl), password: invitePassword }));
    secrets.push(cookieOf(accepted));
    const doomed = (await call("POST", "/v1/partner/orgs", Pt, { name: "Short-lived" })).body;
    secrets.push(doomed.orgApiKey, doomed.projectApiKey, doomed.agentToken, tokenOf(doomed.claimUrl));
    await write("DELETE /v1/partner/orgs/{orgId}", () => call("DELETE", `/v1/partner/orgs/${doomed.organizationId}`, Pt));
    // The signer claims the partner organization and detaches it.
    const signer = { cookie: `credgate_session=${signerCookie}` };
    expect((await call("POST", "/v1/claim", null, { token: tokenOf(relinked.claimUrl) }, signer)).status).toBe(200);
    await write("POST /v1/org/partner/detach", () => call("POST", "/v1/org/partner/detach", null, undefined, { ...signer, "x-organization-id": org.organizationId }));

    // Deletions last (their targets were used above).
    const projectChannel = (await call("GET", "/v1/notifications/channels", P)).body[0];
    await write("DELETE /v1/notifications/channels/{channelId}", () => call("DELETE", `/v1/notifications/channels/${projectChannel.id}`, P));
    await write("DELETE /v1/connections/{connectionId}", () => call("DELETE", `/v1/connections/${connection.id}`, P));
    await write("DELETE /v1/partner/secrets/{secretId}", () => call("DELETE", `/v1/partner/secrets/${partnerSecret.id}`, Pt));
    await write("DELETE /v1/org/secrets/{secretId}", () => call("DELETE", `/v1/org/secrets/${orgSecret.id}`, O));
    await write("DELETE /v1/secrets/{secretId}", () => call("DELETE", `/v1/secrets/${secret.id}`, P));
    const spare = (await call("POST", "/v1/agents", P, { name: "Spare", identifier: "spare", mode: "all" })).body;
    secrets.push(await tokenOfAgent(spare.id));
    await write("DELETE /v1/agents/{agentId}", () => call("DELETE", `/v1/agents/${spare.id}`, P));
    await write("POST /v1/auth/logout", () => call("POST", "/v1/auth/logout", null, undefined, session));

    // Every mutating route of this mode was performed (a route added later must be added here).
    const routes = allRoutes()
      .filter((r) => r.method !== "GET" && (!r.modes || r.modes.includes("cloud")))
      .map((r) => actionOf(r.method, r.path));
    expect(routes.filter((r) => !performed.has(r))).toEqual([]);

    // Nothing secret in any column of any event.
    const table = JSON.stringify(await api.core.store.query(sql`SELECT * FROM audit_events`));
    expect(secrets.list.length).toBeGreaterThan(40);
    expect(secrets.list.filter((s) => table.includes(s))).toEqual([]);
    expect(table).not.toMatch(/(agt|svc)_[0-9a-f]{16}/);

    // Actors, targets and changes as performed.
    const one = (action: string) => byAction.get(action)![0]!;
    expect(one("POST /v1/secrets")).toMatchObject({ actor_kind: "project_key", actor_email: "owner@localhost", target_type: "secret", target_id: secret.id, project_id: api.projectId, organization_id: api.organizationId });
    expect(JSON.parse(one("PATCH /v1/secrets/{secretId}").changes)).toEqual({ name: ["Stripe", "Stripe live"], valueSealed: ["<redacted>", "<redacted>"] });
    expect(one("PATCH /v1/org/settings")).toMatchObject({ actor_kind: "org_key", target_type: "organization", target_id: api.organizationId });
    expect(one("POST /v1/budgets")).toMatchObject({ actor_kind: "project_key", target_type: "budget", target_id: agentBudget.id, project_id: api.projectId, organization_id: api.organizationId });
    expect(JSON.parse(one("PATCH /v1/budgets/{budgetId}").changes)).toEqual({ limitCents: [500, 700] });
    expect(one("DELETE /v1/org/budgets/{budgetId}")).toMatchObject({ actor_kind: "org_key", target_type: "budget", target_id: orgBudget.id, project_id: null });
    expect(JSON.parse(one("PATCH /v1/org/settings").changes)).toEqual({ name: ["Default Organization", "Audited Org"] });
    // The session was made from the owner's project key: a key's session is the key (docs/api.md#accounts-and-sessions).
    expect(one("PATCH /v1/user")).toMatchObject({ actor_kind: "project_key", actor_email: "owner@localhost", target_id: api.core.bootstrap.userId });
    expect(one("POST /v1/auth/login")).toMatchObject({ actor_kind: "user", target_type: "session", organization_id: api.organizationId });
    expect(one("POST /v1/auth/logout")).toMatchObject({ actor_kind: "project_key", target_type: "session", target_id: one("POST /v1/auth/login").target_id, organization_id: api.organizationId });
    expect(one("POST /v1/auth/signup")).toMatchObject({ actor_kind: "user", actor_email: "signer@example.com" });
    expect(one("POST /v1/partner/secrets")).toMatchObject({ actor_kind: "partner_key", actor_email: null, organization_id: null });
    expect(one("POST /v1/partner/orgs/{orgId}/rotate-tokens")).toMatchObject({ organization_id: org.organizationId });
    expect(JSON.parse(one("DELETE /v1/agents/{agentId}").changes)).toMatchObject({ name: ["Spare", null], identifier: ["spare", null], tokenHash: ["<redacted>", null] });
    expect(JSON.parse(one("PUT /v1/agents/{agentId}/secrets").changes)).toEqual({ secretIds: [[], [secret.id, orgSecret.id].sort()] });
    expect(one("POST /v1/approvals/{approvalId}/decision")).toMatchObject({ target_type: "approval", target_id: approvalId });
    expect(JSON.parse(one("POST /v1/approvals/{approvalId}/decision").changes)).toEqual({ status: ["pending", "approved"] });

    // The chain holds every event.
    const all = await events(api);
    expect(await services.deps.audit.verify()).toEqual({ intact: true, events: all.length });
  }, 60_000);
});

describe("the self-hosted-only write", () => {
  test("POST /v1/migrate/export is recorded; the cloud key it was given is not", async () => {
    const pki = makePki(["cloud.test"]);
    const cloud = await createTestApi({ CREDGATE_MODE: "cloud" });
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
      fetch: async (req) => cloud.app.handle(new Request(req.url, { method: req.method, headers: req.headers, body: await req.arrayBuffer() })),
    });
    try {
      const sh = await createTestApi({ CREDGATE_RESOLVE: `cloud.test:${server.port}:127.0.0.1`, CREDGATE_UPSTREAM_CA_FILE: pki.caFile });
      const selfHostedWrites = allRoutes()
        .filter((r) => r.method !== "GET" && (!r.modes || r.modes.includes("self-hosted")) && r.modes && !r.modes.includes("cloud"))
        .map((r) => actionOf(r.method, r.path));
      expect(selfHostedWrites).toEqual(["POST /v1/migrate/export"]);
      const res = await sh.call("POST", "/v1/migrate/export", { body: { cloudApiKey: cloud.projectKey, cloudUrl: `https://cloud.test:${server.port}` } });
      expect(res.status).toBe(200);
      const rows = await events(sh);
      expect(rows.map((r) => [r.action, r.actor_kind, r.target_type])).toEqual([["POST /v1/migrate/export", "project_key", "migrate"]]);
      expect(JSON.stringify(rows)).not.toContain(cloud.projectKey);
      // The import on the cloud side is the cloud's own write, by the key the export used.
      const imported = await events(cloud);
      expect(imported.length).toBeGreaterThan(0);
      expect(imported.filter((r) => r.action !== "POST /v1/migrate/import")).toEqual([]);
    } finally {
      server.stop(true);
    }
  }, 60_000);
});

describe("GET /v1/org/audit", () => {
  let api: TestApi;
  let ids: string[];
  beforeAll(async () => {
    api = await createTestApi();
    ids = [];
    for (let i = 0; i < 5; i++) ids.push((await api.call("POST", "/v1/agents", { body: { name: `A${i}`, identifier: `a${i}`, mode: "all" } })).body.id);
    await api.call("PATCH", `/v1/agents/${ids[0]}`, { key: api.orgKey, body: { name: "renamed" }, headers: { "x-project-id": api.projectId } });
  });

  test("newest first, the contract's record; pages of `limit` with nextCursor until null", async () => {
    const first = await api.call("GET", "/v1/org/audit?limit=2", { key: api.orgKey });
    expect(first.status).toBe(200);
    expect(first.body.data.map((e: any) => e.action)).toEqual(["PATCH /v1/agents/{agentId}", "POST /v1/agents"]);
    expect(Object.keys(first.body.data[0]).sort()).toEqual(["action", "actor", "address", "at", "changes", "hash", "id", "projectId", "targetId", "targetType"]);
    expect(first.body.data[0]).toMatchObject({ actor: { kind: "org_key", email: "owner@localhost" }, targetType: "agent", targetId: ids[0], projectId: api.projectId, changes: { name: ["A0", "renamed"] } });
    expect(first.body.data[0].hash).toMatch(/^[0-9a-f]{64}$/);
    const seen = [...first.body.data];
    let cursor = first.body.nextCursor;
    while (cursor) {
      const page = await api.call("GET", `/v1/org/audit?limit=2&cursor=${encodeURIComponent(cursor)}`, { key: api.orgKey });
      seen.push(...page.body.data);
      cursor = page.body.nextCursor;
    }
    expect(seen.map((e) => e.targetId)).toEqual([ids[0], ...[...ids].reverse()]);
    expect(new Set(seen.map((e) => e.id)).size).toBe(6);
  });

  test("filters: actorId, targetId, action, since/until", async () => {
    const all = (await api.call("GET", "/v1/org/audit", { key: api.orgKey })).body.data;
    const patch = all.find((e: any) => e.action.startsWith("PATCH"));
    const byActor = (await api.call("GET", `/v1/org/audit?actorId=${patch.actor.id}`, { key: api.orgKey })).body.data;
    expect(byActor.map((e: any) => e.id)).toEqual([patch.id]);
    const byTarget = (await api.call("GET", `/v1/org/audit?targetId=${ids[0]}`, { key: api.orgKey })).body.data;
    expect(byTarget.map((e: any) => e.action)).toEqual(["PATCH /v1/agents/{agentId}", "POST /v1/agents"]);
    const byAction = (await api.call("GET", `/v1/org/audit?action=${encodeURIComponent("POST /v1/agents")}`, { key: api.orgKey })).body.data;
    expect(byAction.length).toBe(5);
    const third = all[3];
    const since = (await api.call("GET", `/v1/org/audit?since=${encodeURIComponent(third.at)}`, { key: api.orgKey })).body.data;
    expect(since.every((e: any) => e.at >= third.at)).toBe(true);
    expect(since.map((e: any) => e.id)).toContain(third.id);
    const until = (await api.call("GET", `/v1/org/audit?until=${encodeURIComponent(third.at)}`, { key: api.orgKey })).body.data;
    expect(until.every((e: any) => e.at <= third.at)).toBe(true);
  });

  test("bad query values: flat 400s; O·admin: a project member's key → 403, no key → 401", async () => {
    expectFlat(await api.call("GET", "/v1/org/audit?limit=0", { key: api.orgKey }), 400, "limit must be between 1 and 500");
    expectFlat(await api.call("GET", "/v1/org/audit?since=yesterday", { key: api.orgKey }), 400, "since must be a valid timestamp");
    expectFlat(await api.call("GET", "/v1/org/audit?cursor=nope", { key: api.orgKey }), 400, "cursor is invalid");
    const member = await addMember(api, "member");
    expect((await api.call("GET", "/v1/org/audit", { key: member.projectKey })).status).toBe(403);
    expect((await api.call("GET", "/v1/org/audit", { key: null })).status).toBe(401);
  });

  test("another organization's events are not listed", async () => {
    const other = await addOrganization(api);
    const theirs = (await api.call("POST", "/v1/agents", { key: other.projectKey, body: { name: "Theirs", identifier: "theirs", mode: "all" } })).body.id;
    expect((await api.call("GET", `/v1/org/audit?targetId=${theirs}`, { key: other.orgKey })).body.data.length).toBe(1);
    const mine = (await api.call("GET", "/v1/org/audit?limit=500", { key: api.orgKey })).body.data;
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.filter((e: any) => e.targetId === theirs)).toEqual([]);
  });

  test("a failed write records nothing", async () => {
    const before = (await api.call("GET", "/v1/org/audit?limit=500", { key: api.orgKey })).body.data.length;
    expect((await api.call("POST", "/v1/agents", { body: { name: "Dup", identifier: "a0", mode: "all" } })).status).toBe(409);
    expect((await api.call("PATCH", "/v1/secrets/00000000-0000-4000-8000-000000000000", { body: { name: "x" } })).status).toBe(404);
    expect((await api.call("GET", "/v1/org/audit?limit=500", { key: api.orgKey })).body.data.length).toBe(before);
  });
});

describe("the chain", () => {
  test("intact after writes; an edited row breaks it at that row, a deleted row at the next one", async () => {
    const api = await createTestApi();
    for (let i = 0; i < 4; i++) await api.call("POST", "/v1/agents", { body: { name: `C${i}`, identifier: `c${i}`, mode: "all" } });
    const { audit } = api.core.services.deps;
    const rows = await events(api);
    expect(rows.length).toBe(4);
    expect(await audit.verify()).toEqual({ intact: true, events: 4 });

    await api.core.store.query(sql`UPDATE audit_events SET changes = ${rows[1]!.changes.replace("C1", "C9")} WHERE id = ${rows[1]!.id}`);
    expect(await audit.verify()).toEqual({ intact: false, events: 1, brokenAt: rows[1]!.id });
    await api.core.store.query(sql`UPDATE audit_events SET changes = ${rows[1]!.changes} WHERE id = ${rows[1]!.id}`);
    expect(await audit.verify()).toEqual({ intact: true, events: 4 });

    await api.core.store.query(sql`DELETE FROM audit_events WHERE id = ${rows[2]!.id}`);
    expect(await audit.verify()).toEqual({ intact: false, events: 2, brokenAt: rows[3]!.id });
  });

  test("a write inside a transaction that rolls back leaves no event", async () => {
    const api = await createTestApi();
    const { store, services } = api.core;
    const scope = { actor: { kind: "cli" as const, id: "tester", userId: null }, action: "credgate test", address: null, organizationId: null, projectId: null, partnerId: null };
    await expect(
      services.deps.audit.write(scope, () => ({ targetType: "x", targetId: null }), () =>
        store.transaction(async () => {
          await services.deps.audit.record({ targetType: "thing", targetId: "1", before: null, after: { a: 1 } });
          throw new Error("rolled back");
        }),
      ),
    ).rejects.toThrow("rolled back");
    expect(await events(api)).toEqual([]);
  });
});

/** The chain recomputed by someone who can write the database but has no master key: every plain hash made to follow. */
async function rewriteChain(a: TestApi): Promise<void> {
  let previous = GENESIS_HASH;
  for (const r of await a.core.store.query<Record<string, any>>(sql`SELECT * FROM audit_events ORDER BY seq`)) {
    const hash = chainHash(previous, {
      id: r.id,
      at: r.at,
      organizationId: r.organization_id,
      partnerId: r.partner_id,
      projectId: r.project_id,
      actor: { kind: r.actor_kind, id: r.actor_id, email: r.actor_email },
      action: r.action,
      targetType: r.target_type,
      targetId: r.target_id,
      address: r.address,
      changes: JSON.parse(r.changes),
    });
    await a.core.store.query(sql`UPDATE audit_events SET hash = ${hash} WHERE id = ${r.id}`);
    previous = hash;
  }
}

const storedCheckpoint = async (a: TestApi) => (await a.core.store.query<{ value: string }>(sql`SELECT value FROM settings WHERE key = ${CHECKPOINT_SETTING}`))[0]?.value ?? null;
const checkpointFile = (a: TestApi) => join(a.dataDir, AUDIT_CHECKPOINT_FILE);
const sqlite = (a: TestApi) => a.core.store.engine === "sqlite";

describe("the anchored chain (docs/operations.md#the-checkpoint)", () => {
  async function withEvents(n: number): Promise<{ api: TestApi; rows: EventRow[] }> {
    const api = await createTestApi();
    for (let i = 0; i < n; i++) expect((await api.call("POST", "/v1/agents", { body: { name: `K${i}`, identifier: `k${i}`, mode: "all" } })).status).toBe(201);
    const rows = await events(api);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: true, events: n });
    return { api, rows };
  }

  test("the checkpoint follows every write: in the database and (SQLite) beside it, MACed under the master key's derived key", async () => {
    const { api, rows } = await withEvents(3);
    const key = api.core.services.deps.sealer.deriveKey(CHECKPOINT_KEY_PURPOSE);
    expect(readCheckpoint(key, await storedCheckpoint(api))).toEqual({ seq: 3, hash: rows[2]!.hash });
    if (sqlite(api)) {
      expect(readFileSync(checkpointFile(api), "utf8")).toBe(`${await storedCheckpoint(api)}\n`);
      expect(statSync(checkpointFile(api)).mode & 0o777).toBe(0o600);
    } else expect(existsSync(checkpointFile(api))).toBe(false);
  });

  test("one transaction with several events: the checkpoint and its copy name the last of them", async () => {
    const { api } = await withEvents(1);
    const { store, services } = api.core;
    const scope = { actor: { kind: "cli" as const, id: "tester", userId: null }, action: "credgate test", address: null, organizationId: null, projectId: null, partnerId: null };
    await services.deps.audit.write(scope, () => ({ targetType: "x", targetId: null }), () =>
      store.transaction(async () => {
        for (let i = 0; i < 5; i++) await services.deps.audit.record({ targetType: "thing", targetId: String(i), before: null, after: { i } });
      }),
    );
    const rows = await events(api);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const key = services.deps.sealer.deriveKey(CHECKPOINT_KEY_PURPOSE);
    expect(readCheckpoint(key, await storedCheckpoint(api))).toEqual({ seq: 6, hash: rows[5]!.hash });
    if (sqlite(api)) expect(readCheckpoint(key, readFileSync(checkpointFile(api), "utf8"))).toEqual({ seq: 6, hash: rows[5]!.hash });
    expect(await services.deps.audit.verify()).toEqual({ intact: true, events: 6 });
  });

  test("the two newest events deleted: 2 events missing after the one before them; every event deleted: after genesis", async () => {
    const { api, rows } = await withEvents(4);
    const { audit } = api.core.services.deps;
    await api.core.store.query(sql`DELETE FROM audit_events WHERE seq > 2`);
    const cut = await audit.verify();
    expect(cut).toEqual({ intact: false, events: 2, missing: 2, after: rows[1]!.id });
    expect(chainCheckLine(cut)).toBe(`audit chain broken: 2 events missing after ${rows[1]!.id}`);
    await api.core.store.query(sql`DELETE FROM audit_events`);
    const all = await audit.verify();
    expect(chainCheckLine(all)).toBe("audit chain broken: 4 events missing after genesis");
  });

  test("a write after a cut leaves the checkpoint where it was: the evidence stays", async () => {
    const { api } = await withEvents(4);
    const before = await storedCheckpoint(api);
    const file = sqlite(api) ? readFileSync(checkpointFile(api), "utf8") : null;
    await api.core.store.query(sql`DELETE FROM audit_events WHERE seq > 2`);
    for (const i of [1, 2, 3]) expect((await api.call("POST", "/v1/agents", { body: { name: `L${i}`, identifier: `l${i}`, mode: "all" } })).status).toBe(201);
    // Three new events take seqs 3-5 after the cut; the checkpoint still names the old event 4.
    expect(await storedCheckpoint(api)).toBe(before);
    if (file !== null) expect(readFileSync(checkpointFile(api), "utf8")).toBe(file);
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 5, checkpointMismatch: true });
  });

  test("a chain rewritten without the master key (an event edited, every plain hash recomputed): checkpoint does not match", async () => {
    const { api, rows } = await withEvents(3);
    await api.core.store.query(sql`UPDATE audit_events SET changes = ${rows[1]!.changes.replace("K1", "K9")} WHERE id = ${rows[1]!.id}`);
    await rewriteChain(api);
    const check = await api.core.services.deps.audit.verify();
    expect(check).toEqual({ intact: false, events: 3, checkpointMismatch: true });
    expect(chainCheckLine(check)).toBe("audit chain broken: checkpoint does not match");
  });

  test("the newest event deleted and the checkpoint recomputed without the key (plain SHA-256 of its parts): does not match", async () => {
    const { api, rows } = await withEvents(3);
    await api.core.store.query(sql`DELETE FROM audit_events WHERE seq = 3`);
    const forged = `ac1:2:${rows[1]!.hash}:${createHash("sha256").update(`2:${rows[1]!.hash}`).digest("hex")}`;
    await api.core.store.query(sql`UPDATE settings SET value = ${forged} WHERE key = ${CHECKPOINT_SETTING}`);
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 2, checkpointMismatch: true });
  });

  test("a seq skipped (an event deleted from the middle, the hashes after it recomputed): broken at the event after the gap", async () => {
    const { api, rows } = await withEvents(4);
    await api.core.store.query(sql`DELETE FROM audit_events WHERE seq = 2`);
    await rewriteChain(api);
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 1, brokenAt: rows[2]!.id });
  });

  test("a stale checkpoint (an earlier one put back after more writes), or none at all: does not match", async () => {
    const { api } = await withEvents(2);
    const early = await storedCheckpoint(api);
    for (const i of [1, 2]) await api.call("POST", "/v1/agents", { body: { name: `S${i}`, identifier: `s${i}`, mode: "all" } });
    await api.core.store.query(sql`UPDATE settings SET value = ${early!} WHERE key = ${CHECKPOINT_SETTING}`);
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 4, checkpointMismatch: true });
    await api.core.store.query(sql`DELETE FROM settings WHERE key = ${CHECKPOINT_SETTING}`);
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 4, checkpointMismatch: true });
  });

  test("a row removed from the database while the data dir keeps its copy: not anchored again at start (SQLite)", async () => {
    const { api } = await withEvents(2);
    if (!sqlite(api)) return;
    await api.core.store.query(sql`DELETE FROM audit_events WHERE seq = 2`);
    await api.core.store.query(sql`DELETE FROM settings WHERE key = ${CHECKPOINT_SETTING}`);
    await api.core.services.deps.audit.anchorAtStart();
    expect(await storedCheckpoint(api)).toBeNull();
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 1, checkpointMismatch: true });
  });

  test("the copy beside naming a later head (an older database put back): does not match (SQLite)", async () => {
    const { api, rows } = await withEvents(2);
    if (!sqlite(api)) return;
    const key = api.core.services.deps.sealer.deriveKey(CHECKPOINT_KEY_PURPOSE);
    writeFileSync(checkpointFile(api), formatCheckpoint(key, { seq: 5, hash: rows[1]!.hash }) + "\n");
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 2, checkpointMismatch: true });
    // A copy behind the head on the same chain is only late (it is written after each commit).
    writeFileSync(checkpointFile(api), formatCheckpoint(key, { seq: 1, hash: rows[0]!.hash }) + "\n");
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: true, events: 2 });
    rmSync(checkpointFile(api));
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: false, events: 2, checkpointMismatch: true });
    // The next start writes a missing copy from the database's checkpoint.
    await api.core.services.deps.audit.anchorAtStart();
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: true, events: 2 });
  });

  test("a store kept by a credgate without the checkpoint is anchored at its newest event at start", async () => {
    const { api } = await withEvents(2);
    await api.core.store.query(sql`DELETE FROM settings WHERE key = ${CHECKPOINT_SETTING}`);
    rmSync(checkpointFile(api), { force: true });
    await api.core.services.deps.audit.anchorAtStart();
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: true, events: 2 });
    expect((await api.call("POST", "/v1/agents", { body: { name: "After", identifier: "after", mode: "all" } })).status).toBe(201);
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: true, events: 3 });
  });

  test("a new store: anchored at genesis before its first write", async () => {
    const api = await createTestApi();
    const key = api.core.services.deps.sealer.deriveKey(CHECKPOINT_KEY_PURPOSE);
    expect(readCheckpoint(key, await storedCheckpoint(api))).toEqual({ seq: 0, hash: GENESIS_HASH });
    expect(await api.core.services.deps.audit.verify()).toEqual({ intact: true, events: 0 });
  });
});
