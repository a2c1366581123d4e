// The shipped artifact: `npm run build` (bun build --compile) produces one self-contained executable that
// runs from an empty directory — no node_modules, no bun, migrations embedded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type Subprocess } from "bun";
import { copyFileSync, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { VERSION } from "../../src/runtime/version.ts";
import { freePort } from "../support/ports.ts";
import { makePki, startUpstream } from "../support/upstream.ts";
import { tempDir } from "../support/tmp.ts";
import { closeCleanPages, launchBrowser, openPage } from "../support/browser.ts";

const ROOT = join(import.meta.dir, "../..");
const BUN = join(ROOT, "node_modules/.bin/bun");

let binary = "";
let emptyDir = "";
/** A minimal environment: no bun, no node_modules on PATH, HOME inside the empty directory. */
let env: Record<string, string> = {};
const procs: Subprocess[] = [];

beforeAll(async () => {
  const buildDir = tempDir("credgate-build-");
  const build = spawn([BUN, "build", "cli/main.ts", "--compile", "--minify", "--bytecode", "--format=esm", "--outfile", join(buildDir, "credgate")], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited]);
  if (code !== 0) throw new Error(`build failed (${code}):\n${out}\n${err}`);
  emptyDir = tempDir("credgate-empty-");
  expect(readdirSync(emptyDir)).toEqual([]);
  binary = join(emptyDir, "credgate");
  copyFileSync(join(buildDir, "credgate"), binary);
  env = { PATH: "/usr/bin:/bin", HOME: emptyDir };
}, 120_000);

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
});

