// git over SSH through the real credgate process (docs/ssh.md), with real parts only: Debian's OpenSSH server
// serving bare repositories on loopback (the secret's host `git.test` reaches it through CREDGATE_CONNECT_TO),
// OpenSSH's ssh and git as the agent with `credgate tunnel` as ProxyCommand, the @cert-authority line and no key
// of its own. Clone, fetch and push; the pinned host key; refused commands, shell, terminal, subsystem, agent
// and port forwarding; push block and approvals (approve, deny, remembered) decided through the API while the
// client waits; a policy rule on the host (method SSH, path = the repository); one log row per command; the
// key in no response, log line, agent file or the database file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run, until as retry } from "../support/gateway.ts";
import { credgateCommand, startCredgate, type RunningCredgate } from "../support/process.ts";
import { writeAgentSsh } from "../support/sshAgentSide.ts";
import { newKeyPair, startSshServer, type SshServer } from "../support/sshServer.ts";
import { tempDir } from "../support/tmp.ts";

let cg: RunningCredgate;
let sshd: SshServer;
let agentDir: string;
let sshEnv: Record<string, string>;
let key: { privateKey: string; publicKey: string };
const secrets: Record<string, string> = {};

/** The middle of the key's base64: what would show if the key leaked anywhere. */
const keyBody = () => key.privateKey.split("\n")[2]!;

async function sshSecret(name: string, host: string, over: Record<string, unknown> = {}): Promise<string> {
  const r = await cg.api("POST", "/v1/secrets", {
    body: { name, type: "generic", value: key.privateKey, hostPattern: host, injectionConfig: { ssh: { user: sshd.user, knownHosts: sshd.knownHostsLine(host), ...over } } },
  });
  expect(r.status).toBe(201);
  return r.body.id;
}

const ssh = (args: string[], env: Record<string, string> = {}) => run(["ssh", "-F", join(agentDir, "ssh_config"), ...args], { env: { ...sshEnv, ...env }, timeoutMs: 60_000 });
const gitRun = (args: string[], cwd?: string) => run(["git", ...args], { env: sshEnv, timeoutMs: 120_000, ...(cwd ? { cwd } : {}) });

/** Waits until `check` gives something (not null), for up to `ms`. */
async function until<T>(check: () => T | null | Promise<T | null>, ms = 7_000): Promise<T> {
  return retry(async () => {
    const v = await check();
    if (v === null || v === undefined || v === false) throw new Error("not yet");
    return v;
  }, ms);
}

async function logsFor(path: string): Promise<any[]> {
  return (await cg.api("GET", `/v1/logs?limit=200`)).body.data.filter((r: any) => r.method === "SSH" && r.path === path);
}

beforeAll(async () => {
  sshd = await startSshServer();
  const keys = tempDir("credgate-sshkeys-");
  key = newKeyPair(keys, "credgate_key");
  sshd.authorize(key.publicKey);
  const mapping = ["git.test", "push.test", "block.test", "approve.test", "any.test", "wrongkey.test"].map((h) => `${h}:22:127.0.0.1:${sshd.port}`).join(",");
  cg = await startCredgate({ env: { CREDGATE_CONNECT_TO: mapping, CREDGATE_APPROVAL_POLL_SECONDS: "2" } });
  secrets.git = await sshSecret("git-key", "git.test");
  secrets.block = await sshSecret("block-key", "block.test", { push: "block" });
  secrets.approve = await sshSecret("approve-key", "approve.test", { push: "approve" });
  secrets.any = await sshSecret("any-key", "any.test", { commands: "any" });
  // Pinned to another key than the server's.
  const other = newKeyPair(keys, "other_host");
  secrets.wrong = (
    await cg.api("POST", "/v1/secrets", {
      body: { name: "wrong", type: "generic", value: key.privateKey, hostPattern: "wrongkey.test", injectionConfig: { ssh: { user: sshd.user, knownHosts: `wrongkey.test ${other.publicKey}` } } },
    })
  ).body.id;
  sshd.bareRepo("team/app.git");
  sshd.bareRepo("blocked/app.git");
  // The agent side as `credgate run` writes it, with the agent's proxy in HTTPS_PROXY for `credgate tunnel`.
  ({ dir: agentDir, env: sshEnv } = await writeAgentSsh(cg));
}, 120_000);

afterAll(async () => {
  if (process.env.SSH_TEST_DEBUG) console.log(cg?.output(), sshd?.output());
  await cg?.stop();
  await sshd?.stop();
});

