// git clone over SSH through credgate against directly (docs/ssh.md#the-ssh-implementation): Debian's sshd on
// loopback serving a bare repository of about 30 MB of incompressible blobs; OpenSSH's git clones it directly (the
// key on the client's side) and through credgate (`credgate tunnel` as ProxyCommand, no key), taking turns, three
// rounds each. The ratio is direct time / credgate time (1.0 = as fast as direct); goal ≥ 0.5.
// Run alone: `bun bench/sshClone.ts [--json]`; `npm run bench` runs it last.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sshFiles } from "../src/run/sshConfig.ts";
import { credgateCommand, startCredgate } from "../test/support/process.ts";
import { newKeyPair, startSshServer, type SshServer } from "../test/support/sshServer.ts";
import { tempDir } from "../test/support/tmp.ts";

export const SSH_CLONE_TARGET = 0.5;
const REPO_MB = 30;
const ROUNDS = 3;

export interface SshCloneResult {
  repoBytes: number;
  directMs: number[];
  credgateMs: number[];
  ratio: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Asynchronous: this process's event loop reads sshd's and credgate's log pipes, which a spawnSync would stall. */
async function timedClone(url: string, dest: string, env: Record<string, string>): Promise<number> {
  rmSync(dest, { recursive: true, force: true });
  const started = performance.now();
  const proc = Bun.spawn(["git", "clone", "-q", "--bare", url, dest], { env: { ...process.env, ...env }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`git clone ${url} failed: ${stderr}`);
  return ms;
}

/**
 * The benches' repository on `sshd`: ~30 MB of random (incompressible) files in one commit, packed once, so that
 * every clone sends the pack as stored and the rows time the transport, not the packing.
 */
export function benchRepo(sshd: SshServer): { bare: string; repoBytes: number } {
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < REPO_MB; i++) files[`blob-${i}.bin`] = randomBytes(1024 * 1024);
  const bare = sshd.bareRepo("bench/big.git", files);
  execFileSync("git", ["-C", bare, "repack", "-adq"]);
  return { bare, repoBytes: Number(execFileSync("du", ["-sb", bare]).toString().split("\t")[0]) };
}

export async function runSshClone(log: (line: string) => void = () => {}): Promise<SshCloneResult> {
  const sshd = await startSshServer();
  const keys = tempDir("credgate-bench-ssh-");
  const key = newKeyPair(keys, "key");
  sshd.authorize(key.publicKey);
  const { repoBytes } = benchRepo(sshd);
  const cg = await startCredgate({ env: { CREDGATE_CONNECT_TO: `git.bench:22:127.0.0.1:${sshd.port}` } });
  try {
    const created = await cg.api("POST", "/v1/secrets", {
      body: { name: "bench-ssh", type: "generic", value: key.privateKey, hostPattern: "git.bench", injectionConfig: { ssh: { user: sshd.user, knownHosts: sshd.knownHostsLine("git.bench") } } },
    });
    if (created.status !== 201) throw new Error(`secret: ${created.status} ${created.text}`);
    const agentDir = tempDir("credgate-bench-agent-");
    const caLine = await (await fetch(`${cg.apiUrl}/v1/gateway/ssh-ca`)).text();
    const agent = sshFiles(agentDir, caLine, credgateCommand());
    for (const [f, text] of Object.entries(agent.files)) writeFileSync(f, text);
    const throughCredgate = { ...agent.env, HTTPS_PROXY: `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}` };
    const knownHosts = join(keys, "known_hosts");
    writeFileSync(knownHosts, `${sshd.knownHostsLine(`[127.0.0.1]:${sshd.port}`)}\n`);
    const direct = {
      GIT_SSH_COMMAND: `ssh -i ${join(keys, "key")} -o IdentitiesOnly=yes -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes -o BatchMode=yes -p ${sshd.port}`,
    };
    const out = join(keys, "clones");
    mkdirSync(out);
    // Warm-up of both paths (page cache, credgate's first connection and certificate).
    await timedClone(`${sshd.user}@127.0.0.1:bench/big.git`, join(out, "d"), direct);
    await timedClone(`${sshd.user}@git.bench:bench/big.git`, join(out, "c"), throughCredgate);
    const directMs: number[] = [];
    const credgateMs: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      directMs.push(await timedClone(`${sshd.user}@127.0.0.1:bench/big.git`, join(out, "d"), direct));
      credgateMs.push(await timedClone(`${sshd.user}@git.bench:bench/big.git`, join(out, "c"), throughCredgate));
      log(`ssh clone round ${i + 1}: direct ${directMs[i]!.toFixed(0)} ms, through credgate ${credgateMs[i]!.toFixed(0)} ms`);
    }
    return { repoBytes, directMs, credgateMs, ratio: median(directMs) / median(credgateMs) };
  } finally {
    await cg.stop();
    await sshd.stop();
  }
}

export function printSshClone(r: SshCloneResult): void {
  const mb = (r.repoBytes / 1e6).toFixed(1);
  const rate = (ms: number) => `${(r.repoBytes / 1e6 / (ms / 1000)).toFixed(1)} MB/s`;
  console.log("");
  console.log(`git clone over SSH (${mb} MB bare repository, OpenSSH's git, median of ${r.directMs.length} rounds taking turns)`);
  console.log(`  direct            ${median(r.directMs).toFixed(0).padStart(6)} ms  ${rate(median(r.directMs))}`);
  console.log(`  through credgate  ${median(r.credgateMs).toFixed(0).padStart(6)} ms  ${rate(median(r.credgateMs))}`);
  console.log(`  ratio ${r.ratio.toFixed(2)}× of direct (target >= ${SSH_CLONE_TARGET}) ${r.ratio >= SSH_CLONE_TARGET ? "PASS" : "MISS"}`);
}

if (import.meta.main) {
  const result = await runSshClone((l) => console.error(l));
  if (process.argv.includes("--json")) console.log(JSON.stringify(result, null, 2));
  else printSshClone(result);
  process.exit(0);
}
