// App connections at the real gateway (docs/injection.md#precedence, docs/injection.md#app-connections, docs/injection.md#grants connection grants, docs/policy.md#app-blocklists, docs/gateway.md#guidance-rewrite
// guidance): direct-credential connections injected on their app's hosts, the winning-connection rules,
// tool-level allow/ask/block of a custom grant, blocklists blocking before egress. The real credgate process,
// a real TLS upstream standing in for the vendors' API hosts (reached through CREDGATE_RESOLVE), curl.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { curlThroughGateway, type CurlOptions } from "../support/curl.ts";
import { eventually, gatewayCa, resolveEntries } from "../support/gateway.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const RESEND = "api.resend.com";
const DATADOG = "api.datadoghq.com";
const VERCEL = "api.vercel.com";
const CLOUDFLARE = "api.cloudflare.com";
const HOSTS = [RESEND, DATADOG, VERCEL, CLOUDFLARE];

let pki: TestPki;
let up: TestUpstream;
let cg: RunningCredgate;
let ca: { pem: string; file: string };

beforeAll(async () => {
  pki = makePki(HOSTS);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries(HOSTS, up.port), CREDGATE_APPROVAL_POLL_SECONDS: "1" } });
  ca = await gatewayCa(cg);
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

const url = (host: string, path: string) => `https://${host}:${up.port}${path}`;
const seen = (host: string) => up.seen.filter((s) => s.host === `${host}:${up.port}`);
/**
 * The headers of the last request the upstream received. (Its echo in the response body cannot say: the echo
 * guard redacts injected values there, docs/guards.md#echo-guard.)
 */
const upstreamHeaders = () => up.seen.at(-1)!.headers;
/** CREDGATE_PUBLIC_URL's default: the API port on localhost. */
const base = () => cg.apiUrl.replace("127.0.0.1", "localhost");
const curl = (target: string, opts: CurlOptions = {}) => curlThroughGateway(cg, target, { caFile: ca.file, ...opts });

async function connect(provider: string, fields: Record<string, string>, label?: string, org = false) {
  const res = await cg.api("POST", `/v1/${org ? "org/" : ""}apps/${provider}/connect`, { body: { fields, ...(label ? { label } : {}) }, ...(org ? { key: cg.keys.orgApiKey } : {}) });
  if (res.status !== 200) throw new Error(`connect ${provider}: ${res.status} ${res.text}`);
  return res.body.connection as { id: string; label: string };
}

async function agent(identifier: string, mode: "all" | "grants") {
  const made = await cg.api("POST", "/v1/agents", { body: { name: identifier, identifier, mode } });
  const list = await cg.api("GET", "/v1/agents");
  const token = list.body.find((a: any) => a.id === made.body.id).accessToken as string;
  return { id: made.body.id as string, token };
}

