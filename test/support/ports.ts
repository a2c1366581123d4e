// Free TCP ports for listeners that a test starts later, often in another process (credgate's --port).
//
// A port is taken from below the kernel's ephemeral range. Between the check here and the later bind, the
// kernel may give an ephemeral port to an outgoing connection (PostgreSQL pools, curl, fetch). Ports below the
// range are never handed out that way, so the later bind cannot collide with them. The same port is also never
// handed out twice by one test process.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

const handedOut = new Set<number>();

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 12_000) return low;
  } catch {}
  return 32_768;
}

const LOW = 10_000;
const HIGH = ephemeralLow() - 1;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    // 0.0.0.0 conflicts with a listener on any IPv4 address, loopback included.
    srv.listen(port, "0.0.0.0", () => srv.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port found between ${LOW} and ${HIGH}`);
}
