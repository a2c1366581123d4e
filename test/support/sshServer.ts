// Debian's OpenSSH server for the SSH suites (docs/ssh.md): started on a free loopback port with its own host
// keys and config in a temp dir, trusting only the public keys a test adds, serving the bare git repositories
// of its `repos` dir through a forced command (git-shell for git commands, sh for the rest: `commands: any`).
import { spawn, type Subprocess } from "bun";
import { execFileSync } from "node:child_process";
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { tempDir } from "./tmp.ts";

export interface SshServer {
  port: number;
  dir: string;
  repos: string;
  /** The login user (whoever runs the tests: sshd can only log in as itself unless root). */
  user: string;
  /** `<hosts> ssh-ed25519 <base64>`: the server's host key as a known_hosts line for `hosts` (its ECDSA one if asked and started with it). */
  knownHostsLine(hosts: string, kind?: "ed25519" | "ecdsa"): string;
  authorize(publicKey: string): void;
  /** A new bare repository `<name>` (e.g. `team/app.git`) with one commit on main. */
  bareRepo(name: string, files?: Record<string, string | Buffer>): string;
  output(): string;
  stop(): Promise<void>;
}

function keygen(file: string, type = "ed25519"): string {
  execFileSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", "", "-f", file]);
  return readFileSync(`${file}.pub`, "utf8").trim();
}

/** A throwaway ed25519 key pair (private key in OpenSSH format, public line). */
export function newKeyPair(dir: string, name: string): { privateKey: string; publicKey: string } {
  const file = join(dir, name);
  const publicKey = keygen(file);
  return { privateKey: readFileSync(file, "utf8"), publicKey };
}

function waitForPort(port: number, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = connect({ host: "127.0.0.1", port });
      s.once("connect", () => {
        s.destroy();
        resolve();
      });
      s.once("error", () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error(`sshd did not listen on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

const git = (args: string[], cwd: string) => execFileSync("git", args, { cwd, stdio: "pipe", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } });

export interface SshServerOptions {
  /** An ECDSA (nistp256) host key besides the ed25519 one: for clients without ed25519 (bench/sshImplementations.ts). */
  ecdsaHostKey?: boolean;
}

export async function startSshServer(opts: SshServerOptions = {}): Promise<SshServer> {
  // sshd started as root wants its privilege separation directory (the system service creates it at boot).
  if (process.getuid?.() === 0 && !existsSync("/run/sshd")) mkdirSync("/run/sshd", { mode: 0o755 });
  const dir = tempDir("credgate-sshd-");
  const repos = join(dir, "repos");
  mkdirSync(repos);
  const hostPub = keygen(join(dir, "host_ed25519"));
  const ecdsaPub = opts.ecdsaHostKey ? keygen(join(dir, "host_ecdsa"), "ecdsa") : null;
  writeFileSync(join(dir, "authorized_keys"), "", { mode: 0o600 });
  const serve = join(dir, "serve.sh");
  writeFileSync(
    serve,
    `#!/bin/sh\ncd ${JSON.stringify(repos)} || exit 1\ncase "$SSH_ORIGINAL_COMMAND" in\n  git-*) exec git-shell -c "$SSH_ORIGINAL_COMMAND" ;;\n  *) exec /bin/sh -c "$SSH_ORIGINAL_COMMAND" ;;\nesac\n`,
  );
  chmodSync(serve, 0o755);
  const port = await freePort();
  const config = join(dir, "sshd_config");
  writeFileSync(
    config,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(dir, "host_ed25519")}`,
      ...(ecdsaPub ? [`HostKey ${join(dir, "host_ecdsa")}`] : []),
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      "StrictModes no",
      `PidFile ${join(dir, "sshd.pid")}`,
      "UsePAM no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      `ForceCommand ${serve}`,
      "AcceptEnv GIT_PROTOCOL CREDGATE_TEST_*",
      "AllowTcpForwarding yes",
      "AllowAgentForwarding yes",
      "LogLevel VERBOSE",
      "",
    ].join("\n"),
  );
  let out = "";
  const proc: Subprocess<"ignore", "pipe", "pipe"> = spawn(["/usr/sbin/sshd", "-D", "-e", "-f", config], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  void (async () => {
    for await (const chunk of proc.stderr) out += new TextDecoder().decode(chunk);
  })();
  await waitForPort(port);
  return {
    port,
    dir,
    repos,
    user: execFileSync("id", ["-un"]).toString().trim(),
    knownHostsLine: (hosts, kind = "ed25519") => {
      const pub = kind === "ecdsa" ? ecdsaPub : hostPub;
      if (pub === null) throw new Error("this sshd has no ECDSA host key (start it with ecdsaHostKey)");
      return `${hosts} ${pub.split(" ").slice(0, 2).join(" ")}`;
    },
    authorize: (publicKey) => appendFileSync(join(dir, "authorized_keys"), `${publicKey.trim()}\n`),
    bareRepo(name, files = { "README.md": "hello\n" }) {
      const path = join(repos, name);
      mkdirSync(path, { recursive: true });
      git(["init", "-q", "--bare", "-b", "main", path], repos);
      const work = tempDir("credgate-repo-");
      git(["init", "-q", "-b", "main"], work);
      for (const [f, content] of Object.entries(files)) writeFileSync(join(work, f), content);
      git(["add", "."], work);
      git(["commit", "-q", "-m", "first"], work);
      git(["push", "-q", path, "main"], work);
      return path;
    },
    output: () => out,
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
}
