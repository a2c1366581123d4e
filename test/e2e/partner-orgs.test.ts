// Partners and their organizations (docs/api.md#partners, docs/api.md#accounts-and-sessions accept-invite, docs/guards.md#claim-required, docs/configuration.md#commands `credgate partner create`)
// through the real cloud process: the CLI makes a partner (key and owner invite); the owner sets a password; the
// partner creates an organization whose credentials work at once and whose agent meets claim_required; a person
// claims it; links are replaced, credentials rotated, projects managed; and nothing of another partner's is reachable.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { curlThroughGateway } from "../support/curl.ts";
import { basic, gatewayCa, openConnect, resolveEntries } from "../support/gateway.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.partner.test";

let cg: RunningCredgate;
let up: TestUpstream;
let caFile = "";

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_MODE: "cloud", CREDGATE_EGRESS_ALLOW: "127.0.0.1/32", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], up.port) } });
  caFile = (await gatewayCa(cg)).file;
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

async function createPartner(name: string) {
  const owner = `owner-${crypto.randomUUID().slice(0, 8)}@example.test`;
  const r = await runCli(["partner", "create", "--name", name, "--owner-email", owner, "--data-dir", cg.dataDir, "--json"], { ...cg.env, CREDGATE_MODE: "cloud", CREDGATE_PUBLIC_URL: `http://localhost:${cg.apiPort}` });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return { ...(JSON.parse(r.stdout) as { partnerId: string; partnerKey: string; inviteUrl: string }), owner };
}

const as = (key: string) => (method: string, path: string, body?: unknown) => cg.api(method, path, { key, body });
const cookieOf = (res: { headers: Headers }) => /^(credgate_session=[^;]+)/.exec(res.headers.get("set-cookie") ?? "")![1]!;

describe("credgate partner create, and the owner's invite", () => {
  test("prints a partner key and an invite; the owner sets a password there and signs in as the partner's owner", async () => {
    const p = await createPartner("Acme Resellers");
    expect(p.partnerKey).toMatch(/^svc_partner_[0-9a-f]{64}$/);
    expect(p.inviteUrl).toMatch(new RegExp(`^http://localhost:${cg.apiPort}/accept-invite\\?token=[0-9a-f]{64}$`));
    const token = new URL(p.inviteUrl).searchParams.get("token")!;
    const accepted = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token, password: "partner password 1" } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.user.email).toBe(p.owner);
    const session = await cg.api("GET", "/v1/auth/session", { key: null, headers: { cookie: cookieOf(accepted) } });
    expect(session.body.partner).toEqual({ id: p.partnerId, name: "Acme Resellers", role: "owner" });
    // The owner's session works on the partner routes; the invite is used up.
    expect((await cg.api("GET", "/v1/partner/orgs", { key: null, headers: { cookie: cookieOf(accepted) } })).status).toBe(200);
    const again = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token, password: "another password" } });
    expect(again.status).toBe(404);
    expect(again.body.error.message).toBe("Invite not found or expired");
    const login = await cg.api("POST", "/v1/auth/login", { key: null, body: { email: p.owner, password: "partner password 1" } });
    expect(login.status).toBe(200);
  });

  test("outside cloud mode the command refuses with one line", async () => {
    const r = await runCli(["partner", "create", "--name", "X", "--owner-email", "x@example.test", "--data-dir", cg.dataDir], { ...cg.env, CREDGATE_MODE: "self-hosted" });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("credgate: partners exist only in cloud mode: set CREDGATE_MODE=cloud\n");
  });
});

