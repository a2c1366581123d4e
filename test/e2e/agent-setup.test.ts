// Getting an agent onto the gateway (CONTRACT §5.11, §7): `credgate run` with curl, Python and Node, and
// the public OneCLI node SDK driving credgate unmodified.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { OneCLI, OneCLIRequestError } from "@onecli-sh/sdk";
import { existsSync, readFileSync } from "node:fs";
import { credgateCommand, startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const SECRET = "run-secret-5f1c2a";
let cg: RunningCredgate;
let up: TestUpstream;
let url: string;

async function run(cmd: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([...credgateCommand(), "run", ...cmd], {
    env: { ...process.env, CREDGATE_URL: cg.apiUrl, CREDGATE_API_KEY: cg.keys.projectApiKey, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  const pki = makePki(["api.run.test"]);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `api.run.test:${up.port}:127.0.0.1` } });
  url = `https://api.run.test:${up.port}/whoami`;
  const res = await cg.api("POST", "/v1/secrets", {
    body: { name: "run test", type: "generic", value: SECRET, hostPattern: "api.run.test", injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
  });
  expect(res.status).toBe(201);
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
});

describe("credgate run", () => {
  const lastSeen = () => up.seen[up.seen.length - 1]!;

  test("curl reaches the TLS upstream through the gateway with the secret injected", async () => {
    const before = up.seen.length;
    const r = await run(["--", "curl", "-sS", url]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(up.seen.length).toBe(before + 1);
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(lastSeen().headers["user-agent"]).toContain("curl/");
    expect(JSON.parse(r.stdout).url).toBe("/whoami");
  });

  test("python urllib", async () => {
    const r = await run(["--", "python3", "-c", `import urllib.request; print(urllib.request.urlopen("${url}").status)`]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("200");
    expect(lastSeen().headers["user-agent"]).toContain("Python-urllib");
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  test("node fetch (Node 20: fetch ignores HTTPS_PROXY on its own)", async () => {
    const r = await run(["--", "node", "-e", `fetch("${url}").then(r => console.log(r.status))`]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("200");
    expect(lastSeen().headers["user-agent"]).toBe("node");
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  test("the child's environment: proxy with the agent token, CA for every runtime, git settings", async () => {
    const agent = await cg.api("POST", "/v1/agents", { body: { name: "Runner", identifier: "runner", mode: "all" } });
    expect(agent.status).toBe(201);
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.identifier === "runner").accessToken;
    const r = await run(["--agent", "runner", "--", "node", "-e", "console.log(JSON.stringify(process.env))"]);
    expect(r.code).toBe(0);
    const env = JSON.parse(r.stdout);
    const gatewayHost = new URL(cg.gatewayUrl).host.replace("127.0.0.1", "localhost");
    expect(env.HTTPS_PROXY).toBe(`http://x:${token}@${gatewayHost}`);
    expect(env.http_proxy).toBe(env.HTTPS_PROXY);
    expect(env.NODE_USE_ENV_PROXY).toBe("1");
    expect(env.GIT_TERMINAL_PROMPT).toBe("0");
    expect(env.GIT_HTTP_PROXY_AUTHMETHOD).toBe("basic");
    for (const name of ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"]) expect(env[name]).toBe(env.SSL_CERT_FILE);
    // The temp files are gone once the child exited.
    expect(existsSync(env.NODE_EXTRA_CA_CERTS)).toBe(false);
  });

  test("exit code of the child; unknown agent and bad key fail clearly", async () => {
    expect((await run(["--", "sh", "-c", "exit 7"])).code).toBe(7);
    const ghost = await run(["--agent", "ghost", "--", "true"]);
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toContain('No agent with identifier "ghost" exists in this project');
    const bad = await run(["--", "true"], { CREDGATE_API_KEY: "svc_nope" });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("401");
  });
});

describe("OneCLI node SDK, unmodified", () => {
  const sdk = () => new OneCLI({ url: cg.apiUrl, apiKey: cg.keys.projectApiKey });

  test("getContainerConfig and applyContainerConfig build docker flags", async () => {
    const config = await sdk().getContainerConfig();
    expect(config.env.HTTPS_PROXY).toContain(`x:${cg.keys.defaultAgentToken}@`);
    const ca = await (await fetch(`${cg.apiUrl}/v1/gateway/ca`)).text();
    expect(config.caCertificate).toBe(ca);
    const args: string[] = [];
    expect(await sdk().applyContainerConfig(args, { addHostMapping: false })).toBe(true);
    expect(args).toContain(`HTTPS_PROXY=${config.env.HTTPS_PROXY}`);
    const volume = args.find((a) => a.endsWith(":/tmp/credgate-gateway-ca.pem:ro"))!;
    expect(readFileSync(volume.split(":")[0]!, "utf8")).toBe(ca);
    await expect(sdk().applyContainerConfig([], { agent: "nobody" })).rejects.toBeInstanceOf(OneCLIRequestError);
  });

  test("the container config warns by vendor name when the agent has no Anthropic credential", async () => {
    const res = await cg.api("GET", "/v1/container-config");
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(["No Anthropic credentials configured — the agent will use its own API key if available."]);
  });

  test("createAgent and ensureAgent (409 means it exists)", async () => {
    const created = await sdk().createAgent({ name: "SDK Agent", identifier: "sdk-agent" });
    expect(created.identifier).toBe("sdk-agent");
    expect(await sdk().ensureAgent({ name: "SDK Agent", identifier: "sdk-agent" })).toEqual({ name: "SDK Agent", identifier: "sdk-agent", created: false });
    expect(await sdk().ensureAgent({ name: "Other", identifier: "sdk-other" })).toEqual({ name: "Other", identifier: "sdk-other", created: true });
  });

  test("getGatewaySkill", async () => {
    const skill = await sdk().getGatewaySkill();
    expect(skill).toContain("name: credgate-gateway");
  });

  test("configureManualApproval approves a held request through the gateway port", async () => {
    const rule = await cg.api("POST", "/v1/policy/rules", {
      body: { name: "Ask before posting", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "api.run.test", method: "POST" }] },
    });
    expect(rule.status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const seenIds: string[] = [];
    const handle = sdk().configureManualApproval(async (request: any) => {
      seenIds.push(request.id);
      expect(request.method).toBe("POST");
      return "approve";
    });
    try {
      const r = await run(["--", "curl", "-sS", "-X", "POST", "-d", '{"hello":"world"}', url]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).bodyBytes).toBe(17);
      expect(seenIds).toHaveLength(1);
      const record = await cg.api("GET", `/v1/approvals/${seenIds[0]}`);
      expect(record.body.status).toBe("approved");
    } finally {
      handle.stop();
    }
  }, 60_000);
});
