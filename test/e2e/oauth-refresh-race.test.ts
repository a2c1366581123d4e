// The refresh race of an OAuth app connection whose provider rotates refresh tokens with reuse detection
// (docs/injection.md#app-connections, docs/operations.md#gateway-workers-and-caches): concurrent requests on an
// expired token, through two gateway workers of one instance and (PostgreSQL) through two instances on one database.
// The provider is the GitHub-shaped OAuth server (test/support/oauthServer.ts), which spends a refresh token on its
// first use and, like Auth0, revokes the whole grant when a spent one is presented again. Its successful refresh
// answers are held back a moment, so a second refresh, were one sent, would reach it with the spent token. The
// refresh token must reach the provider exactly once across every instance and process, every request be served
// with the one new token, the connection stay connected and the grant alive. And an instance that dies while it
// holds the refresh lease does not stop the others: they refresh once its lease has lapsed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startCredgate, startSecondInstance, type RunningCredgate } from "../support/process.ts";
import { freePort } from "../support/ports.ts";
import { startOAuthServer, type OAuthTestServer } from "../support/oauthServer.ts";
import { gatewayCa, run } from "../support/gateway.ts";
import { oauthFlow, SHORT_LIFETIME } from "../support/oauthFlow.ts";
import { testEngine } from "../support/postgres.ts";
import { queryStore } from "../support/storeQuery.ts";
import { until } from "../support/gateway.ts";
import { sql } from "drizzle-orm";

const CLIENT_ID = "Iv1.credgate-race";
const CLIENT_SECRET = "race-client-secret-0123456789";
/** How long the provider holds back a successful refresh answer. */
const WINNER_DELAY_MS = 700;

let oauth: OAuthTestServer;
let first: RunningCredgate;
let second: RunningCredgate | null = null;
let caFile: string;
let publicUrl: string;