describe("partner organizations", () => {
  test("create: the credentials work at once, the agent meets claim_required, the claim makes everything work", async () => {
    const p = await createPartner("Claimable Partner");
    const partner = as(p.partnerKey);
    const made = await partner("POST", "/v1/partner/orgs", { name: "Customer One" });
    expect(made.status).toBe(201);
    expect(made.body.orgApiKey).toMatch(/^svc_org_[0-9a-f]{64}$/);
    expect(made.body.projectApiKey).toMatch(/^svc_[0-9a-f]{64}$/);
    expect(made.body.agentToken).toMatch(/^agt_[0-9a-f]{64}$/);
    const org = as(made.body.orgApiKey);
    const project = as(made.body.projectApiKey);
    expect((await project("GET", "/v1/agents")).body.map((a: any) => a.id)).toEqual([made.body.agentId]);
    expect((await project("POST", "/v1/secrets", { name: "api", type: "generic", value: "customer-one-secret", hostPattern: HOST, injectionConfig: { headerName: "x-api-key" } })).status).toBe(201);
    expect((await org("GET", "/v1/team/members")).status).toBe(200);

    const listed = (await partner("GET", "/v1/partner/orgs")).body;
    expect(listed.map((o: any) => [o.id, o.name, o.status, o.claimedByEmail])).toEqual([[made.body.organizationId, "Customer One", "unclaimed", null]]);
    expect(listed[0].projects.map((x: any) => x.name)).toEqual(["Default"]);

    const blocked = await curlThroughGateway(cg, `https://${HOST}:${up.port}/before`, { caFile, agentToken: made.body.agentToken });
    expect(blocked.status).toBe(403);
    expect(blocked.json).toMatchObject({ error: "claim_required", claim_url: made.body.claimUrl });
    expect(blocked.json.message).toContain("This organization was set up by Claimable Partner");

    const email = `customer-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const signup = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email, password: "customer password" } });
    const token = new URL(made.body.claimUrl).searchParams.get("token")!;
    const claimed = await cg.api("POST", "/v1/claim", { key: null, headers: { cookie: cookieOf(signup) }, body: { token } });
    expect(claimed.body).toEqual({ kind: "organization", organizationId: made.body.organizationId, projectId: made.body.projectId });

    const after = await curlThroughGateway(cg, `https://${HOST}:${up.port}/after`, { caFile, agentToken: made.body.agentToken });
    expect(after.status).toBe(200);
    expect(up.seen.at(-1)!.headers["x-api-key"]).toBe("customer-one-secret");
    // The keys came along to the claimer and keep working.
    expect((await project("GET", "/v1/user")).body.email).toBe(email);
    const view = (await partner("GET", `/v1/partner/orgs/${made.body.organizationId}`)).body;
    expect(view).toMatchObject({ status: "claimed", claimedByEmail: email });
    // Claimed: the partner can no longer delete it, reissue its link or rotate its credentials.
    for (const [method, path] of [["DELETE", ""], ["POST", "/claim-link"], ["POST", "/rotate-tokens"]] as const) {
      const r = await partner(method, `/v1/partner/orgs/${made.body.organizationId}${path}`);
      expect(r.status).toBe(409);
      expect(r.body.error.message).toBe("Organization has already been claimed");
    }
  });

  test("a new claim link kills the old; rotating kills the old credentials; projects; delete while unclaimed", async () => {
    const p = await createPartner("Rotating Partner");
    const partner = as(p.partnerKey);
    const made = (await partner("POST", "/v1/partner/orgs", { name: "Customer Two" })).body;
    const relink = await partner("POST", `/v1/partner/orgs/${made.organizationId}/claim-link`);
    expect(relink.status).toBe(200);
    expect(relink.body.claimUrl).not.toBe(made.claimUrl);
    const signup = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: `late-${crypto.randomUUID().slice(0, 8)}@example.test`, password: "customer password" } });
    const oldToken = new URL(made.claimUrl).searchParams.get("token")!;
    expect((await cg.api("POST", "/v1/claim", { key: null, headers: { cookie: cookieOf(signup) }, body: { token: oldToken } })).status).toBe(404);

    const rotated = await partner("POST", `/v1/partner/orgs/${made.organizationId}/rotate-tokens`);
    expect(rotated.status).toBe(200);
    expect((await as(made.orgApiKey)("GET", "/v1/team/members")).status).toBe(401);
    expect((await as(made.projectApiKey)("GET", "/v1/agents")).status).toBe(401);
    expect((await as(rotated.body.projectApiKey)("GET", "/v1/agents")).status).toBe(200);
    expect((await as(rotated.body.orgApiKey)("GET", "/v1/team/members")).status).toBe(200);
    const oldAgent = await openConnect(cg.gatewayPort, `${HOST}:${up.port}`, basic(made.agentToken));
    expect(oldAgent.connect.status).toBe(407);
    oldAgent.socket.destroy();

    const project = await partner("POST", `/v1/partner/orgs/${made.organizationId}/projects`, { name: "Second" });
    expect(project.status).toBe(201);
    expect((await partner("GET", `/v1/partner/orgs/${made.organizationId}/projects`)).body.map((x: any) => x.name)).toEqual(["Default", "Second"]);
    expect((await partner("DELETE", `/v1/partner/orgs/${made.organizationId}/projects/${project.body.id}`)).status).toBe(204);
    const only = await partner("DELETE", `/v1/partner/orgs/${made.organizationId}/projects/${made.projectId}`);
    expect(only.status).toBe(400);
    expect(only.body.error.message).toBe("Cannot delete the only project in the organization");

    expect((await partner("DELETE", `/v1/partner/orgs/${made.organizationId}`)).status).toBe(204);
    expect((await partner("GET", `/v1/partner/orgs/${made.organizationId}`)).status).toBe(404);
    expect((await as(rotated.body.projectApiKey)("GET", "/v1/agents")).status).toBe(401);
  });

  test("another partner's organizations do not exist for a partner; other credentials get 401 on partner routes", async () => {
    const a = await createPartner("Partner A");
    const b = await createPartner("Partner B");
    const aOrg = (await as(a.partnerKey)("POST", "/v1/partner/orgs", { name: "A's customer" })).body;
    const asB = as(b.partnerKey);
    expect((await asB("GET", "/v1/partner/orgs")).body).toEqual([]);
    for (const [method, path] of [
      ["GET", ""],
      ["DELETE", ""],
      ["POST", "/claim-link"],
      ["POST", "/rotate-tokens"],
      ["GET", "/projects"],
    ] as const) {
      const r = await asB(method, `/v1/partner/orgs/${aOrg.organizationId}${path}`);
      expect(r.status).toBe(404);
      expect(r.body.error.message).toBe("Organization not found");
      expect(r.text).not.toContain("A's customer");
    }
    for (const key of [aOrg.orgApiKey, aOrg.projectApiKey, cg.keys.projectApiKey]) {
      expect((await as(key)("GET", "/v1/partner/orgs")).status).toBe(401);
    }
    // A partner key is not an organization credential.
    expect((await as(a.partnerKey)("GET", "/v1/agents")).status).toBe(401);
  });
});

