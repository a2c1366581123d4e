// Isolation of every way to obtain a session or a key (docs/api.md#accounts-and-sessions, docs/api.md#credentials):
// sign-up, login by password, by project key and by org key, an accepted invite, a claim (of a provision and of a partner
// organization), a provision's key, a new project's key, a partner key and a partner organization's keys, and the keys a
// regeneration or rotation gives.
// Each credential is held to the organizations it was given: its session lists no other, and aimed at every other
// organization of the instance (X-Organization-Id, X-Project-Id, the keys it can mint) it reads and changes nothing
// there. A session made from a key is the key: scoped as the key is, and it ends with it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";

let cg: RunningCredgate;

type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: any; headers: Headers; text: string }>;
type Credential = { cookie: string } | { key: string };

const cookieOf = (res: { headers: Headers }) => /^(credgate_session=[^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1] ?? "";
const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@example.test`;
const tokenOf = (url: string) => new URL(url).searchParams.get("token")!;

function as(who: Credential): Call {
  const auth: Record<string, string> = "cookie" in who ? { cookie: who.cookie } : { authorization: `Bearer ${who.key}` };
  return (method, path, body, headers = {}) => cg.api(method, path, { key: null, headers: { ...auth, ...headers }, body });
}

/** An organization of the instance with what marks it: its projects and an organization secret's name. */
interface Org {
  id: string;
  projectIds: string[];
  marker: string;
}
const orgs: Org[] = [];

/** Records an organization; gives it a marker secret with `orgKey` (its owner's org key). */
async function registerOrg(id: string, orgKey: string): Promise<Org> {
  const marker = `Marker ${id}`;
  const secret = await as({ key: orgKey })("POST", "/v1/org/secrets", { name: marker, type: "generic", value: `value-${id}-0123456789`, hostPattern: `${id}.example.test`, injectionConfig: { headerName: "x-m" } });
  expect(secret.status).toBe(201);
  const projects = (await as({ key: orgKey })("GET", "/v1/projects")).body.map((p: any) => p.id);
  const org = { id, projectIds: projects, marker };
  orgs.push(org);
  return org;
}

async function signUp(who: string) {
  const address = email(who);
  const res = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: address, password: "a long password", name: who } });
  expect(res.status).toBe(201);
  const cookie = cookieOf(res);
  const me = as({ cookie });
  const projectKey = (await me("GET", "/v1/user/api-key")).body.apiKey as string;
  const orgKey = (await me("GET", "/v1/org/api-key")).body.apiKey as string;
  const org = await registerOrg(res.body.organizationId, orgKey);
  return { email: address, cookie, userId: res.body.user.id as string, org, projectKey, orgKey };
}

async function keyLogin(key: string) {
  const res = await cg.api("POST", "/v1/auth/login", { key: null, body: { apiKey: key } });
  expect(res.status).toBe(200);
  return { cookie: cookieOf(res), setCookie: res.headers.get("set-cookie") ?? "" };
}

/**
 * Holds `who` to the organizations in `given`: its session lists no other, and every other organization of the
 * instance, named in X-Organization-Id or X-Project-Id, gives it nothing of that organization — no answer naming
 * it, no key for it, no project made in it.
 */
async function heldTo(label: string, who: Credential, given: string[]): Promise<void> {
  const call = as(who);
  if ("cookie" in who) {
    const s = await call("GET", "/v1/auth/session");
    expect({ label, status: s.status }).toEqual({ label, status: 200 });
    expect({ label, orgs: s.body.organizations.map((o: any) => o.id).filter((id: string) => !given.includes(id)) }).toEqual({ label, orgs: [] });
    expect({ label, projects: s.body.projects.map((p: any) => p.organizationId).filter((id: string) => !given.includes(id)) }).toEqual({ label, projects: [] });
  }
  const others = orgs.filter((o) => !given.includes(o.id));
  // There is always another organization to aim at (the bystander's at least).
  expect(others.length).toBeGreaterThan(0);
  for (const other of others) {
    const asOrg = { "x-organization-id": other.id };
    const asProject = { "x-project-id": other.projectIds[0]! };
    const where = `${label} → ${other.id}`;
    for (const [path, headers] of [
      ["/v1/org/settings", asOrg],
      ["/v1/org/secrets", asOrg],
      ["/v1/team/members", asOrg],
      ["/v1/projects", asOrg],
      ["/v1/auth/session", asOrg],
      ["/v1/agents", asProject],
      ["/v1/secrets", asProject],
      ["/v1/user/api-key", asProject],
    ] as const) {
      const r = await call("GET", path, undefined, headers);
      expect({ where, path, leaked: r.text.includes(other.marker) || r.text.includes(other.id) }).toEqual({ where, path, leaked: false });
    }
    // The keys it can mint are no key for the other organization.
    for (const [path, headers] of [
      ["/v1/org/api-key", asOrg],
      ["/v1/user/api-key", asProject],
    ] as const) {
      const minted = await call("GET", path, undefined, headers);
      if (minted.status !== 200) continue;
      const settings = await as({ key: minted.body.apiKey })("GET", "/v1/org/settings", undefined, asOrg);
      expect({ where, path, reached: settings.status === 200 && settings.body.id === other.id }).toEqual({ where, path, reached: false });
      const secrets = await as({ key: minted.body.apiKey })("GET", "/v1/org/secrets", undefined, asOrg);
      expect({ where, path, leaked: secrets.text.includes(other.marker) }).toEqual({ where, path, leaked: false });
    }
    // Nothing is made in it.
    const made = await call("POST", "/v1/projects", { name: `Made by ${label.slice(0, 30)}` }, asOrg);
    expect({ where, madeThere: made.status === 201 && made.body.organizationId === other.id }).toEqual({ where, madeThere: false });
  }
}

async function partner(tag: string) {
  const run = await runCli(["partner", "create", "--name", `Partner ${tag}`, "--owner-email", email(`partner-${tag}`), "--data-dir", cg.dataDir, "--json"], { ...cg.env, CREDGATE_MODE: "cloud", CREDGATE_PUBLIC_URL: `http://localhost:${cg.apiPort}` });
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as { partnerKey: string; inviteUrl: string | null };
}

