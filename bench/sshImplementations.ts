// The SSH implementation, chosen by measurement (docs/ssh.md#the-ssh-implementation): one run, one sshd, one
// 30 MB repository (bench/sshClone.ts's), OpenSSH's git as the agent, five paths taking turns (each round starting one further):
//   direct       git → sshd, the key on the client's side;
//   credgate     git → `credgate tunnel` → credgate's gateway (CONNECT, SSH interception on ssh2) → sshd: as built;
//   credgate socat  the same with socat as ProxyCommand (the container form): no Bun process started per connection;
//   ssh2 relay   git → a minimal terminating relay on ssh2 → sshd (bench/sshRelaySpike.ts, no CONNECT, no checks);
//   dev-tunnels  git → the same relay on @microsoft/dev-tunnels-ssh → sshd.
// Per path: the clone's median time over ROUNDS rounds and its ratio to direct (1.0 = as fast), the added
// handshake latency (median `git ls-remote` time minus direct's: connection, key exchange, login, one exec, no
// data to speak of), and the relaying process's peak memory (VmHWM). dev-tunnels reads neither ed25519 keys nor
// OpenSSH-format private keys: the login key is ECDSA for every path, handed to dev-tunnels as PKCS#8, and the
// sshd has an ECDSA host key besides its ed25519 one.
// Run: `bun bench/sshImplementations.ts [--json]`.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sshFiles } from "../src/run/sshConfig.ts";
import { credgateCommand, startCredgate } from "../test/support/process.ts";
import { startSshServer } from "../test/support/sshServer.ts";
import { tempDir } from "../test/support/tmp.ts";
import { startServer } from "./procs.ts";
import { benchRepo } from "./sshClone.ts";

const ROUNDS = 7;
const HANDSHAKES = 9;
const GIT_TIMEOUT_MS = 60_000;
const PATHS = ["direct", "credgate", "credgate socat", "ssh2 relay", "dev-tunnels"] as const;
type PathName = (typeof PATHS)[number];

export interface SshImplementationRow {
  path: PathName;
  cloneMs: number[];
  /** direct's median clone time / this path's. */
  ratio: number;
  lsRemoteMs: number[];
  /** This path's median `git ls-remote` time minus direct's. */
  addedHandshakeMs: number;
  /** Clones and ls-remotes that failed or hung (not in the medians). */
  failures: number;
  /** Peak resident memory of the process that relays (credgate's whole process; null for direct). */
  peakRssMb: number | null;
  /** Resident memory before the first clone: credgate's with ssh2 not loaded yet, a relay's with its library loaded. */
  rssBeforeMb?: number;
}

export interface SshImplementationsResult {
  repoBytes: number;
  rows: SshImplementationRow[];
}

/** The paths in round `i`'s order: each round starts one further, so no path always follows the same one. */
const turn = (i: number): PathName[] => PATHS.map((_, j) => PATHS[(i + j) % PATHS.length]!);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function memoryMb(pid: number, field: "VmHWM" | "VmRSS"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) / 1024;
}

/**
 * The time of one git command; null when it failed or hung (killed after GIT_TIMEOUT_MS), counted per path. Run
 * asynchronously: sshd's and credgate's output pipes are read by this process's event loop, and a spawnSync
 * would stall them until sshd blocks on its full log pipe (the first runs hung that way).
 */
async function timedGit(path: string, args: string[], env: Record<string, string>, log: (line: string) => void): Promise<number | null> {
  const started = performance.now();
  const proc = Bun.spawn(["git", ...args], { env: { ...process.env, ...env }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), GIT_TIMEOUT_MS);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  const ms = performance.now() - started;
  if (code === 0) return ms;
  log(`${path}: git ${args[0]} failed (${proc.signalCode ?? `exit ${code}`}): ${stderr.trim()}`);
  return null;
}

