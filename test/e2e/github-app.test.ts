// GitHub App installation tokens through the real binary (docs/injection.md#github-app): a fake GitHub verifies
// the app's RS256 JWT and counts mints. Twenty concurrent requests across two gateway worker processes mint once;
// the token is used as Bearer on the API and as Basic x-access-token by a real `git clone`; after its expiry
// (the clock moved with CREDGATE_TEST_NOW_OFFSET_SECONDS) a new one is minted, once; on PostgreSQL two instances
// sharing the database mint once between them — also an instance that read the stale row just before the other's
// token was stored (its database answers held back at a relay); a mint GitHub refuses → 502 credential_unavailable.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sharedDatabaseEnv, startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { eventually, gatewayCa, openTlsTunnel, rawRequest, ResponseReader, run } from "../support/gateway.ts";
import { spawnSync } from "node:child_process";
import { makeGitRemote, type GitRemote } from "../support/gitHttp.ts";
import { startFakeGithub, type FakeGithub } from "../support/fakeGithub.ts";
import { testEngine } from "../support/postgres.ts";
import { tempDir } from "../support/tmp.ts";
import { sql } from "drizzle-orm";
import { startHoldRelay } from "../support/holdRelay.ts";
import { queryStore } from "../support/storeQuery.ts";

const APP_ID = 123456;
const INSTALLATION_ID = 987654;
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PEM = privateKey.export({ type: "pkcs1", format: "pem" }).toString();

let github: FakeGithub;
let remote: GitRemote;
let cg: RunningCredgate;
let env: Record<string, string>;
let ca: { file: string; pem: string };

/** The pid of the gateway process holding the connection from `clientPort` (ss's socket table). */
function servingPid(gatewayPort: number, clientPort: number): number | null {
  const r = spawnSync("ss", ["-Htnp", "state", "established", `( sport = :${gatewayPort} and dport = :${clientPort} )`], { encoding: "utf8" });
  const m = /pid=(\d+)/.exec(r.stdout);
  return m ? Number(m[1]) : null;
}

const proxyOf = (c: RunningCredgate) => `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${c.gatewayPort}`;

async function start(extra: Record<string, string> = {}, dataDir?: string): Promise<RunningCredgate> {
  return startCredgate({ env: { ...env, ...extra }, ...(dataDir ? { dataDir } : {}) });
}

beforeAll(async () => {
  const pki = makePki(["api.github.com", "github.com"]);
  remote = makeGitRemote("repo");
  github = startFakeGithub(pki, { appId: APP_ID, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() }, remote.handler);
  env = {
    CREDGATE_GATEWAY_WORKERS: "2",
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_CONNECT_TO: `api.github.com:443:127.0.0.1:${github.port},github.com:443:127.0.0.1:${github.port}`,
  };
  // The first token lives 10 minutes, so that a clock moved 6 minutes on finds it inside the 5-minute margin.
  github.tokenLifetimeMs = 10 * 60_000;
  cg = await start();
  ca = await gatewayCa(cg);
  for (const host of ["api.github.com", "github.com"]) {
    const r = await cg.api("POST", "/v1/secrets", {
      body: { name: `app ${host}`, type: "generic", value: PEM, hostPattern: host, injectionConfig: { githubApp: { appId: String(APP_ID), installationId: INSTALLATION_ID } } },
    });
    expect(r.status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await github?.stop();
});

async function apiCall(c: RunningCredgate, path = "/installation/repositories"): Promise<{ status: number; body: string }> {
  const r = await run(["curl", "-sS", "-w", "\n%{http_code}", "--proxy", proxyOf(c), "--cacert", ca.file, "-H", "authorization: Bearer credgate-managed", `https://api.github.com${path}`]);
  const nl = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(nl + 1)), body: r.stdout.slice(0, nl) };
}

