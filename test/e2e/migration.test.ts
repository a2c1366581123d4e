// Migration between two real credgate processes (docs/api.md#migration, docs/configuration.md#commands): one CREDGATE_MODE=self-hosted, one
// CREDGATE_MODE=cloud. Export through the API and through `credgate migrate export` (with the server running
// and stopped), then an agent on the cloud gets the migrated secrets injected by the cloud's gateway into
// requests to a real TLS upstream: the values arrived intact.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { gatewayCa, resolveEntries, run } from "../support/gateway.ts";

const API_HOST = "api.migrated.test";
const CLI_HOST = "cli.migrated.test";
const API_VALUE = "api-exported-S3cr3t-value-0001";
const CLI_VALUE = "cli-exported-S3cr3t-value-0002";

let up: TestUpstream;
let cloud: RunningCredgate;
let sh: RunningCredgate;
let cloudCa: string;

beforeAll(async () => {
  const pki = makePki([API_HOST, CLI_HOST]);
  up = startUpstream(pki);
  [cloud, sh] = await Promise.all([
    startCredgate({
      // Cloud mode refuses loopback destinations and trusts an operator's pin only inside CREDGATE_EGRESS_ALLOW
      // (docs/guards.md#egress-guard): the test upstream is on 127.0.0.1.
      env: { CREDGATE_MODE: "cloud", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([API_HOST, CLI_HOST], up.port), CREDGATE_EGRESS_ALLOW: "127.0.0.1/32" },
    }),
    startCredgate({ env: { CREDGATE_MODE: "self-hosted" } }),
  ]);
  cloudCa = (await gatewayCa(cloud)).file;
}, 60_000);

afterAll(async () => {
  await Promise.all([cloud?.stop(), sh?.stop()]);
  await up?.stop();
});

async function created(res: { status: number; text: string; body: any }): Promise<any> {
  if (res.status !== 201) throw new Error(`expected 201, got ${res.status}: ${res.text}`);
  return res.body;
}

const headerSecret = (name: string, host: string, value: string) => ({
  name,
  type: "generic",
  value,
  hostPattern: host,
  injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" },
});

/** The access token of a cloud agent (the migration gave it a new one). */
async function cloudToken(identifier: string): Promise<string> {
  const agents = (await cloud.api("GET", "/v1/agents")).body as any[];
  const agent = agents.find((a) => a.identifier === identifier);
  if (!agent) throw new Error(`no cloud agent ${identifier}`);
  return agent.accessToken;
}

/** curl through the cloud's gateway (CONNECT + MITM) as the agent with `token`; returns what the upstream saw. */
async function viaCloudGateway(token: string, host: string, path: string) {
  const proxy = `http://x:${token}@127.0.0.1:${cloud.gatewayPort}`;
  const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", cloudCa, "-H", "Authorization: Bearer credgate-managed", "-o", "/dev/null", "-w", "%{http_code}", `https://${host}:${up.port}${path}`]);
  expect(r.stderr).toBe("");
  expect(r.stdout).toBe("200");
  const seen = up.seen.filter((s) => s.url === path);
  expect(seen).toHaveLength(1);
  return seen[0]!;
}

const cliExport = (args: string[]) => runCli(["migrate", "export", "--data-dir", sh.dataDir, ...args]);

