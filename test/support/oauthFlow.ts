// The browser and agent sides of OAuth e2e tests against the real credgate process and the GitHub-shaped
// test OAuth server (test/support/oauthServer.ts): credgate's authorize redirect → the provider's consent
// (auto-approved or denied by the server) → credgate's callback with the state cookie; and agents as Node with
// undici's ProxyAgent through the gateway, run asynchronously (the OAuth server lives in the test process).
// The context is read lazily, so the helpers can be made before `beforeAll` has started the processes.
import { expect } from "bun:test";
import { join } from "node:path";
import { run } from "./gateway.ts";
import type { IssuedToken, OAuthTestServer } from "./oauthServer.ts";
import type { RunningCredgate } from "./process.ts";

export interface OAuthFlowContext {
  cg: RunningCredgate;
  oauth: OAuthTestServer;
  /** CREDGATE_PUBLIC_URL of the process. */
  publicUrl: string;
  /** The gateway CA on disk. */
  caFile: string;
  /** The agent token `viaGateway` and `apiGet` use by default. */
  agentToken: string;
}

export interface AuthorizeAnswer {
  status: number;
  location: URL | null;
  /** `credgate_oauth_state=<value>` as a browser would send it back, or null. */
  cookie: string | null;
  setCookie: string | null;
  body: string;
}