describe("direct-credential connections at the gateway", () => {
  test("a resend connection is injected as Bearer on api.resend.com; the response names the connection", async () => {
    const conn = await connect("resend", { apiKey: "re_live_secret_one" }, "Mail");
    const r = await curl(url(RESEND, "/emails?limit=2"), { headers: ["Authorization: Bearer placeholder"] });
    expect(r.status).toBe(200);
    expect(upstreamHeaders().authorization).toBe("Bearer re_live_secret_one");
    expect(r.json.url).toBe("/emails?limit=2");
    expect(JSON.parse(r.headers["x-credgate-connections"]!)).toEqual([{ id: conn.id, label: "Mail", provider: "resend", display_name: "Resend" }]);
    const logs = await cg.api("GET", `/v1/logs?host=${RESEND}:${up.port}`);
    expect(logs.status).toBe(200);
    expect(JSON.stringify(logs.body)).toContain('"provider":"resend"');
    expect(JSON.stringify(logs.body)).not.toContain("re_live_secret_one");
  });

  test("datadog: two fields go into their two headers", async () => {
    await connect("datadog", { apiKey: "dd-api-111", appKey: "dd-app-222" });
    const r = await curl(url(DATADOG, "/api/v1/validate"));
    expect(r.status).toBe(200);
    expect(upstreamHeaders()["dd-api-key"]).toBe("dd-api-111");
    expect(upstreamHeaders()["dd-application-key"]).toBe("dd-app-222");
  });

  test("two connections of one provider: 409 multiple_connections before egress; the header picks one; an unknown id is 404", async () => {
    const a = await connect("vercel", { apiToken: "vc-token-a" }, "Team A");
    const b = await connect("vercel", { apiToken: "vc-token-b" }, "Team B");
    const before = seen(VERCEL).length;
    const r = await curl(url(VERCEL, "/v9/projects"));
    expect(r.status).toBe(409);
    expect(r.json.error).toBe("multiple_connections");
    expect(r.json.message).toBe("Multiple connections exist for this provider. Specify which one to use with the x-credgate-connection-id header.");
    expect(r.json.header).toBe("x-credgate-connection-id");
    expect(r.json.connections.map((c: any) => c.id).sort()).toEqual([a.id, b.id].sort());
    expect(r.json.example).toBe(`x-credgate-connection-id: ${r.json.connections[0].id}`);
    expect(r.headers["x-should-retry"]).toBe("false");
    expect(r.headers["x-credgate-connections"]).toBeUndefined();
    expect(seen(VERCEL).length).toBe(before);

    const picked = await curl(url(VERCEL, "/v9/projects"), { headers: [`x-credgate-connection-id: ${b.id}`] });
    expect(picked.status).toBe(200);
    expect(upstreamHeaders().authorization).toBe("Bearer vc-token-b");
    expect(upstreamHeaders()["x-credgate-connection-id"]).toBeUndefined();

    const unknown = await curl(url(VERCEL, "/v9/projects"), { headers: ["x-credgate-connection-id: 00000000-0000-4000-8000-000000000000"] });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({
      error: "connection_not_found",
      message: "Connection '00000000-0000-4000-8000-000000000000' was not found or has been removed. Choose from the available connections.",
      header: "x-credgate-connection-id",
    });
    expect(seen(VERCEL).length).toBe(before + 1);
  });

  test("a secret serving the path swallows the 409: the request proceeds on the secret alone", async () => {
    const secret = await cg.api("POST", "/v1/secrets", {
      body: { name: "vercel-fallback", type: "generic", value: "secret-wins", hostPattern: VERCEL, injectionConfig: { headerName: "x-vercel-secret" } },
    });
    expect(secret.status).toBe(201);
    const r = await curl(url(VERCEL, "/v9/projects"));
    expect(r.status).toBe(200);
    expect(upstreamHeaders()["x-vercel-secret"]).toBe("secret-wins");
    expect(upstreamHeaders().authorization).toBeUndefined();
    await cg.api("DELETE", `/v1/secrets/${secret.body.id}`);
  });

  test("deleting a connection stops its injection at once", async () => {
    const conn = await connect("cloudflare", { apiToken: "cf-doomed" });
    await curl(url(CLOUDFLARE, "/client/v4/zones"));
    expect(upstreamHeaders().authorization).toBe("Bearer cf-doomed");
    expect((await cg.api("DELETE", `/v1/connections/${conn.id}`)).status).toBe(204);
    const after = await curl(url(CLOUDFLARE, "/client/v4/zones"));
    expect(after.status).toBe(200);
    expect(upstreamHeaders().authorization).toBeUndefined();
    expect(after.headers["x-credgate-connections"]).toBeUndefined();
  });

  test("an app host with no connection: an upstream 401 becomes app_not_connected guidance", async () => {
    up.handle((req) => (new URL(req.url).pathname === "/client/v4/needs-auth" ? new Response('{"success":false}', { status: 401 }) : undefined));
    try {
      const r = await curl(url(CLOUDFLARE, "/client/v4/needs-auth"));
      expect(r.status).toBe(401);
      expect(r.json).toEqual({
        error: "app_not_connected",
        message: `Cloudflare is not connected in credgate. Ask the user to open this URL to connect it: ${base()}/p/${cg.keys.projectId}/apps?connect=cloudflare&agent_name=default`,
        provider: "cloudflare",
        connect_url: `${base()}/p/${cg.keys.projectId}/apps?connect=cloudflare&agent_name=default`,
      });
    } finally {
      up.handle(() => undefined);
    }
  });
});

