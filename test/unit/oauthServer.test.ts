// Self-test of the GitHub-shaped OAuth test server (test/support/oauthServer.ts): a full authorization-code
// flow with PKCE over real HTTPS, refresh-token rotation, revoked refresh → invalid_grant, /user with the
// token, denial, injected failures, GitHub's form-encoded default answer and the API echo.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { startOAuthServer, type OAuthTestServer } from "../support/oauthServer.ts";

const CLIENT_ID = "Iv1.testclient";
const CLIENT_SECRET = "s3cr3t-client";
const REDIRECT = "https://credgate.example/v1/apps/github/callback";

let srv: OAuthTestServer;

beforeAll(async () => {
  srv = await startOAuthServer({
    clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: ["https://credgate.example/v1/apps/github"] }],
    user: { login: "octocat", id: 1 },
  });
});

afterAll(async () => {
  await srv?.close();
});

const b64url = (b: Buffer) => b.toString("base64url");

function pkce(): { verifier: string; challenge: string } {
  const verifier = b64url(randomBytes(32));
  return { verifier, challenge: b64url(createHash("sha256").update(verifier).digest()) };
}

function get(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(srv.url + path, { headers, redirect: "manual", tls: { ca: srv.caPem } });
}

function postForm(path: string, form: Record<string, string>, headers: Record<string, string> = { accept: "application/json" }): Promise<Response> {
  return fetch(srv.url + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
    redirect: "manual",
    tls: { ca: srv.caPem },
  });
}

async function authorize(extra: Record<string, string> = {}): Promise<{ res: Response; location: URL | null; verifier: string; state: string }> {
  const { verifier, challenge } = pkce();
  const state = b64url(randomBytes(16));
  const q = new URLSearchParams({ client_id: CLIENT_ID, redirect_uri: REDIRECT, scope: "repo read:user", state, code_challenge: challenge, code_challenge_method: "S256", ...extra });
  const res = await get(`/login/oauth/authorize?${q}`);
  const loc = res.headers.get("location");
  return { res, location: loc ? new URL(loc) : null, verifier, state };
}

async function codeExchange(code: string, verifier: string, extra: Record<string, string> = {}): Promise<Response> {
  return postForm("/login/oauth/access_token", { grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, code_verifier: verifier, ...extra });
}

