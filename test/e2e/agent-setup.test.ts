// Getting an agent onto the gateway (docs/api.md#agent-setup, docs/configuration.md#credgate-run): `credgate run` with curl, Python and Node, and
// the public OneCLI node SDK driving credgate unmodified.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { OneCLI, OneCLIRequestError } from "@onecli-sh/sdk";
import type { Server } from "bun";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { credgateCommand, startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const SECRET = "run-secret-5f1c2a";
const ANTHROPIC_KEY = "sk-ant-api03-run-test-9d2e4b";
const PLAIN_SECRET = "plain-secret-7a3c1e";
let cg: RunningCredgate;
let up: TestUpstream;
let url: string;
/** A plain-HTTP upstream on loopback (the gateway injects over cleartext only to loopback or private addresses). */
let plain: Server<undefined>;
const plainSeen: Record<string, string>[] = [];

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
  const pki = makePki(["api.run.test", "anthropic.run.test"]);
  up = startUpstream(pki);
  // The Anthropic Messages API as the official SDK expects it (a fake: the vendor cannot be reached from tests).
  up.handle((req) => {
    if (new URL(req.url).pathname !== "/v1/messages") return undefined;
    return Response.json({
      id: "msg_credgate_test",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [{ type: "text", text: "hello through credgate" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 4 },
    });
  });
  plain = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      plainSeen.push(Object.fromEntries(req.headers));
      return Response.json({ url: new URL(req.url).pathname });
    },
  });
  const resolve = [`api.run.test:${up.port}:127.0.0.1`, `anthropic.run.test:${up.port}:127.0.0.1`, `plain.run.test:${plain.port}:127.0.0.1`].join(",");
  cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolve } });
  url = `https://api.run.test:${up.port}/whoami`;
  const secrets = [
    { name: "run test", type: "generic", value: SECRET, hostPattern: "api.run.test", injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
    { name: "plain", type: "generic", value: PLAIN_SECRET, hostPattern: "plain.run.test", injectionConfig: { headerName: "x-api-key" } },
    { name: "anthropic", type: "llm_a", value: ANTHROPIC_KEY, hostPattern: "anthropic.run.test" },
  ];
  for (const body of secrets) expect((await cg.api("POST", "/v1/secrets", { body })).status).toBe(201);
});