let alice: Awaited<ReturnType<typeof signUp>>;
let carol: Awaited<ReturnType<typeof signUp>>;

beforeAll(async () => {
  cg = await startCredgate({ env: { CREDGATE_MODE: "cloud" } });
  alice = await signUp("alice");
  carol = await signUp("carol");
  // A bystander: an organization nobody in the tests is given.
  await signUp("zed");
}, 60_000);

afterAll(async () => {
  await cg?.stop("SIGKILL");
});

describe("sessions and keys stay in the organizations they were given", () => {
  test("sign-up and password login: the person's own organizations", async () => {
    await heldTo("alice's sign-up session", { cookie: alice.cookie }, [alice.org.id]);
    const login = await cg.api("POST", "/v1/auth/login", { key: null, body: { email: alice.email, password: "a long password" } });
    expect(login.status).toBe(200);
    expect(login.headers.get("set-cookie")).toContain("Max-Age=2592000");
    await heldTo("alice's password session", { cookie: cookieOf(login) }, [alice.org.id]);
  });

  test("a provision's key, claimed by someone else, then signed in with by the provisioner: the provision's organization only (finding 1)", async () => {
    const provision = await as({ key: alice.orgKey })("POST", "/v1/team/provisions", { role: "admin" });
    expect(provision.status).toBe(201);
    const key = provision.body.apiKey as string;
    await heldTo("the provision's key", { key }, [alice.org.id]);
    // Carol claims it: she joins Alice's organization and inherits the key.
    const claimed = await as({ cookie: carol.cookie })("POST", "/v1/claim", { token: tokenOf(provision.body.claimUrl) });
    expect(claimed.status).toBe(200);
    await heldTo("carol's session after the claim", { cookie: carol.cookie }, [carol.org.id, alice.org.id]);
    // Alice kept the key: signing in with it is the key, not Carol.
    const session = await keyLogin(key);
    const listed = await as(session)("GET", "/v1/auth/session");
    expect(listed.body.organizations.map((o: any) => o.id)).toEqual([alice.org.id]);
    expect(listed.body.projects.map((p: any) => p.id)).toEqual([provision.body.projectId]);
    expect(listed.body.scope).toEqual({ kind: "project", organizationId: alice.org.id, projectId: provision.body.projectId });
    const carolsOrg = await as(session)("GET", "/v1/org/secrets", undefined, { "x-organization-id": carol.org.id });
    expect(carolsOrg.status).toBe(403);
    expect(carolsOrg.body.error.message).toBe("Not a member of this organization");
    await heldTo("a session from the claimed provision key", session, [alice.org.id]);
    // Nor can it claim in the holder's name: a key's session is not the person.
    const another = await as({ key: alice.orgKey })("POST", "/v1/team/provisions", {});
    const claimByKey = await as(session)("POST", "/v1/claim", { token: tokenOf(another.body.claimUrl) });
    expect({ status: claimByKey.status, body: claimByKey.body }).toEqual({ status: 403, body: { error: { message: "Insufficient permissions", type: "authentication_error" } } });
    // Carol regenerates the key: the key and the session made from it end together.
    const regenerated = await as({ cookie: carol.cookie })("POST", "/v1/user/api-key/regenerate", undefined, { "x-project-id": provision.body.projectId });
    expect(regenerated.status).toBe(200);
    expect((await as({ key })("GET", "/v1/agents")).status).toBe(401);
    expect((await as(session)("GET", "/v1/auth/session")).status).toBe(401);
    expect((await as(session)("GET", "/v1/agents")).status).toBe(401);
    await heldTo("the regenerated provision key", { key: regenerated.body.apiKey }, [alice.org.id]);
  });

  test("a project key's session reaches that project only; an org key's that organization; both last 12 h at most", async () => {
    const second = await as({ key: alice.orgKey })("POST", "/v1/projects", { name: "Second" });
    expect(second.status).toBe(201);
    // A new project's key for its creator is one more way to get a key.
    await heldTo("a new project's key", { key: second.body.apiKey }, [alice.org.id]);
    const projectSession = await keyLogin(alice.projectKey);
    expect(projectSession.setCookie).toMatch(/Max-Age=(\d+)/);
    expect(Number(/Max-Age=(\d+)/.exec(projectSession.setCookie)![1])).toBeLessThanOrEqual(43200);
    const s = await as(projectSession)("GET", "/v1/auth/session");
    expect(s.body.projects.map((p: any) => p.id)).toEqual([alice.org.projectIds[0]]);
    expect(s.body.scope.kind).toBe("project");
    expect((await as(projectSession)("GET", "/v1/agents", undefined, { "x-project-id": second.body.id })).status).toBe(401);
    expect((await as(projectSession)("GET", "/v1/projects")).body.map((p: any) => p.id)).toEqual([alice.org.projectIds[0]]);
    await heldTo("alice's project-key session", projectSession, [alice.org.id]);

    const orgSession = await keyLogin(alice.orgKey);
    const o = await as(orgSession)("GET", "/v1/auth/session");
    expect(o.body.organizations.map((x: any) => x.id)).toEqual([alice.org.id]);
    expect(o.body.projects.map((p: any) => p.id)).toEqual(expect.arrayContaining([alice.org.projectIds[0], second.body.id]));
    expect(o.body.projects.filter((p: any) => p.organizationId !== alice.org.id)).toEqual([]);
    expect(o.body.scope).toEqual({ kind: "organization", organizationId: alice.org.id, projectId: null });
    expect((await as(orgSession)("GET", "/v1/agents", undefined, { "x-project-id": second.body.id })).status).toBe(200);
    await heldTo("alice's org-key session", orgSession, [alice.org.id]);
    // Stored with its 12-hour end.
    const rows = await queryStore<{ created_at: string; expires_at: string; api_key_hash: string | null }>(cg, sql`SELECT created_at, expires_at, api_key_hash FROM sessions WHERE api_key_hash IS NOT NULL`);
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(Date.parse(r.expires_at) - Date.parse(r.created_at)).toBeLessThanOrEqual(12 * 3600 * 1000);
    // A password session is the person's: all of their organizations, 30 days.
    const password = await as({ cookie: alice.cookie })("GET", "/v1/auth/session");
    expect(password.body.scope).toEqual({ kind: "account", organizationId: null, projectId: null });
  });

  test("a project key never reaches the organization key, nor does its session (finding 6)", async () => {
    const member = await as({ key: alice.orgKey })("POST", "/v1/team/provisions", { role: "admin" });
    const key = member.body.apiKey as string;
    for (const who of [{ key }, { key: alice.projectKey }, await keyLogin(alice.projectKey)] as Credential[]) {
      for (const method of ["GET", "POST"]) {
        const r = await as(who)(method, method === "GET" ? "/v1/org/api-key" : "/v1/org/api-key/regenerate");
        expect({ method, status: r.status, body: r.body }).toEqual({ method, status: 403, body: { error: { message: "Insufficient permissions", type: "authentication_error" } } });
      }
    }
    // The org key itself still mints and regenerates its own.
    expect((await as({ key: alice.orgKey })("GET", "/v1/org/api-key")).body.apiKey).toBe(alice.orgKey);
  });

  test("a partner organization's keys, and a session from them after the customer claimed: that organization only", async () => {
    const p = await partner("acme");
    await heldTo("a partner key", { key: p.partnerKey }, []);
    const made = await as({ key: p.partnerKey })("POST", "/v1/partner/orgs", { name: "Customer Org" });
    expect(made.status).toBe(201);
    const partnerOrg = await registerOrg(made.body.organizationId, made.body.orgApiKey);
    await heldTo("the partner org's org key", { key: made.body.orgApiKey }, [partnerOrg.id]);
    await heldTo("the partner org's project key", { key: made.body.projectApiKey }, [partnerOrg.id]);
    // Rotation ends the keys and the sessions made from them.
    const before = await keyLogin(made.body.orgApiKey);
    await heldTo("a session from the partner org's org key", before, [partnerOrg.id]);
    const rotated = await as({ key: p.partnerKey })("POST", `/v1/partner/orgs/${partnerOrg.id}/rotate-tokens`);
    expect(rotated.status).toBe(200);
    expect((await as(before)("GET", "/v1/auth/session")).status).toBe(401);
    expect((await as({ key: made.body.orgApiKey })("GET", "/v1/org/settings")).status).toBe(401);
    await heldTo("the rotated org key", { key: rotated.body.orgApiKey }, [partnerOrg.id]);
    await heldTo("the rotated project key", { key: rotated.body.projectApiKey }, [partnerOrg.id]);
    // Erin claims it; the partner kept the org key and signs in with it: Erin's own organization stays hers.
    const erin = await signUp("erin");
    const claim = await as({ key: p.partnerKey })("POST", `/v1/partner/orgs/${partnerOrg.id}/claim-link`);
    expect((await as({ cookie: erin.cookie })("POST", "/v1/claim", { token: tokenOf(claim.body.claimUrl) })).status).toBe(200);
    await heldTo("erin after claiming", { cookie: erin.cookie }, [erin.org.id, partnerOrg.id]);
    const kept = await keyLogin(rotated.body.orgApiKey);
    const listed = await as(kept)("GET", "/v1/auth/session");
    expect(listed.body.organizations.map((o: any) => o.id)).toEqual([partnerOrg.id]);
    const erinsSecrets = await as(kept)("GET", "/v1/org/secrets", undefined, { "x-organization-id": erin.org.id });
    expect(erinsSecrets.status).toBe(403);
    await heldTo("a session from the kept org key", kept, [partnerOrg.id]);
    // Erin regenerates the organization key: the partner's session ends.
    const regenerated = await as({ cookie: erin.cookie })("POST", "/v1/org/api-key/regenerate", undefined, { "x-organization-id": partnerOrg.id });
    expect(regenerated.status).toBe(200);
    expect((await as(kept)("GET", "/v1/auth/session")).status).toBe(401);
    await heldTo("erin's regenerated org key", { key: regenerated.body.apiKey }, [partnerOrg.id]);
  });

  test("an accepted invite: the partner member's session reaches no organization", async () => {
    const p = await partner("beta");
    const added = await as({ key: p.partnerKey })("POST", "/v1/partner/members", { email: email("dan"), role: "admin" });
    expect(added.status).toBe(200);
    const accepted = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token: tokenOf(added.body.inviteUrl), password: "dan's password" } });
    expect(accepted.status).toBe(200);
    await heldTo("dan's invite session", { cookie: cookieOf(accepted) }, []);
    const owner = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token: tokenOf(p.inviteUrl!), password: "owner password" } });
    expect(owner.status).toBe(200);
    await heldTo("the partner owner's invite session", { cookie: cookieOf(owner) }, []);
  });

  test("removing a member ends the sessions made from their keys", async () => {
    const provision = await as({ key: alice.orgKey })("POST", "/v1/team/provisions", { role: "member" });
    const frank = await signUp("frank");
    expect((await as({ cookie: frank.cookie })("POST", "/v1/claim", { token: tokenOf(provision.body.claimUrl) })).status).toBe(200);
    const session = await keyLogin(provision.body.apiKey);
    expect((await as(session)("GET", "/v1/agents")).status).toBe(200);
    expect((await as({ key: alice.orgKey })("DELETE", `/v1/team/members/${frank.userId}`)).status).toBe(204);
    expect((await as(session)("GET", "/v1/agents")).status).toBe(401);
    expect((await as(session)("GET", "/v1/auth/session")).status).toBe(401);
  });
});