export interface AgentRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface AgentResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** credgate refreshes 60 s before expiry (docs/injection.md#app-connections): a 62 s token enters its refresh window 2 s after issue. */
export const SHORT_LIFETIME = 62;
export const WINDOW_WAIT_MS = 3_000;

/** Node + undici ProxyAgent through the gateway: every request at once, each on its own tunnel if needed. */
const AGENT_SCRIPT = `
const { ProxyAgent, request } = require("undici");
const fs = require("fs");
(async () => {
  const reqs = JSON.parse(process.env.REQS);
  const dispatcher = new ProxyAgent({ uri: process.env.PROXY_URL, requestTls: { ca: fs.readFileSync(process.env.CA_FILE, "utf8") } });
  const out = await Promise.all(reqs.map(async (r) => {
    const res = await request(r.url, { dispatcher, method: r.method || "GET", headers: r.headers || {}, body: r.body });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  }));
  await dispatcher.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });`;

export function oauthFlow(context: () => OAuthFlowContext, provider = "github") {
  const ctx = context;

  /** `GET /v1/apps/{provider}/authorize` with the project key (or whatever `headers` say). */
  async function startAuthorize(query = "", opts: { provider?: string; headers?: Record<string, string> } = {}): Promise<AuthorizeAnswer> {
    const { cg } = ctx();
    const res = await fetch(`${cg.apiUrl}/v1/apps/${opts.provider ?? provider}/authorize${query}`, {
      headers: opts.headers ?? { authorization: `Bearer ${cg.keys.projectApiKey}` },
      redirect: "manual",
    });
    const loc = res.headers.get("location");
    const setCookie = res.headers.get("set-cookie");
    const m = setCookie ? /^\s*(credgate_oauth_state=[^;]*)/.exec(setCookie) : null;
    return { status: res.status, location: loc ? new URL(loc) : null, cookie: m ? m[1]! : null, setCookie, body: await res.text() };
  }

  /** The provider's consent page (auto-approved or denied by the test server): its redirect back to credgate. */
  async function consent(authorizeUrl: URL): Promise<URL> {
    const { oauth } = ctx();
    // The browser would go to https://github.com/…; the test dials the stand-in directly.
    const res = await fetch(new URL(authorizeUrl.pathname + authorizeUrl.search, oauth.url), { redirect: "manual", tls: { ca: oauth.caPem } });
    const loc = res.headers.get("location");
    if (res.status !== 302 || !loc) throw new Error(`consent answered ${res.status}: ${await res.text()}`);
    return new URL(loc);
  }

  /** The provider's redirect followed to credgate's callback (with the state cookie): where credgate sends the browser. */
  async function callback(url: URL | string, cookie: string | null): Promise<URL> {
    const res = await fetch(url, { headers: cookie ? { cookie } : {}, redirect: "manual" });
    const loc = res.headers.get("location");
    if (res.status !== 302 || !loc) throw new Error(`callback answered ${res.status}: ${await res.text()}`);
    return new URL(loc);
  }

  /** A whole connect flow; returns credgate's final redirect. */
  async function connectFlow(query = ""): Promise<URL> {
    const a = await startAuthorize(query);
    if (a.status !== 302 || !a.location) throw new Error(`authorize answered ${a.status}: ${a.body}`);
    const back = await consent(a.location);
    return await callback(back, a.cookie);
  }

  function expectSuccess(final: URL): string {
    expect(final.origin + final.pathname).toBe(`${ctx().publicUrl}/app-connect/${provider}`);
    expect(final.searchParams.get("message")).toBeNull();
    expect(final.searchParams.get("status")).toBe("success");
    const id = final.searchParams.get("connectionId");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    return id!;
  }

  function expectError(final: URL, message: string): void {
    expect(final.origin + final.pathname).toBe(`${ctx().publicUrl}/app-connect/${provider}`);
    expect(final.searchParams.get("status")).toBe("error");
    expect(final.searchParams.get("message")).toBe(message);
    expect(final.searchParams.get("connectionId")).toBeNull();
  }

  async function viaGateway(reqs: AgentRequest[], token = ctx().agentToken): Promise<AgentResponse[]> {
    const { cg, caFile } = ctx();
    const r = await run(["node", "-e", AGENT_SCRIPT], {
      env: { PROXY_URL: `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, CA_FILE: caFile, REQS: JSON.stringify(reqs), NODE_PATH: join(import.meta.dir, "../../node_modules") },
      timeoutMs: 60_000,
    });
    if (r.code !== 0) throw new Error(`agent client failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as AgentResponse[];
  }

  /** One GET to api.github.com through the gateway, tagged so the upstream record can be found. */
  async function apiGet(path = "/repos/acme/api/issues", token = ctx().agentToken, headers: Record<string, string> = {}): Promise<{ res: AgentResponse; seenAuth: string | undefined; seen: boolean }> {
    const { oauth } = ctx();
    const tag = crypto.randomUUID();
    const url = `${path}${path.includes("?") ? "&" : "?"}tag=${tag}`;
    const [res] = await viaGateway([{ url: `https://api.github.com${url}`, headers }], token);
    const rec = oauth.apiRequests.find((s) => s.url === url);
    return { res: res!, seenAuth: rec?.headers.authorization, seen: rec !== undefined };
  }

  async function connection(id: string): Promise<any> {
    const r = await ctx().cg.api("GET", `/v1/connections/${id}`);
    expect(r.status).toBe(200);
    return r.body;
  }

  /** The access token most recently issued by the OAuth server. */
  const lastIssued = (): IssuedToken => ctx().oauth.issued.at(-1)!;

  /** Reconnects `id` (authorize with connectionId) so that its new token has `lifetime` seconds. */
  async function reconnectWithLifetime(id: string, lifetime: number): Promise<string> {
    const { oauth } = ctx();
    oauth.setAccessTokenLifetime(lifetime);
    try {
      expect(expectSuccess(await connectFlow(`?connectionId=${id}`))).toBe(id);
    } finally {
      oauth.setAccessTokenLifetime(3600);
    }
    expect(lastIssued().grantType).toBe("authorization_code");
    return lastIssued().accessToken;
  }

  async function waitForRefreshWindow(): Promise<void> {
    const left = lastIssued().at + WINDOW_WAIT_MS - Date.now();
    if (left > 0) await Bun.sleep(left);
  }

  return { startAuthorize, consent, callback, connectFlow, expectSuccess, expectError, viaGateway, apiGet, connection, lastIssued, reconnectWithLifetime, waitForRefreshWindow };
}