afterAll(async () => {
  await cg?.stop();
  await up?.stop();
  await plain?.stop(true);
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

  test("node https.get (the https module, on its global agent)", async () => {
    const before = up.seen.length;
    const script = `require("https").get("${url}", (res) => { let b = ""; res.on("data", (c) => (b += c)); res.on("end", () => console.log(res.statusCode, JSON.parse(b).url)); })`;
    const r = await run(["--", "node", "-e", script]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("200 /whoami");
    expect(up.seen.length).toBe(before + 1);
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  test("node https.request with an agent of its own (keep-alive, as SDKs on node-fetch use), two requests", async () => {
    const before = up.seen.length;
    const script = `
      const https = require("https");
      const agent = new https.Agent({ keepAlive: true });
      const get = () => new Promise((ok, ko) => https.request("${url}", { agent }, (res) => { res.resume(); res.on("end", () => ok(res.statusCode)); }).on("error", ko).end());
      get().then(get).then((s) => { console.log(s); agent.destroy(); });`;
    const r = await run(["--", "node", "-e", script]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("200");
    expect(up.seen.length).toBe(before + 2);
    expect(up.seen.slice(-2).map((s) => s.headers.authorization)).toEqual([`Bearer ${SECRET}`, `Bearer ${SECRET}`]);
  });

  test("node http.get (the http module, plain HTTP to a loopback upstream)", async () => {
    const before = plainSeen.length;
    const script = `require("http").get("http://plain.run.test:${plain.port}/plain", (res) => { let b = ""; res.on("data", (c) => (b += c)); res.on("end", () => console.log(res.statusCode, b)); })`;
    const r = await run(["--", "node", "-e", script]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe('200 {"url":"/plain"}');
    expect(plainSeen.length).toBe(before + 1);
    expect(plainSeen[plainSeen.length - 1]!["x-api-key"]).toBe(PLAIN_SECRET);
  });

  test("NO_PROXY hosts (loopback) are reached directly by the http module", async () => {
    const before = plainSeen.length;
    const script = `require("http").get("http://127.0.0.1:${plain.port}/direct", (res) => { res.resume(); res.on("end", () => console.log(res.statusCode)); })`;
    const r = await run(["--", "node", "-e", script]);
    expect(r.stdout.trim()).toBe("200");
    expect(plainSeen.length).toBe(before + 1);
    // Straight to the server: nothing injected.
    expect(plainSeen[plainSeen.length - 1]!["x-api-key"]).toBeUndefined();
  });

  test("axios", async () => {
    const before = up.seen.length;
    const r = await run(["--", "node", "-e", `require("axios").get("${url}").then((res) => console.log(res.status, res.data.url))`]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("200 /whoami");
    expect(up.seen.length).toBe(before + 1);
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(lastSeen().headers["user-agent"]).toStartWith("axios/");
  });

  test("the official Anthropic SDK (@anthropic-ai/sdk): the placeholder key is replaced by the stored one", async () => {
    const before = up.seen.length;
    const script = `
      const Anthropic = require("@anthropic-ai/sdk").default;
      const client = new Anthropic({ apiKey: "credgate-managed", baseURL: "https://anthropic.run.test:${up.port}", maxRetries: 0 });
      client.messages.create({ model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] })
        .then((m) => console.log(m.content[0].text));`;
    const r = await run(["--", "node", "-e", script]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("hello through credgate");
    expect(up.seen.length).toBe(before + 1);
    expect(lastSeen()).toMatchObject({ method: "POST", url: "/v1/messages", host: `anthropic.run.test:${up.port}` });
    expect(lastSeen().headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(lastSeen().headers["x-stainless-lang"]).toBe("js");
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

  test("without CREDGATE_API_KEY: the key comes from the server's data dir; with no data there, one line says what to set", async () => {
    const viaDataDir = await run(["--data-dir", cg.dataDir, "--", "curl", "-sS", url], { CREDGATE_API_KEY: "" });
    expect(viaDataDir.stderr).toBe("");
    expect(viaDataDir.code).toBe(0);
    expect(lastSeen().headers.authorization).toBe(`Bearer ${SECRET}`);

    const parent = tempDir();
    const missing = join(parent, "credgate-data");
    const none = await run(["--data-dir", missing, "--", "true"], { CREDGATE_API_KEY: "" });
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      `credgate: no API key and no credgate data in ${missing}: set CREDGATE_API_KEY to a project API key (printed at the server's first start; ` +
        "`credgate keys` reprints it) and CREDGATE_URL to the server's API URL (default http://localhost:10254), or pass --data-dir with the server's data dir\n",
    );
    expect(readdirSync(parent)).toEqual([]);
    // The default data dir (./credgate-data of the working directory) is not created either.
    const cwd = tempDir();
    const proc = Bun.spawn([...credgateCommand(), "run", "--", "true"], { cwd, env: { ...process.env, CREDGATE_API_KEY: "", CREDGATE_DATA_DIR: "" }, stdout: "pipe", stderr: "pipe" });
    expect(await proc.exited).toBe(1);
    expect(await new Response(proc.stderr).text()).toContain(`no API key and no credgate data in ${join(cwd, "credgate-data")}`);
    expect(readdirSync(cwd)).toEqual([]);
  });

  test("`run --help` documents CREDGATE_URL and CREDGATE_API_KEY", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("CREDGATE_URL      the credgate API to ask for the agent's settings (default http://localhost:10254)");
    expect(help.stdout).toContain("CREDGATE_API_KEY  a project API key (svc_…) of that server");
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
    // A new agent is in mode `grants`: without a grant it can inject no Anthropic secret.
    expect((await cg.api("POST", "/v1/agents", { body: { name: "No LLM", identifier: "no-llm" } })).status).toBe(201);
    const res = await cg.api("GET", "/v1/container-config?agent=no-llm");
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(["No Anthropic credentials configured — the agent will use its own API key if available."]);
    expect((await cg.api("GET", "/v1/container-config")).body.warnings).toBeUndefined();
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
