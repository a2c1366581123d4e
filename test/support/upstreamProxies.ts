// Real forward proxies for the upstream-proxy tests (docs/operations.md#upstream-proxy): tinyproxy (HTTP CONNECT
// with Basic auth) and microsocks (SOCKS5 with user/password), the Debian packages, started on loopback with a
// configuration of the test's own. Each records what it was asked: tinyproxy in its log file ("Request (file
// descriptor N): CONNECT host:port HTTP/1.1"), microsocks on its stdout ("client[N] ip: connected to host:port").
import { spawn, type Subprocess } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { tempDir } from "./tmp.ts";

export interface TestProxy {
  port: number;
  /** The `host:port` targets the proxy was asked to connect to, in order. */
  targets(): string[];
  /** Everything the proxy wrote. */
  output(): string;
  stop(): Promise<void>;
}

async function listening(port: number, proc: Subprocess, what: string, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}: ${output()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port}: ${output()}`);
    await Bun.sleep(50);
  }
}

/** tinyproxy on 127.0.0.1 allowing only loopback clients, with Basic auth and CONNECT to `connectPorts` only. */
export async function startTinyproxy(opts: { user: string; password: string; connectPorts: number[] }): Promise<TestProxy> {
  const dir = tempDir("credgate-tinyproxy-");
  const port = await freePort();
  const logFile = join(dir, "tinyproxy.log");
  writeFileSync(logFile, "");
  const conf = [
    `Port ${port}`,
    "Listen 127.0.0.1",
    "Timeout 60",
    "LogLevel Connect",
    `LogFile "${logFile}"`,
    `PidFile "${join(dir, "tinyproxy.pid")}"`,
    "MaxClients 100",
    "Allow 127.0.0.1",
    `BasicAuth ${opts.user} ${opts.password}`,
    ...opts.connectPorts.map((p) => `ConnectPort ${p}`),
  ].join("\n");
  writeFileSync(join(dir, "tinyproxy.conf"), `${conf}\n`);
  let out = "";
  const proc = spawn(["tinyproxy", "-d", "-c", join(dir, "tinyproxy.conf")], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  for (const stream of [proc.stdout, proc.stderr]) void (async () => { for await (const c of stream) out += new TextDecoder().decode(c); })();
  const log = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  await listening(port, proc, "tinyproxy", () => out + log());
  return {
    port,
    targets: () => [...log().matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((m) => m[1]!),
    output: () => out + log(),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** microsocks on 127.0.0.1 with user/password authentication. */
export async function startMicrosocks(opts: { user: string; password: string }): Promise<TestProxy> {
  const port = await freePort();
  let out = "";
  const proc = spawn(["microsocks", "-i", "127.0.0.1", "-p", String(port), "-u", opts.user, "-P", opts.password], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  for (const stream of [proc.stdout, proc.stderr]) void (async () => { for await (const c of stream) out += new TextDecoder().decode(c); })();
  await listening(port, proc, "microsocks", () => out);
  return {
    port,
    targets: () => [...out.matchAll(/connected to (\S+)/g)].map((m) => m[1]!),
    output: () => out,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
