// The doors that make a session (docs/api.md#accounts-and-sessions), attacked from outside: another site's page
// cannot sign a visitor in (login CSRF: a foreign Origin, Sec-Fetch-Site: cross-site, or a body an HTML form can
// send), and the placeholders a provision or a partner organization is made with never sign in — no partner
// membership, no invite, no password — while an invite ends with the membership it was made for.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { queryStore } from "../support/storeQuery.ts";

let cg: RunningCredgate;
let own = "";

const email = (who: string) => `${who}-${crypto.randomUUID().slice(0, 8)}@example.test`;
const cookieOf = (res: { headers: Headers }) => /^(credgate_session=[^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1] ?? "";
const tokenOf = (url: string) => new URL(url).searchParams.get("token")!;
const REJECTED = { error: { message: "Cross-site request rejected", type: "authentication_error" } };

async function partner() {
  const run = await runCli(["partner", "create", "--name", "Guard Partner", "--owner-email", email("owner"), "--data-dir", cg.dataDir, "--json"], { ...cg.env, CREDGATE_MODE: "cloud", CREDGATE_PUBLIC_URL: own });
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as { partnerKey: string; inviteUrl: string };
}

beforeAll(async () => {
  cg = await startCredgate({ env: { CREDGATE_MODE: "cloud" } });
  own = `http://localhost:${cg.apiPort}`;
}, 60_000);

afterAll(async () => {
  await cg?.stop("SIGKILL");
});

describe("login CSRF: the unauthenticated writes refuse another site (finding 3)", () => {
  /** What another site's page can make a browser send, each with the JSON body that would otherwise succeed. */
  const FOREIGN: [string, Record<string, string>][] = [
    ["a foreign Origin", { origin: "https://evil.example" }],
    ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
    ["both, as a browser sends them", { origin: "https://evil.example", "sec-fetch-site": "cross-site" }],
    ["an HTML form's text/plain body", { "content-type": "text/plain" }],
    ["an HTML form's urlencoded body", { "content-type": "application/x-www-form-urlencoded" }],
    ["a multipart body", { "content-type": "multipart/form-data; boundary=x" }],
    ["an empty Content-Type", { "content-type": "" }],
  ];

  test("POST /auth/login (by key and by password) and /auth/signup: 403, no cookie, no account", async () => {
    const password = "a long password";
    const person = email("victim");
    expect((await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: person, password } })).status).toBe(201);
    for (const [how, headers] of FOREIGN) {
      for (const [path, body] of [
        ["/v1/auth/login", { apiKey: cg.keys.projectApiKey }],
        ["/v1/auth/login", { email: person, password }],
        ["/v1/auth/signup", { email: email("csrf"), password }],
      ] as const) {
        const res = await cg.api("POST", path, { key: null, headers, body: JSON.stringify(body) });
        expect({ how, path, status: res.status, body: res.body }).toEqual({ how, path, status: 403, body: REJECTED });
        expect({ how, path, cookie: res.headers.get("set-cookie") }).toEqual({ how, path, cookie: null });
      }
    }
    const made = await queryStore<{ n: number | string }>(cg, sql`SELECT count(*) AS n FROM users WHERE email LIKE 'csrf-%'`);
    expect(Number(made[0]!.n)).toBe(0);
    // Our own page (Origin = CREDGATE_PUBLIC_URL, same-origin) and a client without Origin (CLI, SDK) sign in.
    for (const headers of [{ origin: own, "sec-fetch-site": "same-origin" }, {}, { "content-type": "application/json; charset=utf-8" }] as Record<string, string>[]) {
      const res = await cg.api("POST", "/v1/auth/login", { key: null, headers, body: { email: person, password } });
      expect(res.status).toBe(200);
      expect(cookieOf(res)).not.toBe("");
    }
  });

  test("POST /auth/accept-invite and /claim: 403, and the invite and the claim link are left unused", async () => {
    const p = await partner();
    const made = await cg.api("POST", "/v1/partner/orgs", { key: p.partnerKey, body: { name: "Guarded Org" } });
    const claimant = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: email("claimant"), password: "a long password" } });
    const cookie = cookieOf(claimant);
    for (const [how, headers] of FOREIGN) {
      const invite = await cg.api("POST", "/v1/auth/accept-invite", { key: null, headers, body: JSON.stringify({ token: tokenOf(p.inviteUrl), password: "attacker password" }) });
      expect({ how, status: invite.status, body: invite.body, cookie: invite.headers.get("set-cookie") }).toEqual({ how, status: 403, body: REJECTED, cookie: null });
      const claim = await cg.api("POST", "/v1/claim", { key: null, headers: { cookie, ...headers }, body: JSON.stringify({ token: tokenOf(made.body.claimUrl) }) });
      expect({ how, status: claim.status, body: claim.body }).toEqual({ how, status: 403, body: REJECTED });
    }
    // Both still work from our own page.
    expect((await cg.api("POST", "/v1/auth/accept-invite", { key: null, headers: { origin: own }, body: { token: tokenOf(p.inviteUrl), password: "owner password" } })).status).toBe(200);
    expect((await cg.api("POST", "/v1/claim", { key: null, headers: { cookie, origin: own }, body: { token: tokenOf(made.body.claimUrl) } })).status).toBe(200);
  });
});

