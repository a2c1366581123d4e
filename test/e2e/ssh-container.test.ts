// git over SSH from a container, with exactly what credgate tells an agent (docs/ssh.md#the-agent-side): the
// `socat` block of the gateway skill (`GET /v1/skill/gateway`), its placeholders filled from the container
// configuration's HTTPS_PROXY (`GET /v1/container-config`), run by sh in an empty home with the container's
// environment and nothing else; then OpenSSH's git clones through credgate with no key on the agent's side.
// OpenSSH reads ~/.ssh from the password database's home, not $HOME: each command runs in a mount namespace of
// its own (`unshare -m`, with `-r` when not root) where an empty temp dir is mounted over that home.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { run, until } from "../support/gateway.ts";
import { freePort } from "../support/ports.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { newKeyPair, startSshServer, type SshServer } from "../support/sshServer.ts";
import { tempDir } from "../support/tmp.ts";

let cg: RunningCredgate;
let sshd: SshServer;
let key: { privateKey: string; publicKey: string };
let containerEnv: Record<string, string>;

beforeAll(async () => {
  sshd = await startSshServer();
  key = newKeyPair(tempDir("credgate-sshkeys-"), "credgate_key");
  sshd.authorize(key.publicKey);
  sshd.bareRepo("team/app.git");
  const gatewayPort = await freePort();
  cg = await startCredgate({
    gatewayPort,
    env: { CREDGATE_CONNECT_TO: `git.test:22:127.0.0.1:${sshd.port}`, CREDGATE_CONTAINER_GATEWAY_HOST: `127.0.0.1:${gatewayPort}` },
  });
  const created = await cg.api("POST", "/v1/secrets", {
    body: { name: "git-key", type: "generic", value: key.privateKey, hostPattern: "git.test", injectionConfig: { ssh: { user: sshd.user, knownHosts: sshd.knownHostsLine("git.test") } } },
  });
  expect(created.status).toBe(201);
  const config = await cg.api("GET", "/v1/container-config");
  expect(config.status).toBe(200);
  containerEnv = config.body.env;
}, 60_000);

afterAll(async () => {
  await cg?.stop();
  await sshd?.stop();
});

/** The skill's fenced block under "git over SSH", unindented, with the placeholders a container fills from HTTPS_PROXY. */
async function printedSetup(): Promise<string> {
  const skill = await cg.api("GET", "/v1/skill/gateway");
  expect(skill.status).toBe(200);
  const section = skill.text.slice(skill.text.indexOf("## git over SSH"));
  const block = /\n( *)```\n([\s\S]*?)\n\1```/.exec(section);
  expect(block).not.toBeNull();
  const indent = block![1]!.length;
  const proxy = new URL(containerEnv.HTTPS_PROXY!);
  return block![2]!
    .split("\n")
    .map((l) => l.slice(indent))
    .join("\n")
    .replaceAll("<gateway host>", proxy.hostname)
    .replaceAll("<gateway port>", proxy.port)
    .replaceAll("<agent token>", decodeURIComponent(proxy.password));
}

/** `argv` in the container's environment only, with `home` mounted over the user's home directory. */
function inContainer(home: string, argv: string[], timeoutMs = 60_000) {
  const root = process.getuid?.() === 0;
  const env = Object.entries({ PATH: process.env.PATH ?? "/usr/bin:/bin", ...containerEnv }).map(([k, v]) => `${k}=${v}`);
  const script = 'h=$(getent passwd "$(id -u)" | cut -d: -f6) && mount --bind "$1" "$h" && shift && cd "$h" && exec env -i HOME="$h" "$@"';
  return run(["unshare", ...(root ? [] : ["-r"]), "-m", "--propagation", "private", "sh", "-c", script, "sh", home, ...env, ...argv], { timeoutMs });
}

describe("the container form (socat)", () => {
  test("the printed setup, run as printed in an empty home, then git clone through credgate with no key", async () => {
    const home = tempDir("credgate-container-home-");
    const setup = await printedSetup();
    expect(setup).toContain("ProxyCommand socat - PROXY:127.0.0.1:%h:%p");
    const ran = await inContainer(home, ["sh", "-ec", setup]);
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    const work = tempDir("credgate-container-work-");
    const cloned = await inContainer(home, ["git", "clone", "-q", "git@git.test:team/app.git", join(work, "app")], 120_000);
    expect(cloned.stderr).toBe("");
    expect(cloned.code).toBe(0);
    expect(readFileSync(join(work, "app", "README.md"), "utf8")).toBe("hello\n");
    const row = await until(async () => {
      const logs = await cg.api("GET", "/v1/logs?limit=50");
      const r = logs.body.data.find((l: any) => l.method === "SSH" && l.path === "git-upload-pack 'team/app.git'");
      if (!r) throw new Error("no row yet");
      return r;
    }, 15_000);
    expect(row.host).toBe("git.test");
    expect(row.status).toBe(200);
    // The agent's side holds the config and the CA line: no key, nothing of the stored one.
    const files = readdirSync(join(home, ".ssh")).sort();
    expect(files).toEqual(["config", "credgate_known_hosts"]);
    for (const f of files) {
      const text = readFileSync(join(home, ".ssh", f), "utf8");
      expect(text).not.toContain("PRIVATE KEY");
      expect(text).not.toContain(key.privateKey.split("\n")[2]!);
    }
    expect(statSync(join(home, ".ssh", "credgate_known_hosts")).size).toBeGreaterThan(0);
  });
});
