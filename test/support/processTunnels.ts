// Tunnels through a credgate with several gateway processes (docs/operations.md#gateway-workers-and-caches): a
// CONNECT tunnel with TLS inside and which process holds its gateway end (read with `ss`), so a test can spread
// requests over every process and show what they share.
import { expect } from "bun:test";
import { spawnSync } from "node:child_process";
import * as tls from "node:tls";
import { basic, openConnect, rawRequest, ResponseReader } from "./gateway.ts";

export interface ProcessTunnel {
  /** The gateway process holding the tunnel; null when `ss` could not tell. */
  pid: number | null;
  /** A GET on the tunnel: the status, the body's text, and the body parsed as JSON (null when it is none). */
  get(path: string, headers?: string[]): Promise<{ status: number; body: any; text: string }>;
  close(): void;
}

/** The pid of the process holding the gateway end (port `gatewayPort`) of the connection from the client port `clientPort`. */
export function servingPid(gatewayPort: number, clientPort: number): number | null {
  const r = spawnSync("ss", ["-Htnp", "state", "established", `( sport = :${gatewayPort} and dport = :${clientPort} )`], { encoding: "utf8" });
  const m = /pid=(\d+)/.exec(r.stdout);
  return m ? Number(m[1]) : null;
}

/** A CONNECT tunnel to `host:port` through the gateway as `token`, TLS inside checked against `ca` (the gateway CA). */
export async function openProcessTunnel(gatewayPort: number, token: string, ca: string, host: string, port: number): Promise<ProcessTunnel> {
  const t = await openConnect(gatewayPort, `${host}:${port}`, basic(token));
  expect(t.connect.status).toBe(200);
  const pid = servingPid(gatewayPort, t.socket.localPort!);
  const secure = tls.connect({ socket: t.socket, ca, servername: host, ALPNProtocols: ["http/1.1"] });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  secure.on("error", () => {});
  const reader = new ResponseReader(secure);
  return {
    pid,
    async get(path, headers = []) {
      secure.write(rawRequest("GET", path, `${host}:${port}`, headers));
      const res = await reader.response();
      let body: any = null;
      try {
        body = JSON.parse(res.text);
      } catch {}
      return { status: res.status, body, text: res.text };
    },
    close: () => secure.destroy(),
  };
}

/** Tunnels from `open` until each of `processes` gateway processes holds at least `each` (and `total` are open). */
export async function tunnelsOnEveryProcess(open: () => Promise<ProcessTunnel>, processes: number, each = 1, total = 0): Promise<ProcessTunnel[]> {
  const tunnels: ProcessTunnel[] = [];
  const perPid = new Map<number, number>();
  for (let i = 0; i < 200 && (tunnels.length < total || perPid.size < processes || [...perPid.values()].some((n) => n < each)); i++) {
    const t = await open();
    tunnels.push(t);
    if (t.pid !== null) perPid.set(t.pid, (perPid.get(t.pid) ?? 0) + 1);
  }
  expect(perPid.size).toBe(processes);
  return tunnels;
}

/** Rounds of one GET on every tunnel at once, each to `prefix` and a number not used before, every one expected to answer 200; `paths` lists the paths sent. */
export function roundsOnEveryTunnel(tunnels: ProcessTunnel[], prefix: string): { round(): Promise<void>; paths: string[] } {
  let n = 0;
  const paths: string[] = [];
  return {
    paths,
    async round() {
      const statuses = await Promise.all(
        tunnels.map((t) => {
          const path = `${prefix}${++n}`;
          paths.push(path);
          return t.get(path).then((r) => r.status);
        }),
      );
      expect(statuses.every((s) => s === 200)).toBe(true);
    },
  };
}