describe("partner secrets and the organization's side (docs/api.md#partners secrets, docs/api.md#partners)", () => {
  test("a partner secret applies to its organizations below their own; inline only; status, inherited secrets, detach", async () => {
    const p = await createPartner("Secret Partner");
    const partner = as(p.partnerKey);
    const vault = await partner("POST", "/v1/partner/secrets", { name: "v", type: "generic", valueSource: "external_vault", opRef: "op://v/i/f", hostPattern: HOST, injectionConfig: { headerName: "x-partner" } });
    expect(vault.status).toBe(400);
    expect(vault.body.error.message).toBe("Partner secrets must hold an inline value (valueSource external_vault is not supported)");
    // Nor a secret store (docs/injection.md#secret-stores): a partner's values would reach every customer.
    const store = await partner("POST", "/v1/partner/secrets", { name: "s", type: "generic", valueSource: "vault", storeRef: "aws-sm://eu-west-1/x", hostPattern: HOST, injectionConfig: { headerName: "x-partner" } });
    expect(store.status).toBe(400);
    expect(store.body.error.message).toBe("Partner secrets must hold an inline value (valueSource vault is not supported)");
    const secret = await partner("POST", "/v1/partner/secrets", { name: "shared", type: "generic", value: "partner-wide-value", hostPattern: HOST, injectionConfig: { headerName: "x-partner" } });
    expect(secret.status).toBe(201);
    expect((await partner("GET", "/v1/partner/secrets")).body.map((s: any) => [s.name, s.scope])).toEqual([["shared", "partner"]]);
    expect(JSON.stringify((await partner("GET", "/v1/partner/secrets")).body)).not.toContain("partner-wide-value");

    const made = (await partner("POST", "/v1/partner/orgs", { name: "Customer Three" })).body;
    const signup = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: `three-${crypto.randomUUID().slice(0, 8)}@example.test`, password: "customer password" } });
    const cookie = cookieOf(signup);
    const unclaimedDetach = await as(made.orgApiKey)("POST", "/v1/org/partner/detach");
    expect(unclaimedDetach.status).toBe(400);
    expect(unclaimedDetach.body.error.message).toBe("Organization must be claimed before detaching");
    expect((await cg.api("POST", "/v1/claim", { key: null, headers: { cookie }, body: { token: new URL(made.claimUrl).searchParams.get("token") } })).status).toBe(200);

    const send = async (path: string) => {
      const r = await curlThroughGateway(cg, `https://${HOST}:${up.port}${path}`, { caFile, agentToken: made.agentToken });
      expect(r.status).toBe(200);
      return up.seen.at(-1)!.headers["x-partner"];
    };
    expect(await send("/partner-secret")).toBe("partner-wide-value");
    const inOrg = as(made.orgApiKey);
    // Effective credentials list what the gateway injects, the partner's secret included (services/access.ts).
    const effective = async () => (await as(made.projectApiKey)("GET", `/v1/agents/${made.agentId}/effective-credentials`)).body.secrets.map((s: any) => [s.name, s.scope, s.status]);
    expect(await effective()).toEqual([["shared", "partner", "usable"]]);
    expect((await inOrg("GET", "/v1/org/partner/status")).body).toEqual({ partnerManaged: true, detached: false, partnerName: "Secret Partner" });
    expect((await inOrg("GET", "/v1/org/partner/inherited-secrets")).body.map((s: any) => s.name)).toEqual(["shared"]);

    // The organization's own secret for the same header wins over the partner's.
    const own = await inOrg("POST", "/v1/org/secrets", { name: "own", type: "generic", value: "organization-value", hostPattern: HOST, injectionConfig: { headerName: "x-partner" } });
    expect(own.status).toBe(201);
    expect(await send("/own-wins")).toBe("organization-value");
    expect((await inOrg("DELETE", `/v1/org/secrets/${own.body.id}`)).status).toBe(204);
    expect(await send("/partner-again")).toBe("partner-wide-value");

    expect((await inOrg("POST", "/v1/org/partner/detach")).body).toEqual({ success: true });
    expect(await send("/detached")).toBeUndefined();
    expect(await effective()).toEqual([]);
    expect((await inOrg("GET", "/v1/org/partner/inherited-secrets")).body).toEqual([]);
    expect((await inOrg("GET", "/v1/org/partner/status")).body).toEqual({ partnerManaged: true, detached: true, partnerName: "Secret Partner" });
    const twice = await inOrg("POST", "/v1/org/partner/detach");
    expect(twice.status).toBe(400);
    expect(twice.body.error.message).toBe("Partner already detached");
    expect((await partner("GET", `/v1/partner/orgs/${made.organizationId}`)).body.status).toBe("detached");
    // An organization with no partner.
    const solo = await as(cg.keys.orgApiKey)("POST", "/v1/org/partner/detach");
    expect(solo.status).toBe(400);
    expect(solo.body.error.message).toBe("Organization is not partner-managed");
  });
});