describe("git through credgate", () => {
  test("clone, fetch and push with no key on the agent's side; one log row per command", async () => {
    const work = tempDir("credgate-clone-");
    const clone = await gitRun(["clone", "-q", "git@git.test:team/app.git", join(work, "app")]);
    expect(clone.stderr).toBe("");
    expect(clone.code).toBe(0);
    expect(readFileSync(join(work, "app", "README.md"), "utf8")).toBe("hello\n");
    writeFileSync(join(work, "app", "new.txt"), "pushed through credgate\n");
    execFileSync("git", ["add", "new.txt"], { cwd: join(work, "app") });
    execFileSync("git", ["-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "y"], { cwd: join(work, "app") });
    const push = await gitRun(["push", "-q", "origin", "main"], join(work, "app"));
    expect(push.code).toBe(0);
    expect(execFileSync("git", ["--git-dir", join(sshd.repos, "team/app.git"), "show", "main:new.txt"]).toString()).toBe("pushed through credgate\n");
    const fetched = await gitRun(["fetch", "-q", "origin"], join(work, "app"));
    expect(fetched.code).toBe(0);
    const upload = await until(async () => ((await logsFor("git-upload-pack 'team/app.git'")).length >= 2 ? logsFor("git-upload-pack 'team/app.git'") : null), 15_000);
    expect(upload.every((r) => r.host === "git.test" && r.status === 200 && r.decision === "allowed")).toBe(true);
    const receive = await until(async () => ((await logsFor("git-receive-pack 'team/app.git'")).length === 1 ? logsFor("git-receive-pack 'team/app.git'") : null), 15_000);
    expect(receive[0].status).toBe(200);
  });

  test("the agent's ssh sees credgate's certificate for the host, and nothing of its own is offered", async () => {
    const r = await ssh(["-v", "git@git.test", "git-upload-pack", "'team/app.git'"], {});
    expect(r.stderr).toContain("Server host certificate: ssh-ed25519-cert-v01@openssh.com");
    expect(r.stderr).toContain("Host 'git.test' is known and matches the ED25519-CERT host certificate");
    expect(r.stderr).not.toContain("Offering public key");
  });

  test("the gateway port serves the SSH CA line too (for containers that reach only the gateway)", async () => {
    const fromApi = await (await fetch(`${cg.apiUrl}/v1/gateway/ssh-ca`)).text();
    const fromGateway = await fetch(`http://127.0.0.1:${cg.gatewayPort}/v1/gateway/ssh-ca`);
    expect(fromGateway.status).toBe(200);
    expect(await fromGateway.text()).toBe(fromApi);
    expect(fromApi).toMatch(/^@cert-authority \* ssh-ed25519 \S+ credgate\n$/);
  });

  test("credgate run: git clone over SSH with the config it writes", async () => {
    const work = tempDir("credgate-run-");
    const r = await run([...credgateCommand(), "run", "--", "git", "clone", "-q", "git@git.test:team/app.git", join(work, "app")], {
      env: { CREDGATE_URL: cg.apiUrl, CREDGATE_API_KEY: cg.keys.projectApiKey, HOME: work },
      timeoutMs: 120_000,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(work, "app", "README.md"), "utf8")).toBe("hello\n");
  });
});

describe("refusals", () => {
  test("a host key that is not the pinned one ends the command with the message; nothing is run", async () => {
    const r = await ssh(["git@wrongkey.test", "git-upload-pack", "'team/app.git'"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("credgate: host key of wrongkey.test does not match the secret's knownHosts");
    expect(r.stdout).toBe("");
  });

  test("a command other than git → only git commands", async () => {
    const r = await ssh(["git@git.test", "id"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("credgate: only git commands are allowed on git.test");
    const rows = await until(() => logsFor("id").then((l) => (l.length ? l : null)));
    expect(rows[0].status).toBe(403);
    expect(rows[0].decision).toBe("blocked");
  });

  test("a git command with a second argument or shell characters is not a git command", async () => {
    for (const cmd of ["git-upload-pack 'team/app.git' extra", "git-upload-pack 'team/app.git';id", "git-upload-pack $(id)"]) {
      const r = await ssh(["git@git.test", cmd]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("credgate: only git commands are allowed on git.test");
    }
  });

  test("commands: any relays other commands; env other than GIT_PROTOCOL is dropped", async () => {
    const r = await ssh(["-o", "SendEnv=CREDGATE_TEST_X", "git@any.test", 'echo "out:$CREDGATE_TEST_X"'], { CREDGATE_TEST_X: "sent" });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("out:\n");
    const exit = await ssh(["git@any.test", "exit 3"]);
    expect(exit.code).toBe(3);
  });

  test("a shell, a subsystem, agent and port forwarding are refused", async () => {
    const shell = await ssh(["-T", "git@git.test"]);
    expect(shell.code).toBe(1);
    expect(shell.stderr).toContain("credgate: a shell is not allowed through credgate");
    const sub = await ssh(["-s", "git@git.test", "sftp"]);
    expect(sub.code).toBe(1);
    expect(sub.stderr).toContain("credgate: the subsystem sftp is not allowed through credgate");
    const forward = await ssh(["-W", "127.0.0.1:22", "git@git.test"]);
    expect(forward.code).not.toBe(0);
    expect(forward.stderr).toContain("open failed");
    const agentSock = join(agentDir, "agent.sock");
    const agent = spawn(["ssh-agent", "-D", "-a", agentSock], { stdout: "ignore", stderr: "ignore" });
    try {
      await until(() => readdirSync(agentDir).includes("agent.sock") || null);
      const fwd = await ssh(["-o", "ForwardAgent=yes", "-o", `IdentityAgent=${agentSock}`, "git@git.test", "git-upload-pack", "'team/app.git'"], { SSH_AUTH_SOCK: agentSock });
      expect(fwd.code).toBe(1);
      expect(fwd.stderr).toContain("credgate: agent forwarding is not allowed through credgate");
    } finally {
      agent.kill();
    }
  });

  test("a terminal is refused (OpenSSH's ssh -tt then gives up itself, as it does when a server has no pty)", async () => {
    const r = await ssh(["-tt", "git@any.test", "echo", "no-tty"]);
    expect(r.stderr).toContain("PTY allocation request failed on channel 0");
    expect(r.stdout).not.toContain("no-tty");
  });

  test("push: block refuses git-receive-pack, and clone still works", async () => {
    const work = tempDir("credgate-block-");
    const c = await gitRun(["clone", "-q", "git@block.test:team/app.git", join(work, "app")]);
    expect(c.code).toBe(0);
    const r = await ssh(["git@block.test", "git-receive-pack", "'team/app.git'"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("credgate: pushes to block.test are blocked");
  });

  test("a policy rule on the host blocks one repository (method SSH, path = the repository)", async () => {
    const rule = await cg.api("POST", "/v1/policy/rules", {
      body: {
        name: "no blocked repos",
        action: "block",
        targets: [
          { kind: "network", hostPattern: "git.test", pathPattern: "/blocked/*" },
          // Method SSH: SSH commands only; an HTTP method never matches a command (the clone below goes through).
          { kind: "network", hostPattern: "git.test", pathPattern: "/sshonly/*", method: "SSH" },
          { kind: "network", hostPattern: "git.test", pathPattern: "/team/*", method: "GET" },
        ],
      },
    });
    expect(rule.status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    try {
      const blocked = await until(async () => {
        const r = await ssh(["git@git.test", "git-upload-pack", "'blocked/app.git'"]);
        return r.stderr.includes("blocked by credgate policy rule") ? r : null;
      });
      expect(blocked.code).toBe(1);
      expect(blocked.stderr).toContain('credgate: blocked by credgate policy rule "no blocked repos"');
      // A dot segment does not walk around the rule: the server would serve blocked/app.git.
      const around = await ssh(["git@git.test", "git-upload-pack", "'team/../blocked/app.git'"]);
      expect(around.code).toBe(1);
      expect(around.stderr).toContain('credgate: blocked by credgate policy rule "no blocked repos"');
      const sshOnly = await ssh(["git@git.test", "git-upload-pack", "'sshonly/app.git'"]);
      expect(sshOnly.code).toBe(1);
      expect(sshOnly.stderr).toContain('credgate: blocked by credgate policy rule "no blocked repos"');
      const work = tempDir("credgate-policy-");
      expect((await gitRun(["clone", "-q", "git@git.test:team/app.git", join(work, "app")])).code).toBe(0);
    } finally {
      await cg.api("DELETE", `/v1/policy/rules/${rule.body.id}`);
      await cg.api("POST", "/v1/policy/publish");
    }
  });
});

describe("push approvals", () => {
  async function pushWith(decide: (approvalId: string) => Promise<void>): Promise<{ code: number; stderr: string; approval: any }> {
    const pushing = ssh(["git@approve.test", "git-receive-pack", "'team/app.git'"], {});
    const approval = await until(async () => (await cg.api("GET", "/v1/approvals/pending")).body.requests.find((a: any) => a.method === "SSH" && a.host === "approve.test") ?? null, 20_000);
    expect(approval.path).toBe("git-receive-pack 'team/app.git'");
    await decide(approval.id);
    const r = await pushing;
    return { code: r.code, stderr: r.stderr, approval };
  }

  test("deny → the push is refused with the message", async () => {
    const r = await pushWith(async (id) => {
      expect((await cg.api("POST", `/v1/approvals/${id}/decision`, { body: { decision: "deny" } })).status).toBe(200);
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("credgate: the push to approve.test was not approved");
    const rows = await until(async () => (await cg.api("GET", "/v1/logs?limit=200")).body.data.find((l: any) => l.approvalId === r.approval.id && l.decision === "approval_denied") ?? null, 15_000);
    expect(rows.status).toBe(403);
  });

  test("the agent's ssh goes away while its push is held → the approval is cancelled, the row says so", async () => {
    const created = await cg.api("POST", "/v1/agents", { body: { name: "Leaving", identifier: "ssh-leaving", mode: "all" } });
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id).accessToken;
    const proc = spawn(["ssh", "-F", join(agentDir, "ssh_config"), "git@approve.test", "git-receive-pack", "'team/app.git'"], {
      env: { ...process.env, ...sshEnv, HTTPS_PROXY: `http://x:${token}@127.0.0.1:${cg.gatewayPort}` },
      stdin: "pipe",
      stdout: "ignore",
      stderr: "ignore",
    });
    const approval = await until(async () => (await cg.api("GET", "/v1/approvals/pending")).body.requests.find((a: any) => a.agent.id === created.body.id) ?? null, 20_000);
    proc.kill();
    const record = await until(async () => {
      const r = await cg.api("GET", `/v1/approvals/${approval.id}`);
      return r.body.status === "cancelled" ? r.body : null;
    }, 15_000);
    expect(record.status).toBe("cancelled");
    const row = await until(async () => (await cg.api("GET", "/v1/logs?limit=200")).body.data.find((l: any) => l.approvalId === approval.id && l.decision === "approval_cancelled") ?? null, 15_000);
    expect(row.method).toBe("SSH");
  });

  test("approve → a real push goes through; approve with remember → the next push is not held", async () => {
    const work = tempDir("credgate-approve-");
    expect((await gitRun(["clone", "-q", "git@approve.test:team/app.git", join(work, "app")])).code).toBe(0);
    writeFileSync(join(work, "app", "approved.txt"), "approved\n");
    execFileSync("git", ["add", "approved.txt"], { cwd: join(work, "app") });
    execFileSync("git", ["-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "approved"], { cwd: join(work, "app") });
    const pushing = gitRun(["push", "-q", "origin", "main"], join(work, "app"));
    const approval = await until(async () => (await cg.api("GET", "/v1/approvals/pending")).body.requests.find((a: any) => a.host === "approve.test") ?? null, 20_000);
    expect((await cg.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve", remember: { minutes: 5 } } })).status).toBe(200);
    const pushed = await pushing;
    expect(pushed.code).toBe(0);
    expect(execFileSync("git", ["--git-dir", join(sshd.repos, "team/app.git"), "show", "main:approved.txt"]).toString()).toBe("approved\n");
    // Remembered for this agent and key: the next push passes without a hold.
    writeFileSync(join(work, "app", "again.txt"), "again\n");
    execFileSync("git", ["add", "again.txt"], { cwd: join(work, "app") });
    execFileSync("git", ["-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "again"], { cwd: join(work, "app") });
    const again = await until(async () => {
      const r = await gitRun(["push", "-q", "origin", "main"], join(work, "app"));
      return r.code === 0 ? r : null;
    }, 30_000);
    expect(again.code).toBe(0);
    const rows = await until(async () => (await cg.api("GET", "/v1/logs?limit=200")).body.data.find((l: any) => l.host === "approve.test" && l.decision === "approved_by_memory") ?? null, 15_000);
    expect(rows.status).toBe(200);
  });
});

describe("who may use a key", () => {
  test("an agent in mode grants gets no SSH interception without a grant of the key, and does with one", async () => {
    const created = await cg.api("POST", "/v1/agents", { body: { name: "Granted", identifier: "ssh-grants" } });
    expect(created.status).toBe(201);
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id).accessToken;
    const asAgent = { HTTPS_PROXY: `http://x:${token}@127.0.0.1:${cg.gatewayPort}` };
    // An ordinary tunnel (it waits for an HTTP request): ssh gives up waiting for the server's banner.
    const without = await ssh(["-o", "ConnectTimeout=3", "git@git.test", "git-upload-pack", "'team/app.git'"], asAgent);
    expect(without.code).toBe(255);
    expect(without.stderr).toContain("banner exchange");
    expect(without.stderr).not.toContain("Host 'git.test' is known");
    expect((await cg.api("PUT", `/v1/agents/${created.body.id}/grants/secrets/${secrets.git}`)).status).toBe(200);
    const work = tempDir("credgate-granted-");
    const cloned = await until(async () => {
      const r = await run(["git", "clone", "-q", "git@git.test:team/app.git", join(work, `app-${Date.now()}`)], { env: { ...sshEnv, ...asAgent }, timeoutMs: 60_000 });
      return r.code === 0 ? r : null;
    }, 20_000);
    expect(cloned.code).toBe(0);
  });

  test("a token regenerated while an SSH connection stays open: its next command is refused", async () => {
    const created = await cg.api("POST", "/v1/agents", { body: { name: "Rotated", identifier: "ssh-rotated", mode: "all" } });
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === created.body.id).accessToken;
    const asAgent = { HTTPS_PROXY: `http://x:${token}@127.0.0.1:${cg.gatewayPort}` };
    const control = join(agentDir, "ctl");
    const mux = ["-o", `ControlPath=${control}`];
    const master = spawn(["ssh", "-F", join(agentDir, "ssh_config"), ...mux, "-o", "ControlMaster=yes", "-N", "git@git.test"], { env: { ...process.env, ...sshEnv, ...asAgent }, stdout: "ignore", stderr: "ignore" });
    try {
      await until(async () => ((await ssh([...mux, "-O", "check", "git@git.test"], asAgent)).code === 0 ? true : null), 20_000);
      const before = await ssh([...mux, "-o", "ControlMaster=no", "git@git.test", "git-upload-pack", "'team/app.git'"], asAgent);
      // The server answered (its refs; it then ends on the closed stdin).
      expect(before.stdout).toContain("refs/heads/main");
      expect((await cg.api("POST", `/v1/agents/${created.body.id}/regenerate-token`)).status).toBe(200);
      const after = await until(async () => {
        const r = await ssh([...mux, "-o", "ControlMaster=no", "git@git.test", "git-upload-pack", "'team/app.git'"], asAgent);
        return r.code === 1 ? r : null;
      }, 10_000);
      expect(after.stderr).toContain("credgate: the agent token is no longer valid");
      expect(after.stdout).toBe("");
    } finally {
      master.kill();
    }
  });

  test("a wrong agent token is refused at the CONNECT (407): nothing reaches the server", async () => {
    const r = await ssh(["git@git.test", "git-upload-pack", "'team/app.git'"], { HTTPS_PROXY: `http://x:agt_${"0".repeat(64)}@127.0.0.1:${cg.gatewayPort}` });
    expect(r.code).toBe(255);
    expect(r.stderr).toContain("407");
  });
});

describe("the key stays in credgate", () => {
  test("not in a response, a log line, the agent's files or the database file", async () => {
    for (const id of Object.values(secrets)) {
      const r = await cg.api("GET", `/v1/secrets/${id}`);
      expect(r.text).not.toContain(keyBody());
      const pub = await cg.api("GET", `/v1/secrets/${id}/public-key`);
      expect(pub.body.publicKey.split(" ")[1]).toBe(key.publicKey.split(" ")[1]);
    }
    expect((await cg.api("GET", "/v1/logs?limit=500")).text).not.toContain(keyBody());
    expect(cg.output()).not.toContain(keyBody());
    for (const f of readdirSync(agentDir)) {
      const p = join(agentDir, f);
      if (statSync(p).isFile()) expect(readFileSync(p, "latin1")).not.toContain(keyBody());
    }
    for (const f of readdirSync(cg.dataDir)) {
      const p = join(cg.dataDir, f);
      if (statSync(p).isFile()) expect(readFileSync(p, "latin1")).not.toContain(keyBody());
    }
  });
});