beforeAll(async () => {
  const apiPort = await freePort();
  publicUrl = `http://127.0.0.1:${apiPort}`;
  oauth = await startOAuthServer({ clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${publicUrl}/v1/apps/github/callback`] }], user: { login: "octo-race", id: 77 } });
  const env = {
    CREDGATE_GATEWAY_WORKERS: "2",
    CREDGATE_PUBLIC_URL: publicUrl,
    CREDGATE_OAUTH_GITHUB_CLIENT_ID: CLIENT_ID,
    CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: CLIENT_SECRET,
    CREDGATE_UPSTREAM_CA_FILE: oauth.caFile,
    CREDGATE_CONNECT_TO: `github.com:443:127.0.0.1:${oauth.port},api.github.com:443:127.0.0.1:${oauth.port}`,
  };
  first = await startCredgate({ apiPort, env });
  caFile = (await gatewayCa(first)).file;
  second = await startSecondInstance(first, env);
}, 60_000);

afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await oauth?.close();
});

const flow = oauthFlow(() => ({ cg: first, oauth, publicUrl, caFile, agentToken: first.keys.defaultAgentToken }));

/**
 * One Node process, undici ProxyAgents to every given gateway, every request at once (each gateway's requests
 * over several tunnels, so over both of its worker processes).
 */
const AGENT_SCRIPT = `
const { ProxyAgent, request } = require("undici");
const fs = require("fs");
(async () => {
  const { proxies, reqs } = JSON.parse(process.env.WORK);
  const ca = fs.readFileSync(process.env.CA_FILE, "utf8");
  const agents = proxies.map((uri) => new ProxyAgent({ uri, requestTls: { ca } }));
  const out = await Promise.all(reqs.map(async (r) => {
    const res = await request(r.url, { dispatcher: agents[r.via] });
    return { status: res.statusCode, body: await res.body.text() };
  }));
  for (const a of agents) await a.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });`;

async function throughGateways(gateways: RunningCredgate[], perGateway: number, run_: string): Promise<{ status: number; body: string }[]> {
  const proxies = gateways.map((g) => `http://x:${first.keys.defaultAgentToken}@127.0.0.1:${g.gatewayPort}`);
  const reqs = Array.from({ length: perGateway * gateways.length }, (_, i) => ({ via: i % gateways.length, url: `https://api.github.com/repos/acme/api/issues/${i}?run=${run_}` }));
  const r = await run(["node", "-e", AGENT_SCRIPT], {
    env: { WORK: JSON.stringify({ proxies, reqs }), CA_FILE: caFile, NODE_PATH: join(import.meta.dir, "../../node_modules") },
    timeoutMs: 60_000,
  });
  if (r.code !== 0) throw new Error(`agent client failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** A connection whose token is inside its refresh window, the provider's winning answers held back. */
async function dueConnection(): Promise<{ id: string; old: string }> {
  oauth.setAccessTokenLifetime(SHORT_LIFETIME);
  let id: string;
  try {
    id = flow.expectSuccess(await flow.connectFlow());
  } finally {
    oauth.setAccessTokenLifetime(3600);
  }
  const old = flow.lastIssued().accessToken;
  await flow.waitForRefreshWindow();
  return { id, old };
}

async function expectServedWithOneNewToken(gateways: RunningCredgate[], perGateway: number, connectionId: string, old: string): Promise<void> {
  const refreshesBefore = oauth.tokenRequests.refresh_token ?? 0;
  const issuedBefore = oauth.issued.length;
  oauth.delayRefreshAnswers(WINNER_DELAY_MS);
  const runId = crypto.randomUUID();
  let answers: { status: number; body: string }[];
  try {
    answers = await throughGateways(gateways, perGateway, runId);
  } finally {
    oauth.delayRefreshAnswers(0);
  }
  expect(answers.map((a) => a.status)).toEqual(Array(perGateway * gateways.length).fill(200));
  // The provider issued one token by refresh: every request carries it.
  const refreshed = oauth.issued.slice(issuedBefore).filter((t) => t.grantType === "refresh_token");
  expect(refreshed).toHaveLength(1);
  expect(refreshed[0]!.accessToken).not.toBe(old);
  const seen = oauth.apiRequests.filter((s) => s.url.endsWith(`?run=${runId}`));
  expect(seen).toHaveLength(perGateway * gateways.length);
  expect(new Set(seen.map((s) => s.headers.authorization))).toEqual(new Set([`Bearer ${refreshed[0]!.accessToken}`]));
  // The refresh token reached the provider once for every instance and process: the grant was never revoked.
  expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
  await expectGrantAlive(connectionId, refreshed[0]!.accessToken);
  expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
}

/** No reuse detected at the provider, the new token still good there, the connection connected and using it. */
async function expectGrantAlive(connectionId: string, token: string): Promise<void> {
  expect(oauth.revokedGrants).toEqual([]);
  expect(oauth.accessTokenLive(token)).toBe(true);
  const row = await first.api("GET", `/v1/connections/${connectionId}`);
  expect(row.body.status).toBe("connected");
  // And the stored token is the new one: a later request neither refreshes again nor changes token.
  const after = await flow.apiGet();
  expect(after.seenAuth).toBe(`Bearer ${token}`);
}

describe("a rotating refresh token refreshed by concurrent requests", () => {
  test("through the two gateway workers of one instance: one refresh at the provider, every request served with the new token", async () => {
    const { id, old } = await dueConnection();
    await expectServedWithOneNewToken([first], 16, id, old);
  }, 60_000);

  test.if(testEngine() === "postgres")(
    "through two instances on one PostgreSQL database (two workers each): one refresh at the provider, the other instance waits for its token, the grant stays alive",
    async () => {
      const { id, old } = await dueConnection();
      await expectServedWithOneNewToken([first, second!], 12, id, old);
    },
    60_000,
  );

  test.if(testEngine() === "postgres")(
    "an instance killed while it holds the refresh lease: the others wait for the lease to lapse, then refresh once",
    async () => {
      const { id, old } = await dueConnection();
      const doomed = await startCredgate({ env: { ...first.env, CREDGATE_PUBLIC_URL: publicUrl, CREDGATE_GATEWAY_WORKERS: "1" } });
      const refreshesBefore = oauth.tokenRequests.refresh_token ?? 0;
      const issuedBefore = oauth.issued.length;
      const abandonedBefore = oauth.abandonedRefreshRequests;
      oauth.holdRefreshRequests(true);
      let leaseUntil: number;
      try {
        // Its request is cut when it dies.
        const cut = throughGateways([doomed], 1, crypto.randomUUID()).catch((e: Error) => e);
        await until(async () => {
          if (oauth.heldRefreshRequests !== 1) throw new Error("no refresh held yet");
        }, 30_000);
        const [lease] = await queryStore<{ lease_until: string | number }>(first, sql`select lease_until from minted_tokens where key = ${`oauth-refresh:${id}`}`);
        leaseUntil = Number(lease!.lease_until);
        expect(leaseUntil).toBeGreaterThan(Date.now());
        await doomed.stop("SIGKILL");
        expect(await cut).toBeInstanceOf(Error);
        // The provider never looked at the dead instance's request: its refresh token is not spent.
        await until(async () => {
          if (oauth.abandonedRefreshRequests !== abandonedBefore + 1) throw new Error("the held refresh is not dropped yet");
        }, 15_000);
      } finally {
        oauth.holdRefreshRequests(false);
      }
      const runId = crypto.randomUUID();
      const answers = await throughGateways([first, second!], 6, runId);
      expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
      const refreshed = oauth.issued.slice(issuedBefore).filter((t) => t.grantType === "refresh_token");
      expect(refreshed).toHaveLength(1);
      expect(refreshed[0]!.accessToken).not.toBe(old);
      // Sent once the dead instance's lease had lapsed, and by one instance only.
      expect(refreshed[0]!.at).toBeGreaterThanOrEqual(leaseUntil);
      expect((oauth.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(2);
      const seen = oauth.apiRequests.filter((s) => s.url.endsWith(`?run=${runId}`));
      expect(new Set(seen.map((s) => s.headers.authorization))).toEqual(new Set([`Bearer ${refreshed[0]!.accessToken}`]));
      await expectGrantAlive(id, refreshed[0]!.accessToken);
    },
    90_000,
  );
});