describe("self-hosted → cloud", () => {
  test("the cloud answers 404 to export; self-hosted answers 404 to import", async () => {
    const e = await cloud.api("POST", "/v1/migrate/export", { body: { cloudApiKey: sh.keys.projectApiKey, cloudUrl: sh.apiUrl } });
    expect({ status: e.status, body: e.body }).toEqual({ status: 404, body: { error: { message: "Unrecognized request URL (POST: /v1/migrate/export).", type: "not_found_error" } } });
    const i = await sh.api("POST", "/v1/migrate/import", { body: { version: 1, secrets: [], agents: [] } });
    expect(i.status).toBe(404);
  });

  test("API export: the secret and the agent arrive; an agent on the cloud gets the secret injected by the cloud gateway", async () => {
    await created(await sh.api("POST", "/v1/secrets", { body: headerSecret("API token", API_HOST, API_VALUE) }));
    await created(await sh.api("POST", "/v1/agents", { body: { name: "Mover", identifier: "mover", mode: "all" } }));

    const res = await sh.api("POST", "/v1/migrate/export", { body: { cloudApiKey: cloud.keys.projectApiKey, cloudUrl: cloud.apiUrl } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      imported: { secrets: 1, agents: 1, agentSecrets: 0, rules: 0 },
      skipped: [{ type: "agent", name: "Default Agent", reason: "already exists" }],
    });
    expect(res.text).not.toContain(API_VALUE);

    const seen = await viaCloudGateway(await cloudToken("mover"), API_HOST, "/after-api-export");
    expect(seen.headers.authorization).toBe(`Bearer ${API_VALUE}`);
    expect(seen.headers["proxy-authorization"]).toBeUndefined();
  });

  test("CLI export while the server runs (--json): only what is new is imported, the rest is `already exists`", async () => {
    await created(await sh.api("POST", "/v1/secrets", { body: headerSecret("CLI token", CLI_HOST, CLI_VALUE) }));
    await created(await sh.api("POST", "/v1/agents", { body: { name: "Cli agent", identifier: "cli-agent", mode: "all" } }));

    const r = await cliExport(["--cloud-url", cloud.apiUrl, "--cloud-api-key", cloud.keys.projectApiKey, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      imported: { secrets: 1, agents: 1, agentSecrets: 0, rules: 0 },
      skipped: [
        { type: "generic", name: "API token", reason: "already exists" },
        { type: "agent", name: "Default Agent", reason: "already exists" },
        { type: "agent", name: "Mover", reason: "already exists" },
      ],
    });
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(r.stdout).not.toContain(CLI_VALUE);

    const seen = await viaCloudGateway(await cloudToken("cli-agent"), CLI_HOST, "/after-cli-export");
    expect(seen.headers.authorization).toBe(`Bearer ${CLI_VALUE}`);
  });

  test("CLI export with the server stopped: readable progress and summary; a re-run imports nothing", async () => {
    expect(await sh.stop()).toBe(0);
    const r = await cliExport(["--cloud-url", `${cloud.apiUrl}/`, "--cloud-api-key", cloud.keys.projectApiKey]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Exporting project "Default Project" (${sh.keys.projectId}) from ${sh.dataDir} to ${cloud.apiUrl}/`);
    expect(r.stdout).toContain("Found 2 secrets and 3 agents to send.");
    expect(r.stdout).toContain("Sending 2 secrets and 3 agents…");
    expect(r.stdout).toContain("Imported by the cloud.");
    expect(r.stdout).toContain("Imported: 0 secrets, 0 agents, 0 agent secrets, 0 rules.");
    expect(r.stdout).toContain("Skipped (5):");
    expect(r.stdout).toContain('  - generic "CLI token": already exists');
    expect(r.stdout).toContain('  - agent "Cli agent": already exists');
    for (const v of [API_VALUE, CLI_VALUE, cloud.keys.projectApiKey]) expect(r.stdout).not.toContain(v);
    expect(((await cloud.api("GET", "/v1/secrets")).body as any[]).map((s) => s.name).sort()).toEqual(["API token", "CLI token"]);
  });

  test("CLI failures exit 1 with one clear line", async () => {
    const wrongKey = await cliExport(["--cloud-url", cloud.apiUrl, "--cloud-api-key", `svc_${"0".repeat(64)}`]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toBe("credgate: Cloud import failed: Invalid API key or token.\n");

    const plainHttp = await cliExport(["--cloud-url", "http://cloud.example.com", "--cloud-api-key", cloud.keys.projectApiKey]);
    expect(plainHttp.code).toBe(1);
    expect(plainHttp.stderr).toBe('credgate: cloudUrl must be an https URL, got "http://cloud.example.com"\n');
    expect(plainHttp.stdout).toBe("");

    const noKey = await cliExport(["--cloud-url", cloud.apiUrl]);
    expect(noKey.code).not.toBe(0);
    expect(noKey.stderr).toContain("--cloud-api-key");

    const noData = await runCli(["migrate", "export", "--data-dir", `${sh.dataDir}-missing`, "--cloud-url", cloud.apiUrl, "--cloud-api-key", "svc_k"]);
    expect(noData.code).toBe(1);
    expect(noData.stderr).toContain(`no credgate data in ${sh.dataDir}-missing`);

    const onCloud = await runCli(["migrate", "export", "--data-dir", cloud.dataDir, "--cloud-url", cloud.apiUrl, "--cloud-api-key", "svc_k"], { CREDGATE_MODE: "cloud" });
    expect(onCloud.code).toBe(1);
    expect(onCloud.stderr).toBe("credgate: migrate export runs on a self-hosted instance (CREDGATE_MODE is cloud)\n");
  });

  test("both sides log the migration, with counts and never a secret value", async () => {
    expect(sh.output()).toMatch(/"msg":"migration export","projectId":"[a-z]{16}","cloudHost":"127\.0\.0\.1:\d+","parts":1,"secrets":1,"agents":1,/);
    expect(cloud.output()).toContain('"msg":"migration import"');
    for (const out of [sh.output(), cloud.output()]) {
      expect(out).not.toContain(API_VALUE);
      expect(out).not.toContain(CLI_VALUE);
    }
  });
});