describe("partner budgets (docs/budgets.md#partner-budgets)", () => {
  test("set, list with spend, replace, delete; only on the partner's LLM keys, only for its organizations", async () => {
    const p = await createPartner("Budget Partner");
    const partner = as(p.partnerKey);
    const llm = (await partner("POST", "/v1/partner/secrets", { name: "claude", type: "llm_a", value: "sk-ant-api03-budget-partner", hostPattern: "api.anthropic.com" })).body;
    const generic = (await partner("POST", "/v1/partner/secrets", { name: "g", type: "generic", value: "generic-partner-value", hostPattern: HOST, injectionConfig: { headerName: "x-g" } })).body;
    const made = (await partner("POST", "/v1/partner/orgs", { name: "Budgeted" })).body;
    const path = (secretId: string) => `/v1/partner/orgs/${made.organizationId}/secrets/${secretId}/budget`;

    const set = await partner("POST", path(llm.id), { limitCents: 500 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ secretId: llm.id, organizationId: made.organizationId, limitCents: 500, period: "monthly", spentCents: 0 });
    const replaced = await partner("POST", path(llm.id), { limitCents: 900, period: "total" });
    expect(replaced.body).toMatchObject({ limitCents: 900, period: "total" });
    expect((await partner("GET", `/v1/partner/orgs/${made.organizationId}/budgets`)).body).toEqual([replaced.body]);

    for (const [body, message] of [
      [{ limitCents: 0 }, "limitCents must be between 1 and 100000000"],
      [{ limitCents: 100000001 }, "limitCents must be between 1 and 100000000"],
      [{ limitCents: 5, period: "weekly" }, "period must be one of: monthly, total"],
    ] as const) {
      const bad = await partner("POST", path(llm.id), body);
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ error: message });
    }
    const notLlm = await partner("POST", path(generic.id), { limitCents: 5 });
    expect(notLlm.status).toBe(400);
    expect(notLlm.body.error.message).toBe("Budgets are only supported for LLM keys");

    const other = await createPartner("Other Budget Partner");
    const asOther = as(other.partnerKey);
    expect((await asOther("GET", `/v1/partner/orgs/${made.organizationId}/budgets`)).body.error.message).toBe("Organization not found");
    const otherOrg = (await asOther("POST", "/v1/partner/orgs", { name: "Other's" })).body;
    const foreignSecret = await asOther("POST", `/v1/partner/orgs/${otherOrg.organizationId}/secrets/${llm.id}/budget`, { limitCents: 5 });
    expect(foreignSecret.status).toBe(404);
    expect(foreignSecret.body.error.message).toBe("Secret not found");

    expect((await partner("DELETE", path(llm.id))).status).toBe(204);
    const gone = await partner("DELETE", path(llm.id));
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toBe("Budget not found");
    expect((await partner("GET", `/v1/partner/orgs/${made.organizationId}/budgets`)).body).toEqual([]);
  });
});

