// Free TCP ports for listeners that a test starts later, often in another process (credgate's --port).
//
// A port is taken from below the kernel's ephemeral range. Between the check here and the later bind, the
// kernel may give an ephemeral port to an outgoing connection (PostgreSQL pools, curl, fetch). Ports below the
// range are never handed out that way, so the later bind cannot collide with them. The same port is also never
// handed out twice by one test process. Test processes that run side by side (test/run.ts's two passes) each
// take ports from their own slice of the range (CREDGATE_TEST_PORT_SLICE="i/n"), so that two of them never pick
// the same free port between the check and the bind.
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

/** This process's slice of [10000, ephemeral low): the whole of it unless CREDGATE_TEST_PORT_SLICE says `i/n`. */
function portSlice(): [number, number] {
  const low = 10_000;
  const high = ephemeralLow() - 1;
  const m = /^(\d+)\/(\d+)$/.exec(process.env.CREDGATE_TEST_PORT_SLICE ?? "");
  if (!m || Number(m[1]) >= Number(m[2])) return [low, high];
  const [i, n] = [Number(m[1]), Number(m[2])];
  const size = Math.floor((high - low + 1) / n);
  return [low + i * size, low + (i + 1) * size - 1];
}

const [LOW, HIGH] = portSlice();

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