describe("connection grants at the gateway (mode grants)", () => {
  let a: { id: string; token: string };
  let mail: { id: string; label: string };

  beforeAll(async () => {
    a = await agent("mailer", "grants");
    mail = (await cg.api("GET", "/v1/connections?provider=resend")).body[0];
  });

  test("no grant: nothing injected, and an upstream 401 says the credential exists but is not attached", async () => {
    up.handle((req) => (req.headers.get("authorization") ? undefined : new Response("nope", { status: 401 })));
    try {
      const r = await curl(url(RESEND, "/emails"), { agentToken: a.token });
      expect(r.status).toBe(401);
      expect(r.json.error).toBe("access_restricted");
      expect(r.json.provider).toBe("resend");
      expect(r.json.message).toBe(`Resend credentials exist in credgate but this agent does not have access. Ask the user to attach them to this agent: ${base()}/p/${cg.keys.projectId}/agents/${a.id}`);
    } finally {
      up.handle(() => undefined);
    }
  });

  test("a full grant injects, effective immediately", async () => {
    const g = await cg.api("PUT", `/v1/agents/${a.id}/grants/connections/${mail.id}`, { body: { access: "full" } });
    expect(g.status).toBe(200);
    const r = await curl(url(RESEND, "/emails/abc"), { agentToken: a.token });
    expect(r.status).toBe(200);
    expect(upstreamHeaders().authorization).toBe("Bearer re_live_secret_one");
  });

  test("a custom grant: allow tools run, unlisted tools are blocked before egress, ask tools wait for approval", async () => {
    const g = await cg.api("PUT", `/v1/agents/${a.id}/grants/connections/${mail.id}`, { body: { access: "custom", allow: ["list_emails"], ask: ["send_email"] } });
    expect(g.status).toBe(200);
    expect(g.body.connections[0]).toMatchObject({ connectionId: mail.id, access: "custom", allow: ["list_emails"], ask: ["send_email"] });

    const listed = await curl(url(RESEND, "/emails"), { agentToken: a.token });
    expect(listed.status).toBe(200);
    expect(upstreamHeaders().authorization).toBe("Bearer re_live_secret_one");

    const before = seen(RESEND).length;
    const blocked = await curl(url(RESEND, "/emails/abc"), { agentToken: a.token });
    expect(blocked.status).toBe(403);
    expect(blocked.json.error).toBe("blocked_by_policy");
    expect(blocked.json.rule_name).toBe("Grant: mailer · Mail — everything else");
    expect(seen(RESEND).length).toBe(before);

    const sending = curl(url(RESEND, "/emails"), { agentToken: a.token, method: "POST", data: '{"to":"a@b.c","subject":"hi"}', headers: ["content-type: application/json"] });
    const pending = await eventually(async () => {
      const p = await cg.api("GET", "/v1/approvals/pending");
      const item = (p.body.requests ?? p.body).find?.((x: any) => x.agent?.id === a.id || x.agentId === a.id);
      if (!item) throw new Error("not pending yet");
      return item;
    });
    expect(seen(RESEND).length).toBe(before);
    expect((await cg.api("POST", `/v1/approvals/${pending.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
    const sent = await sending;
    expect(sent.status).toBe(200);
    expect(sent.json.method).toBe("POST");
    expect(upstreamHeaders().authorization).toBe("Bearer re_live_secret_one");
  });

  test("effective-app-permissions agrees with the gateway", async () => {
    const r = await cg.api("GET", `/v1/policy/effective-app-permissions?provider=resend&agentId=${a.id}&connectionId=${mail.id}`);
    expect(r.status).toBe(200);
    const verdicts = Object.fromEntries(r.body.groups.flatMap((g: any) => g.tools.map((t: any) => [t.toolId, t.verdict])));
    expect(verdicts.list_emails).toBe("allow");
    expect(verdicts.send_email).toBe("approval");
    expect(verdicts.get_email).toBe("block");
  });

  test("detaching the grant: nothing injected again", async () => {
    expect((await cg.api("DELETE", `/v1/agents/${a.id}/grants/connections/${mail.id}`)).status).toBe(204);
    const r = await curl(url(RESEND, "/emails"), { agentToken: a.token });
    expect(r.status).toBe(200);
    expect(upstreamHeaders().authorization).toBeUndefined();
  });
});

describe("blocklists at the gateway", () => {
  test("a custom blocklist host is blocked before egress, at once; disabling the entry lets traffic through", async () => {
    const add = await cg.api("POST", "/v1/apps/datadog/blocklist", { body: { name: "Datadog API", hostPattern: DATADOG } });
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({ hostId: `custom:${DATADOG}`, enabled: true, custom: true, scope: "project" });
    const before = seen(DATADOG).length;
    const r = await curl(url(DATADOG, "/api/v1/validate"));
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: "blocked_by_policy", rule_name: "Block Datadog API" });
    expect(seen(DATADOG).length).toBe(before);

    expect((await cg.api("PATCH", `/v1/apps/datadog/blocklist/${add.body.ruleId}`, { body: { enabled: false } })).status).toBe(200);
    expect((await curl(url(DATADOG, "/api/v1/validate"))).status).toBe(200);
    expect(seen(DATADOG).length).toBe(before + 1);
  });

  test("an organization blocklist entry applies to the project's agents", async () => {
    const add = await cg.api("POST", "/v1/org/apps/cloudflare/blocklist", { key: cg.keys.orgApiKey, body: { name: "Cloudflare", hostPattern: CLOUDFLARE } });
    expect(add.status).toBe(200);
    expect(add.body.scope).toBe("organization");
    const r = await curl(url(CLOUDFLARE, "/client/v4/zones"));
    expect(r.status).toBe(403);
    expect(r.json.rule_name).toBe("Block Cloudflare");
    expect((await cg.api("DELETE", `/v1/org/apps/cloudflare/blocklist/${add.body.ruleId}`, { key: cg.keys.orgApiKey })).status).toBe(204);
    expect((await curl(url(CLOUDFLARE, "/client/v4/zones"))).status).toBe(200);
  });
});