describe("authorization code + PKCE", () => {
  let accessToken = "";
  let refreshToken = "";

  test("authorize auto-approves and redirects to redirect_uri with code and state", async () => {
    const { res, location, state } = await authorize();
    expect(res.status).toBe(302);
    expect(location!.origin + location!.pathname).toBe(REDIRECT);
    expect(location!.searchParams.get("state")).toBe(state);
    expect(location!.searchParams.get("code")).toMatch(/^[0-9a-f]{40}$/);
  });

  test("code exchange (client credentials in the body) answers GitHub's JSON; /user knows the token", async () => {
    const { location, verifier } = await authorize();
    const before = srv.tokenRequests.authorization_code ?? 0;
    const res = await codeExchange(location!.searchParams.get("code")!, verifier);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.token_type).toBe("bearer");
    expect(body.access_token).toMatch(/^gho_/);
    expect(body.refresh_token).toMatch(/^ghr_/);
    expect(body.expires_in).toBe(3600);
    expect(body.scope).toBe("repo,read:user");
    expect(srv.tokenRequests.authorization_code).toBe(before + 1);
    accessToken = body.access_token as string;
    refreshToken = body.refresh_token as string;
    expect(srv.issuedAccessTokens()).toContain(accessToken);

    const me = await get("/user", { authorization: `Bearer ${accessToken}` });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ login: "octocat", id: 1 });
    const legacy = await get("/user", { authorization: `token ${accessToken}` });
    expect(legacy.status).toBe(200);
  });

  test("a code is single-use", async () => {
    const { location, verifier } = await authorize();
    const code = location!.searchParams.get("code")!;
    expect((await codeExchange(code, verifier)).status).toBe(200);
    const again = await codeExchange(code, verifier);
    expect(again.status).toBe(400);
    expect(((await again.json()) as any).error).toBe("invalid_grant");
  });

  test("a wrong code_verifier is invalid_grant; a missing client_secret is refused", async () => {
    const { location } = await authorize();
    const bad = await codeExchange(location!.searchParams.get("code")!, pkce().verifier);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toBe("invalid_grant");

    const second = await authorize();
    const noSecret = await postForm("/login/oauth/access_token", { grant_type: "authorization_code", code: second.location!.searchParams.get("code")!, redirect_uri: REDIRECT, client_id: CLIENT_ID, code_verifier: second.verifier });
    expect(noSecret.status).toBe(400);
    expect(((await noSecret.json()) as any).error).toBe("invalid_client");
  });

  test("refresh (HTTP Basic client auth) rotates both tokens; the old refresh token is then invalid_grant", async () => {
    const before = srv.tokenRequests.refresh_token ?? 0;
    const basic = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;
    const res = await postForm("/login/oauth/access_token", { grant_type: "refresh_token", refresh_token: refreshToken }, { accept: "application/json", authorization: basic });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, string>;
    expect(body.access_token).not.toBe(accessToken);
    expect(body.refresh_token).not.toBe(refreshToken);
    expect(srv.tokenRequests.refresh_token).toBe(before + 1);
    expect(srv.issued.at(-1)!.grantType).toBe("refresh_token");

    const reuse = await postForm("/login/oauth/access_token", { grant_type: "refresh_token", refresh_token: refreshToken, client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
    expect(reuse.status).toBe(400);
    expect(((await reuse.json()) as any).error).toBe("invalid_grant");

    // revokeRefreshTokens: the fresh one is refused too.
    srv.revokeRefreshTokens();
    const revoked = await postForm("/login/oauth/access_token", { grant_type: "refresh_token", refresh_token: body.refresh_token!, client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
    expect(revoked.status).toBe(400);
    expect(await revoked.json()).toMatchObject({ error: "invalid_grant" });
    expect(srv.tokenRequests.refresh_token).toBe(before + 3);
  });

  test("without Accept: application/json the token answer is form-encoded, like GitHub's", async () => {
    const { location, verifier } = await authorize();
    const res = await postForm(
      "/login/oauth/access_token",
      { grant_type: "authorization_code", code: location!.searchParams.get("code")!, redirect_uri: REDIRECT, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, code_verifier: verifier },
      {},
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/x-www-form-urlencoded");
    const form = new URLSearchParams(await res.text());
    expect(form.get("access_token")).toMatch(/^gho_/);
    expect(form.get("token_type")).toBe("bearer");
  });
});

describe("controls", () => {
  test("access-token lifetime: an expired token gets 401 at /user", async () => {
    srv.setAccessTokenLifetime(1);
    try {
      const { location, verifier } = await authorize();
      const body = (await (await codeExchange(location!.searchParams.get("code")!, verifier)).json()) as Record<string, unknown>;
      expect(body.expires_in).toBe(1);
      expect((await get("/user", { authorization: `Bearer ${body.access_token}` })).status).toBe(200);
      // A fixed wait: it waits out the token's real lifetime (1 s, the shortest the server issues).
      await Bun.sleep(1_100);
      const late = await get("/user", { authorization: `Bearer ${body.access_token}` });
      expect(late.status).toBe(401);
      expect(await late.json()).toMatchObject({ message: "Bad credentials" });
    } finally {
      srv.setAccessTokenLifetime(3600);
    }
    expect((await get("/user", { authorization: "Bearer nope" })).status).toBe(401);
    expect((await get("/user")).status).toBe(401);
  });

  test("deny: the authorize endpoint redirects with error=access_denied and the state", async () => {
    srv.setDeny(true);
    try {
      const { res, location, state } = await authorize();
      expect(res.status).toBe(302);
      expect(location!.origin + location!.pathname).toBe(REDIRECT);
      expect(location!.searchParams.get("error")).toBe("access_denied");
      expect(location!.searchParams.get("state")).toBe(state);
      expect(location!.searchParams.get("code")).toBeNull();
    } finally {
      srv.setDeny(false);
    }
  });

  test("unknown client or a redirect_uri outside the registered callback is not redirected", async () => {
    const unknown = await get(`/login/oauth/authorize?${new URLSearchParams({ client_id: "nobody", redirect_uri: REDIRECT, state: "s" })}`);
    expect(unknown.status).toBe(400);
    const elsewhere = await get(`/login/oauth/authorize?${new URLSearchParams({ client_id: CLIENT_ID, redirect_uri: "https://evil.example/cb", state: "s" })}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.headers.get("location")).toBeNull();
  });

  test("failNextTokenRequests answers n token requests with the status, counted by grant type", async () => {
    const before = srv.tokenRequests.refresh_token ?? 0;
    srv.failNextTokenRequests(2, 503);
    for (let i = 0; i < 2; i++) {
      const r = await postForm("/login/oauth/access_token", { grant_type: "refresh_token", refresh_token: "x", client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
      expect(r.status).toBe(503);
    }
    const third = await postForm("/login/oauth/access_token", { grant_type: "refresh_token", refresh_token: "x", client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
    expect(third.status).toBe(400);
    expect(srv.tokenRequests.refresh_token).toBe(before + 3);
  });

  test("other paths are an API echo that records the request", async () => {
    const before = srv.apiRequests.length;
    const r = await get("/repos/acme/api/issues?state=open", { authorization: "Bearer abc" });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ method: "GET", path: "/repos/acme/api/issues", url: "/repos/acme/api/issues?state=open", headers: { authorization: "Bearer abc" } });
    expect(srv.apiRequests.length).toBe(before + 1);
    expect(srv.apiRequests.at(-1)!.headers.authorization).toBe("Bearer abc");
  });
});