async function run(args: string[]) {
  const p = spawn([binary, ...args], { cwd: emptyDir, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

/** Starts the binary from the empty directory on free ports; resolves once /v1/health answers. */
async function serveBinary(extraEnv: Record<string, string> = {}) {
  const dataDir = tempDir();
  const apiPort = await freePort();
  const gatewayPort = await freePort();
  const proc = spawn([binary, "serve", "--data-dir", dataDir, "--port", String(apiPort), "--gateway-port", String(gatewayPort), "--host", "127.0.0.1"], {
    cwd: emptyDir,
    env: { ...env, ...extraEnv },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(proc);
  let out = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of proc.stdout) out += decoder.decode(chunk);
  })();
  void (async () => {
    for await (const chunk of proc.stderr) out += decoder.decode(chunk);
  })();

  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const deadline = Date.now() + 20_000;
  let health: any = null;
  while (Date.now() < deadline && proc.exitCode === null) {
    try {
      const r = await fetch(`${apiUrl}/v1/health`);
      if (r.ok) {
        health = await r.json();
        break;
      }
    } catch {}
    await Bun.sleep(50);
  }
  if (!health) throw new Error(`binary did not answer /v1/health:\n${out}`);
  // The API answers while the gateway workers start; the start is over when it says so.
  while (Date.now() < deadline && !out.includes('"msg":"credgate started"')) await Bun.sleep(20);
  return { proc, dataDir, apiUrl, health, output: () => out };
}

describe("compiled binary", () => {
  test("is a single executable file", async () => {
    expect(existsSync(binary)).toBe(true);
    expect(statSync(binary).mode & 0o111).not.toBe(0);
    expect(readdirSync(emptyDir)).toEqual(["credgate"]);
  });

  test("`credgate --version` from an empty directory", async () => {
    const r = await run(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(VERSION);
  });

  test("serves /v1/health and an authenticated /v1/agents; keys --json works", async () => {
    const { proc, dataDir, apiUrl, output, health } = await serveBinary();
    expect(health.status).toBe("ok");
    expect(health.version).toBe(VERSION);

    const keysRun = await run(["keys", "--data-dir", dataDir, "--json"]);
    expect(keysRun.code).toBe(0);
    const keys = JSON.parse(keysRun.stdout);
    expect(keys.projectApiKey).toMatch(/^svc_[0-9a-f]{64}$/);
    expect(output()).toContain(keys.projectApiKey);
    // The executable starts itself again as its gateway workers: one gateway process per core by default.
    expect(output().match(/"msg":"gateway worker started"/g)?.length ?? 0).toBe(navigator.hardwareConcurrency - 1);

    const unauth = await fetch(`${apiUrl}/v1/agents`);
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toEqual({ error: { message: "Invalid API key or token.", type: "authentication_error" } });
    const agents = await fetch(`${apiUrl}/v1/agents`, { headers: { authorization: `Bearer ${keys.projectApiKey}` } });
    expect(agents.status).toBe(200);
    const list = (await agents.json()) as any[];
    expect(list).toHaveLength(1);
    // The app catalog is bundled: every provider, and a direct connection can be made.
    const apps = (await (await fetch(`${apiUrl}/v1/apps`, { headers: { authorization: `Bearer ${keys.projectApiKey}` } })).json()) as any[];
    expect(apps.map((a) => a.id)).toEqual(["github", "gitlab", "gmail", "google-calendar", "google-drive", "slack", "notion", "linear", "jira", "dropbox", "resend", "cloudflare", "vercel", "datadog"]);
    const connect = await fetch(`${apiUrl}/v1/apps/resend/connect`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.projectApiKey}` },
      body: JSON.stringify({ fields: { apiKey: "re_binary" } }),
    });
    expect(connect.status).toBe(200);
    expect(((await connect.json()) as any).connection.label).toBe("Resend");
    expect(list[0]).toMatchObject({ identifier: "default", isDefault: true, accessToken: keys.defaultAgentToken });
    // A write goes through the embedded migrations' schema.
    const created = await fetch(`${apiUrl}/v1/secrets`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.projectApiKey}` },
      body: JSON.stringify({ name: "k", type: "llm_a", value: "sk-ant-api03-binary" }),
    });
    expect(created.status).toBe(201);

    proc.kill("SIGTERM");
    const code = await Promise.race([proc.exited, Bun.sleep(10_000).then(() => "hung")]);
    expect(code).toBe(0);
    // Nothing was written next to the binary.
    expect(readdirSync(emptyDir)).toEqual(["credgate"]);
  }, 60_000);

  test("serves the embedded dashboard: a deep link answers the shell, whose script and stylesheet come from the binary; sign-in works in Chromium", async () => {
    const { proc, dataDir, apiUrl } = await serveBinary();
    const keys = JSON.parse((await run(["keys", "--data-dir", dataDir, "--json"])).stdout);
    const shell = await fetch(`${apiUrl}/p/${keys.projectId}/secrets?create=generic&host=api.x.com`);
    expect(shell.status).toBe(200);
    expect(shell.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await shell.text();
    const script = /<script type="module" src="([^"]+)"/.exec(html)![1]!;
    const style = /<link rel="stylesheet" href="([^"]+)"/.exec(html)![1]!;
    const js = await fetch(apiUrl + script);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await js.text()).toContain("Sign in to credgate");
    expect((await (await fetch(apiUrl + style)).text())).toContain(".btn");

    // The public URL defaults to http://localhost:<port>, the origin the browser uses here.
    const origin = apiUrl.replace("127.0.0.1", "localhost");
    const browser = await launchBrowser();
    try {
      const w = await openPage(browser);
      await w.page.goto(`${origin}/p/${keys.projectId}/agents`);
      await w.page.getByLabel("API key").fill(keys.projectApiKey);
      await w.page.getByRole("button", { name: "Sign in" }).click();
      await w.page.waitForURL(`${origin}/p/${keys.projectId}/agents`);
      await w.page.getByRole("link", { name: "Default Agent" }).waitFor();
      await closeCleanPages([w], origin);
    } finally {
      await browser.close();
    }
    proc.kill("SIGTERM");
    await proc.exited;
    expect(readdirSync(emptyDir)).toEqual(["credgate"]);
  }, 60_000);

  test("`credgate run` routes Node's fetch and https module through the gateway (the preload is inside the binary)", async () => {
    const pki = makePki(["api.binary.test"]);
    const up = startUpstream(pki);
    try {
      const server = await serveBinary({ CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: `api.binary.test:${up.port}:127.0.0.1` });
      const keys = JSON.parse((await run(["keys", "--data-dir", server.dataDir, "--json"])).stdout);
      const secret = await fetch(`${server.apiUrl}/v1/secrets`, {
        method: "POST",
        headers: { authorization: `Bearer ${keys.projectApiKey}` },
        body: JSON.stringify({ name: "b", type: "generic", value: "binary-run-secret", hostPattern: "api.binary.test", injectionConfig: { headerName: "x-api-key" } }),
      });
      expect(secret.status).toBe(201);
      const url = `https://api.binary.test:${up.port}/via`;
      const script = `fetch("${url}/fetch").then((r) => { console.log("fetch", r.status); require("https").get("${url}/https", (res) => { res.resume(); res.on("end", () => console.log("https", res.statusCode)); }); })`;
      // No CREDGATE_API_KEY: the bootstrap key is read from the data dir; node is found on PATH.
      const p = spawn([binary, "run", "--data-dir", server.dataDir, "--", "node", "-e", script], {
        cwd: emptyDir,
        env: { ...env, CREDGATE_URL: server.apiUrl },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(stdout).toBe("fetch 200\nhttps 200\n");
      expect(up.seen.map((s) => [s.url, s.headers["x-api-key"]])).toEqual([
        ["/via/fetch", "binary-run-secret"],
        ["/via/https", "binary-run-secret"],
      ]);
      expect(readdirSync(emptyDir)).toEqual(["credgate"]);
    } finally {
      await up.stop();
    }
  }, 60_000);
});
