// `credgate run [--agent <identifier>] -- <cmd> [args…]`: run a command whose HTTP(S) goes through the
// gateway as that agent. The configuration comes from the running server's API (CREDGATE_URL, default
// http://localhost:10254) with CREDGATE_API_KEY, else the bootstrap key read from the data dir.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../src/runtime/config.ts";
import { GCP_STUB_CONTAINER_PATH } from "../src/services/cloudSetup.ts";
import { combinedBundle, curlrcWithProxyCa, runEnvironment, type ContainerConfig } from "../src/run/environment.ts";
import { nodePreloadBundle } from "../src/run/preloadBundle.ts" with { type: "macro" };
import { NoDataError, openCore } from "../src/server.ts";
import { fail } from "./fail.ts";
import { sshFiles } from "../src/run/sshConfig.ts";

const RUN_HELP = `
Which server, and as whom:
  CREDGATE_URL      the credgate API to ask for the agent's settings (default http://localhost:10254)
  CREDGATE_API_KEY  a project API key (svc_…) of that server; without it, the bootstrap key is read from
                    --data-dir (default ./credgate-data), which must then be the server's own data dir
An API on HTTPS with a certificate of the gateway CA (CREDGATE_TLS=gateway-ca) is trusted once that CA is in
NODE_EXTRA_CA_CERTS (fetch it from http://<gateway>/v1/gateway/ca).

The command gets the agent's proxy (HTTPS_PROXY, HTTP_PROXY, NO_PROXY for loopback; https:// when the server's
CREDGATE_GATEWAY_URL is, with the CA of that hop set for every runtime), the gateway CA for Node, Bun, Python,
curl, git, Go and Deno, and a Node preload that sends fetch() and the http/https modules (axios,
got, vendor SDKs) through the gateway, and for each PostgreSQL credential the agent may use a URL in
CREDGATE_DB_<NAME>_URL (and PGHOST, PGUSER, PGPASSWORD… when there is exactly one) whose password is the agent's
token, for credgate's database port. git and ssh over SSH go through the gateway too (GIT_SSH_COMMAND, and
CREDGATE_SSH_CONFIG for ssh -F): no key on this side, credgate logs in with the SSH secret's key. New agents are in mode "grants": they inject only the secrets granted to
them (PUT /v1/agents/<id>/grants/secrets/<secretId>); the Default Agent injects every secret.

Examples:
  CREDGATE_API_KEY=svc_… credgate run -- curl -s https://api.github.com/user
  CREDGATE_URL=http://gateway-host:10254 CREDGATE_API_KEY=svc_… credgate run --agent coder -- node agent.js
`;

/** With neither CREDGATE_API_KEY nor a data dir to read the bootstrap key from: how to point `run` at a server. */
export function noApiKey(dataDir: string): string {
  return (
    `no API key and no credgate data in ${dataDir}: set CREDGATE_API_KEY to a project API key (printed at the server's first start; ` +
    "`credgate keys` reprints it) and CREDGATE_URL to the server's API URL (default http://localhost:10254), or pass --data-dir with the server's data dir"
  );
}

/** CREDGATE_API_KEY, else the bootstrap key read from the data dir (which is never created). */
async function apiKeyFrom(dataDir: string | undefined): Promise<string> {
  const fromEnv = process.env.CREDGATE_API_KEY?.trim();
  if (fromEnv) return fromEnv;
  const config = loadConfig({ dataDir });
  let core;
  try {
    core = await openCore(config, { readOnly: true });
  } catch (err) {
    throw err instanceof NoDataError ? new Error(noApiKey(config.dataDir)) : err;
  }
  const key = core.bootstrap.projectApiKey;
  await core.close();
  return key;
}

async function getJson(url: string, key: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  } catch (err) {
    throw new Error(`cannot reach the credgate API at ${url}: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try {
      const body = JSON.parse(text);
      message = typeof body.error === "string" ? body.error : (body.error?.message ?? text);
    } catch {}
    throw new Error(`${url} answered ${res.status}: ${message}`);
  }
  return JSON.parse(text);
}

async function getText(url: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url);
  } catch (err) {
    throw new Error(`cannot reach the credgate API at ${url}: ${(err as Error).message}`);
  }
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.text();
}

export function registerRun(program: Command): void {
  program
    .command("run")
    .description("run a command with its HTTP(S) traffic going through the gateway")
    .option("--agent <identifier>", "the agent to act as (default: the project's default agent)")
    .option("--data-dir <dir>", "data directory to read the bootstrap API key from when CREDGATE_API_KEY is unset")
    .argument("<command...>", "the command and its arguments (after --)")
    .passThroughOptions()
    .addHelpText("after", RUN_HELP)
    .action(async (command: string[], flags: { agent?: string; dataDir?: string }) => {
      let dir: string | null = null;
      try {
        const base = (process.env.CREDGATE_URL?.trim() || "http://localhost:10254").replace(/\/+$/, "");
        const key = await apiKeyFrom(flags.dataDir);
        const query = flags.agent ? `?agent=${encodeURIComponent(flags.agent)}` : "";
        const config = (await getJson(`${base}/v1/container-config${query}`, key)) as ContainerConfig;
        const { url: gatewayUrl } = (await getJson(`${base}/v1/gateway-url`, key)) as { url: string };
        dir = mkdtempSync(join(tmpdir(), "credgate-run-"));
        const files = { ca: join(dir, "ca.pem"), bundle: join(dir, "ca-bundle.pem"), nodePreload: join(dir, "node-preload.cjs"), curlHome: dir };
        writeFileSync(files.ca, config.caCertificate);
        writeFileSync(files.bundle, combinedBundle(config.caCertificate));
        // The Node preload (undici inlined, ~1 MB) is made here, not at module level: no other command holds it.
        writeFileSync(files.nodePreload, nodePreloadBundle());
        writeFileSync(join(files.curlHome, ".curlrc"), curlrcWithProxyCa(process.env, files.bundle));
        // The Google stub service-account file (docs/cloud-identities.md#agent-setup), when the agent may use one.
        const gcpStub = config.credentialStubs?.find((s) => s.containerPath === GCP_STUB_CONTAINER_PATH);
        if (gcpStub) writeFileSync(join(dir, "gcp-credentials.json"), gcpStub.content, { mode: 0o600 });
        const env = runEnvironment(process.env, config, gatewayUrl, { ...files, ...(gcpStub ? { gcpCredentials: join(dir, "gcp-credentials.json") } : {}) });
        // git and ssh over SSH through the gateway (docs/ssh.md#the-agent-side): no key on this side.
        const ssh = sshFiles(dir, await getText(`${base}/v1/gateway/ssh-ca`));
        for (const [file, text] of Object.entries(ssh.files)) writeFileSync(file, text, { mode: 0o600 });
        Object.assign(env, ssh.env);
        const child = Bun.spawn(command, { env, stdio: ["inherit", "inherit", "inherit"] });
        const forward = (signal: NodeJS.Signals) => child.kill(signal);
        process.on("SIGINT", forward);
        process.on("SIGTERM", forward);
        await child.exited;
        rmSync(dir, { recursive: true, force: true });
        // A child killed by a signal exits like a shell reports it: 128 + the signal number.
        process.exit(child.exitCode ?? (child.signalCode ? 128 + (constants.signals[child.signalCode as NodeJS.Signals] ?? 0) : 1));
      } catch (err) {
        if (dir) rmSync(dir, { recursive: true, force: true });
        fail(err);
      }
    });
}