describe("claim placeholders never sign in; invites end with their membership (finding 4)", () => {
  test("a provision's placeholder, seen in /team/members, cannot be made a partner member or a partner owner", async () => {
    const owner = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: email("admin"), password: "a long password" } });
    const cookie = cookieOf(owner);
    const provision = await cg.api("POST", "/v1/team/provisions", { key: null, headers: { cookie }, body: { role: "member" } });
    expect(provision.status).toBe(201);
    const members = await cg.api("GET", "/v1/team/members", { key: null, headers: { cookie } });
    const placeholder = members.body.find((m: any) => m.userId === provision.body.userId).email as string;
    expect(placeholder).toEndWith("@claim.credgate.invalid");
    const p = await partner();
    const added = await cg.api("POST", "/v1/partner/members", { key: p.partnerKey, body: { email: placeholder, role: "admin" } });
    expect({ status: added.status, body: added.body }).toEqual({ status: 404, body: { error: { message: "User not found", type: "not_found_error" } } });
    expect(added.text).not.toContain("accept-invite");
    // A partner organization's placeholder owner, too (found in the store: the API shows it nowhere).
    const org = await cg.api("POST", "/v1/partner/orgs", { key: p.partnerKey, body: { name: "Placeholder Org" } });
    const [orgPlaceholder] = await queryStore<{ email: string }>(
      cg,
      sql`SELECT u.email FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.organization_id = ${org.body.organizationId} AND m.status = 'pending'`,
    );
    expect((await cg.api("POST", "/v1/partner/members", { key: p.partnerKey, body: { email: orgPlaceholder!.email } })).status).toBe(404);
    const cli = await runCli(["partner", "create", "--name", "Sneaky", "--owner-email", placeholder, "--data-dir", cg.dataDir, "--json"], { ...cg.env, CREDGATE_MODE: "cloud", CREDGATE_PUBLIC_URL: own });
    expect(cli.code).toBe(1);
    expect(cli.stdout).not.toContain("accept-invite");
    // Nor can anyone sign up with the placeholders' domain (it would look like one, and never sign in again).
    const signup = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: `someone-${crypto.randomUUID()}@claim.credgate.invalid`, password: "a long password" } });
    expect({ status: signup.status, body: signup.body }).toEqual({ status: 400, body: { error: "email must be a valid email address" } });
    // Nothing gave it a password: it cannot sign in.
    const [row] = await queryStore<{ password_hash: string | null }>(cg, sql`SELECT password_hash FROM users WHERE email = ${placeholder}`);
    expect(row!.password_hash).toBeNull();
  });

  test("an invite a placeholder holds (one left from before) is refused: 404, no password set", async () => {
    const owner = await cg.api("POST", "/v1/auth/signup", { key: null, body: { email: email("admin2"), password: "a long password" } });
    const provision = await cg.api("POST", "/v1/team/provisions", { key: null, headers: { cookie: cookieOf(owner) }, body: {} });
    const token = "ab".repeat(32);
    const now = new Date().toISOString();
    const later = new Date(Date.now() + 3600_000).toISOString();
    await queryStore(
      cg,
      sql`INSERT INTO invites (id, token_hash, user_id, partner_id, expires_at, created_at) VALUES (${crypto.randomUUID()}, ${new Bun.CryptoHasher("sha256").update(token).digest("hex")}, ${provision.body.userId}, NULL, ${later}, ${now})`,
      true,
    );
    const res = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token, password: "placeholder password" } });
    expect({ status: res.status, body: res.body, cookie: res.headers.get("set-cookie") }).toEqual({ status: 404, body: { error: { message: "Invite not found or expired", type: "not_found_error" } }, cookie: null });
    const [row] = await queryStore<{ password_hash: string | null }>(cg, sql`SELECT password_hash FROM users WHERE id = ${provision.body.userId}`);
    expect(row!.password_hash).toBeNull();
  });

  test("a removed partner member's invite no longer sets a password", async () => {
    const p = await partner();
    const bob = email("bob");
    const added = await cg.api("POST", "/v1/partner/members", { key: p.partnerKey, body: { email: bob } });
    expect(added.status).toBe(200);
    expect(added.body.inviteUrl).toContain("/accept-invite?token=");
    expect((await cg.api("DELETE", `/v1/partner/members/${added.body.userId}`, { key: p.partnerKey })).status).toBe(204);
    const res = await cg.api("POST", "/v1/auth/accept-invite", { key: null, body: { token: tokenOf(added.body.inviteUrl), password: "bob's password" } });
    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { error: { message: "Invite not found or expired", type: "not_found_error" } } });
    expect((await cg.api("POST", "/v1/auth/login", { key: null, body: { email: bob, password: "bob's password" } })).status).toBe(401);
  });
});