export async function runSshImplementations(log: (line: string) => void = () => {}): Promise<SshImplementationsResult> {
  const sshd = await startSshServer({ ecdsaHostKey: true });
  const dir = tempDir("credgate-bench-sshimpl-");
  // One ECDSA login key: OpenSSH's format for OpenSSH, credgate and ssh2; a PKCS#8 copy for dev-tunnels.
  const key = join(dir, "key");
  execFileSync("ssh-keygen", ["-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "", "-f", key]);
  copyFileSync(key, `${key}.pkcs8`);
  execFileSync("ssh-keygen", ["-q", "-p", "-m", "PKCS8", "-P", "", "-N", "", "-f", `${key}.pkcs8`]);
  sshd.authorize(readFileSync(`${key}.pub`, "utf8"));
  const { repoBytes } = benchRepo(sshd);
  const cg = await startCredgate({ env: { CREDGATE_CONNECT_TO: `git.bench:22:127.0.0.1:${sshd.port}` } });
  const relays: Awaited<ReturnType<typeof startServer>>[] = [];
  try {
    const created = await cg.api("POST", "/v1/secrets", {
      body: { name: "bench-ssh", type: "generic", value: readFileSync(key, "utf8"), hostPattern: "git.bench", injectionConfig: { ssh: { user: sshd.user, knownHosts: sshd.knownHostsLine("git.bench") } } },
    });
    if (created.status !== 201) throw new Error(`secret: ${created.status} ${created.text}`);
    const rssBeforeMb = memoryMb(cg.proc.pid, "VmRSS");
    const agentDir = tempDir("credgate-bench-agent-");
    const caLine = await (await fetch(`${cg.apiUrl}/v1/gateway/ssh-ca`)).text();
    const agent = sshFiles(agentDir, caLine, credgateCommand());
    for (const [f, text] of Object.entries(agent.files)) writeFileSync(f, text);

    const sshWith = (knownHosts: string, extra: string) =>
      `ssh -i ${key} -o IdentitiesOnly=yes -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes -o BatchMode=yes ${extra}`;
    const directKnown = join(dir, "known_direct");
    writeFileSync(directKnown, `${sshd.knownHostsLine(`[127.0.0.1]:${sshd.port}`)}\n`);
    const before: Partial<Record<PathName, number>> = { credgate: rssBeforeMb, "credgate socat": rssBeforeMb };
    const paths: Record<PathName, { url: string; env: Record<string, string>; pid: number | null }> = {
      direct: { url: `${sshd.user}@127.0.0.1:bench/big.git`, env: { GIT_SSH_COMMAND: sshWith(directKnown, `-p ${sshd.port}`) }, pid: null },
      credgate: {
        url: `${sshd.user}@git.bench:bench/big.git`,
        env: { ...agent.env, HTTPS_PROXY: `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}` },
        pid: cg.proc.pid,
      },
      "credgate socat": {
        url: `${sshd.user}@git.bench:bench/big.git`,
        env: {
          GIT_SSH_COMMAND: `ssh -o UserKnownHostsFile=${join(agentDir, "known_hosts")} -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=none -o ProxyCommand="socat - PROXY:127.0.0.1:%h:%p,proxyport=${cg.gatewayPort},proxyauth=x:${cg.keys.defaultAgentToken}"`,
        },
        pid: cg.proc.pid,
      },
      "ssh2 relay": { url: "", env: {}, pid: null },
      "dev-tunnels": { url: "", env: {}, pid: null },
    };
    for (const [name, impl, keyFile, hostKind] of [
      ["ssh2 relay", "ssh2", key, "ed25519"],
      ["dev-tunnels", "devtunnels", `${key}.pkcs8`, "ecdsa"],
    ] as const) {
      const relay = await startServer("sshRelaySpike.ts", [impl, String(sshd.port), sshd.user, keyFile, sshd.knownHostsLine("x", hostKind)]);
      relays.push(relay);
      before[name] = memoryMb(relay.proc.pid, "VmRSS");
      const known = join(dir, `known_${impl}`);
      writeFileSync(known, `[127.0.0.1]:${relay.port} ${(relay.info as unknown as { hostKey: string }).hostKey}\n`);
      paths[name] = { url: `${sshd.user}@127.0.0.1:bench/big.git`, env: { GIT_SSH_COMMAND: sshWith(known, `-p ${relay.port}`) }, pid: relay.proc.pid };
    }

    const out = join(dir, "clones");
    mkdirSync(out);
    const clone = async (p: PathName) => {
      const dest = join(out, p.replace(/\W/g, "_"));
      rmSync(dest, { recursive: true, force: true });
      return timedGit(p, ["clone", "-q", "--bare", paths[p].url, dest], paths[p].env, log);
    };
    const lsRemote = (p: PathName) => timedGit(p, ["ls-remote", "-q", paths[p].url], paths[p].env, log);
    const failures = Object.fromEntries(PATHS.map((p) => [p, 0])) as Record<PathName, number>;
    const record = (into: number[], p: PathName, ms: number | null) => (ms === null ? failures[p]++ : into.push(ms));
    // Warm-up of every path (page cache, first connections, credgate's certificate, the relays' JIT).
    for (const p of PATHS) await clone(p);
    const cloneMs = Object.fromEntries(PATHS.map((p) => [p, [] as number[]])) as Record<PathName, number[]>;
    const lsMs = Object.fromEntries(PATHS.map((p) => [p, [] as number[]])) as Record<PathName, number[]>;
    for (let i = 0; i < ROUNDS; i++) {
      for (const p of turn(i)) record(cloneMs[p], p, await clone(p));
      log(`ssh implementations round ${i + 1}: ${PATHS.map((p) => `${p} ${cloneMs[p].at(-1)?.toFixed(0)} ms`).join(", ")}`);
    }
    for (let i = 0; i < HANDSHAKES; i++) for (const p of turn(i)) record(lsMs[p], p, await lsRemote(p));
    const rows = PATHS.map((p): SshImplementationRow => {
      const pid = paths[p].pid;
      return {
        path: p,
        cloneMs: cloneMs[p],
        ratio: median(cloneMs.direct) / median(cloneMs[p]),
        lsRemoteMs: lsMs[p],
        addedHandshakeMs: median(lsMs[p]) - median(lsMs.direct),
        failures: failures[p],
        peakRssMb: pid === null ? null : memoryMb(pid, "VmHWM"),
        ...(before[p] !== undefined ? { rssBeforeMb: before[p] } : {}),
      };
    });
    return { repoBytes, rows };
  } finally {
    for (const r of relays) await r.stop();
    await cg.stop();
    await sshd.stop();
  }
}

export function printSshImplementations(r: SshImplementationsResult): void {
  const mb = (r.repoBytes / 1e6).toFixed(1);
  console.log("");
  console.log(`SSH implementations: git clone of a ${mb} MB bare repository (median of ${r.rows[0]!.cloneMs.length}), git ls-remote (median of ${r.rows[0]!.lsRemoteMs.length})`);
  console.log("  path            clone ms   MB/s  ×direct  +handshake ms  failed  peak RSS MB");
  for (const row of r.rows) {
    const ms = median(row.cloneMs);
    const rss = row.peakRssMb === null ? "-" : `${row.peakRssMb.toFixed(0)}${row.rssBeforeMb !== undefined ? ` (${row.rssBeforeMb.toFixed(0)} before)` : ""}`;
    console.log(
      `  ${row.path.padEnd(14)} ${ms.toFixed(0).padStart(9)} ${(r.repoBytes / 1e6 / (ms / 1000)).toFixed(1).padStart(6)} ${row.ratio.toFixed(2).padStart(8)} ${row.addedHandshakeMs.toFixed(0).padStart(14)} ${String(row.failures).padStart(7)}  ${rss}`,
    );
  }
}

if (import.meta.main) {
  const result = await runSshImplementations((l) => console.error(l));
  if (process.argv.includes("--json")) console.log(JSON.stringify(result, null, 2));
  else printSshImplementations(result);
  process.exit(0);
}