describe("partner members (docs/api.md#partners)", () => {
  test("owner and admins manage the people; members read; the owner is fixed; one partner per person", async () => {
    const p = await createPartner("People Partner");
    const partner = as(p.partnerKey);
    const email = `member-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const added = await partner("POST", "/v1/partner/members", { email, role: "member" });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ email, role: "member" });
    expect(added.body.inviteUrl).toMatch(/\/accept-invite\?token=[0-9a-f]{64}$/);
    const token = new URL(added.body.inviteUrl).searchParams.get("token")!;
    const accepted = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token, password: "member password" } });
    const memberSession = (method: string, path: string, body?: unknown) => cg.api(method, path, { key: null, headers: { cookie: cookieOf(accepted) }, body });

    expect((await memberSession("GET", "/v1/partner/members")).body.map((m: any) => [m.email, m.role])).toEqual([
      [p.owner, "owner"],
      [email, "member"],
    ]);
    // A member works with organizations but cannot manage people.
    expect((await memberSession("POST", "/v1/partner/orgs", { name: "By a member" })).status).toBe(201);
    expect((await memberSession("POST", "/v1/partner/members", { email: "x@example.test" })).status).toBe(403);

    expect((await partner("POST", "/v1/partner/members", { email })).body.error.message).toBe("This user is already a partner member");
    const other = await createPartner("Other People Partner");
    const taken = await as(other.partnerKey)("POST", "/v1/partner/members", { email });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toBe("This user already belongs to another partner");
    const badRole = await partner("POST", "/v1/partner/members", { email: "y@example.test", role: "owner" });
    expect(badRole.status).toBe(400);
    expect(badRole.body).toEqual({ error: "role must be one of: admin, member" });
    const badEmail = await partner("POST", "/v1/partner/members", { email: "nope" });
    expect(badEmail.body).toEqual({ error: "email must be a valid email address" });

    const userId = added.body.userId;
    expect((await partner("PATCH", `/v1/partner/members/${userId}/role`, { role: "admin" })).body).toEqual({ success: true });
    expect((await memberSession("POST", "/v1/partner/members", { email: `z-${crypto.randomUUID().slice(0, 8)}@example.test` })).status).toBe(200);
    const ownerId = (await partner("GET", "/v1/partner/members")).body.find((m: any) => m.role === "owner").userId;
    const fixed = await partner("PATCH", `/v1/partner/members/${ownerId}/role`, { role: "member" });
    expect(fixed.status).toBe(400);
    expect(fixed.body.error.message).toBe("The partner owner cannot be changed or removed");
    expect((await partner("DELETE", `/v1/partner/members/${ownerId}`)).status).toBe(400);

    expect((await partner("DELETE", `/v1/partner/members/${userId}`)).status).toBe(204);
    const gone = await partner("DELETE", `/v1/partner/members/${userId}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toBe("Partner member not found");
    // No longer a partner member: the session gets 403 on partner routes.
    expect((await memberSession("GET", "/v1/partner/orgs")).status).toBe(403);
  });
});