describe("GitHub App installation tokens", () => {
  test("20 concurrent API requests across both gateway processes (the primary and its worker): one mint, every request carries the token as Bearer", async () => {
    const before = github.mints.length;
    // Tunnels until both processes hold some (which process took each, from the kernel's socket table).
    const tunnels: { pid: number | null; tls: import("node:tls").TLSSocket; reader: ResponseReader }[] = [];
    const pids = new Set<number | null>();
    for (let i = 0; i < 200 && (tunnels.length < 20 || pids.size < 2); i++) {
      const t = await openTlsTunnel(cg.gatewayPort, "api.github.com:443", cg.keys.defaultAgentToken, ca.pem, "api.github.com");
      const pid = servingPid(cg.gatewayPort, t.tls.localPort!);
      tunnels.push({ ...t, pid });
      pids.add(pid);
    }
    expect(pids.size).toBe(2);
    expect(github.mints.length).toBe(before);
    const answers = await Promise.all(
      tunnels.map(async (t) => {
        t.tls.write(rawRequest("GET", "/installation/repositories", "api.github.com", ["Authorization: Bearer credgate-managed"]));
        const res = await t.reader.response();
        t.tls.destroy();
        return { status: res.status, body: res.text };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(tunnels.length).fill(200));
    expect(github.refused).toEqual([]);
    expect(github.mints.length - before).toBe(1);
    const token = github.mints.at(-1)!.token;
    const used = github.used.slice(-tunnels.length);
    expect(used.every((u) => u.scheme === "Bearer" && u.token === token)).toBe(true);
    // The token is never handed back to the agent, nor kept in clear in the store.
    expect(answers.some((a) => a.body.includes(token))).toBe(false);
    if (testEngine() === "sqlite") expect(readFileSync(join(cg.dataDir, "credgate.db")).includes(Buffer.from(token))).toBe(false);
  }, 60_000);

  test("git over HTTPS (a real git clone) gets the same token as Basic x-access-token", async () => {
    const before = github.mints.length;
    const dest = join(tempDir(), "clone");
    const r = await run(["git", "-c", `http.proxy=${proxyOf(cg)}`, "-c", "credential.helper=", "clone", "-q", `https://github.com/${remote.name}.git`, dest], {
      env: { GIT_TERMINAL_PROMPT: "0", GIT_SSL_CAINFO: ca.file },
      timeoutMs: 60_000,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(dest, remote.file.path), "utf8")).toBe(remote.file.content);
    expect(github.mints.length).toBe(before);
    const gitUses = github.used.filter((u) => u.host === "github.com");
    expect(gitUses.length).toBeGreaterThan(0);
    expect(gitUses.every((u) => u.scheme === "Basic" && u.token === github.mints.at(-1)!.token)).toBe(true);
  }, 60_000);

  test("an origin that reflects the request hands the agent neither the minted token nor its Basic form (the echo guard, docs/guards.md#echo-guard)", async () => {
    for (const [host, auth] of [["api.github.com", "authorization: Bearer credgate-managed"], ["github.com", "authorization: Basic eC1hY2Nlc3MtdG9rZW46Y3JlZGdhdGUtbWFuYWdlZA=="]] as const) {
      const used = github.used.length;
      const r = await run(["curl", "-sS", "-i", "--proxy", proxyOf(cg), "--cacert", ca.file, "-H", auth, `https://${host}/reflect`]);
      expect(r.code).toBe(0);
      // The origin got a live minted token, and reflected it.
      const token = github.used[used]!.token!;
      expect(github.mints.some((m) => m.token === token)).toBe(true);
      const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
      expect({ host, token: r.stdout.includes(token), basic: r.stdout.includes(basic) }).toEqual({ host, token: false, basic: false });
      expect(r.stdout).toContain(`x-reflected-authorization: ${host === "github.com" ? "Basic" : "Bearer"} credgate-redacted`);
    }
  });

  test("the secret lists with its app and installation ids and never its key", async () => {
    const list = await cg.api("GET", "/v1/secrets");
    const mine = list.body.filter((s: { injectionConfig: unknown }) => (s.injectionConfig as { githubApp?: unknown })?.githubApp);
    expect(mine.length).toBe(2);
    expect(mine[0].injectionConfig).toEqual({ githubApp: { appId: APP_ID, installationId: INSTALLATION_ID } });
    expect(list.text).not.toContain("PRIVATE KEY");
  });

  test("past the token's expiry (less than 5 minutes left), the next requests mint one new token between them", async () => {
    await cg.stop();
    const before = github.mints.length;
    // The first token expires 10 minutes after it was minted: 6 minutes on, it is inside the 5-minute margin.
    github.tokenLifetimeMs = 3600_000;
    cg = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(6 * 60) }, cg.dataDir);
    const answers = await Promise.all(Array.from({ length: 20 }, () => apiCall(cg)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(github.mints.length - before).toBe(1);
    // Restarted without the offset, the new token is still fresh: no mint.
    await cg.stop();
    cg = await start({}, cg.dataDir);
    expect((await apiCall(cg)).status).toBe(200);
    expect(github.mints.length - before).toBe(1);
  }, 90_000);

  test.if(testEngine() === "postgres")("two instances on one PostgreSQL database mint once between them", async () => {
    await cg.stop();
    // The token of the test before lives an hour: 56 minutes on it is stale; the next lives long enough to stay fresh.
    github.tokenLifetimeMs = 3 * 3600_000;
    cg = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(56 * 60) }, cg.dataDir);
    const other = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(56 * 60), ...sharedDatabaseEnv(cg) });
    try {
      const before = github.mints.length;
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => apiCall(i % 2 ? other : cg)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      expect(github.mints.length - before).toBe(1);
    } finally {
      await other.stop();
    }
  }, 90_000);

  test("a mint GitHub refuses → 502 credential_unavailable, nothing forwarded", async () => {
    await cg.stop();
    github.failMintsWith = 500;
    cg = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(5 * 3600) }, cg.dataDir);
    try {
      const usedBefore = github.used.length;
      const r = await apiCall(cg);
      expect(r.status).toBe(502);
      expect(JSON.parse(r.body)).toEqual({ error: "credential_unavailable", message: "credgate could not obtain the credential for api.github.com, so the request was not forwarded." });
      expect(github.used.length).toBe(usedBefore);
    } finally {
      github.failMintsWith = null;
    }
  }, 60_000);

  test.if(testEngine() === "postgres")(
    "an instance that read the stale row just before another instance's token was stored does not mint a second one",
    async () => {
      await cg.stop();
      // Every token so far is stale 10 hours on; the next one lives long enough to stay fresh.
      github.tokenLifetimeMs = 12 * 3600_000;
      github.mintDelayMs = 1_500;
      const offset = { CREDGATE_TEST_NOW_OFFSET_SECONDS: String(10 * 3600) };
      cg = await start(offset, cg.dataDir);
      const direct = new URL(cg.env.CREDGATE_DATABASE_URL!);
      const relay = await startHoldRelay(Number(direct.port));
      const viaRelay = new URL(direct);
      viaRelay.port = String(relay.port);
      const late = await start({ ...offset, CREDGATE_DATABASE_URL: viaRelay.toString(), CREDGATE_MASTER_KEY: cg.env.CREDGATE_MASTER_KEY! });
      const row = async () =>
        (await queryStore<{ lease_owner: string | null; expires_at: string | null }>(cg, sql`select lease_owner, expires_at from minted_tokens where key = ${`github-app:${APP_ID}:${INSTALLATION_ID}`}`))[0] ?? { lease_owner: null, expires_at: null };
      try {
        const before = github.mints.length;
        // The first instance takes the lease and mints (GitHub takes 1.5 s to answer).
        const first = apiCall(cg);
        await eventually(async () => ((await row()).lease_owner !== null ? true : null), 10_000, 20);
        // The second reads the row (stale, leased): the answer to that read is held back at the relay.
        const held = relay.holdAfter("minted_tokens");
        const second = apiCall(late);
        await held;
        // The first one's token is stored and its lease let go, while the second still has the stale row to read.
        expect((await first).status).toBe(200);
        const stored = await row();
        expect(stored.lease_owner).toBeNull();
        expect(Number(stored.expires_at)).toBeGreaterThan(Date.now() + 10 * 3600_000);
        relay.release();
        expect((await second).status).toBe(200);
        expect(github.mints.length - before).toBe(1);
        expect(github.used.at(-1)!.token).toBe(github.mints.at(-1)!.token);
      } finally {
        relay.release();
        await late.stop();
        relay.close();
        github.mintDelayMs = 300;
      }
    },
    90_000,
  );
});
