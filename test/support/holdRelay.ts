// A TCP relay in front of a credgate instance's PostgreSQL that can hold back the server's answers: armed with a
// marker, the first statement whose text contains it (a Parse message, or a simple Query) has everything the
// server answers from its execution on kept back, until the test releases it. So a test can have a statement run
// at the server now and its client hear the result later — the moment a race needs stretched — without touching
// the client. It reads the client's side of the PostgreSQL protocol just far enough to see its messages:
// untyped startup messages first (SSLRequest, StartupMessage), then type byte + length + payload. Loopback only.
import * as net from "node:net";

export interface HoldRelay {
  port: number;
  /**
   * Arms the relay: the next statement containing `marker` is held from its execution on (the Execute, or the
   * simple Query, that runs it); the promise resolves once those bytes have gone on to the server.
   */
  holdAfter(marker: string): Promise<void>;
  /** Sends what was held and forwards everything from then on. */
  release(): void;
  close(): void;
}

interface Pair {
  client: net.Socket;
  held: Buffer[] | null;
  /** Client bytes not yet a whole message. */
  pending: Buffer;
  /** Past the startup messages (which carry no type byte). */
  started: boolean;
  /** The marked statement was parsed on this connection: its Execute starts the hold. */
  marked: boolean;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Reads the whole messages in `pair.pending`; true when one of them runs the marked statement. */
function runsMarked(pair: Pair, marker: string | null): boolean {
  let buf = pair.pending;
  let runs = false;
  for (;;) {
    if (!pair.started) {
      if (buf.length < 8) break;
      const len = buf.readUInt32BE(0);
      if (buf.length < len) break;
      const code = buf.readUInt32BE(4);
      if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) pair.started = true;
      buf = buf.subarray(len);
      continue;
    }
    if (buf.length < 5) break;
    const len = buf.readUInt32BE(1);
    if (buf.length < 1 + len) break;
    const type = String.fromCharCode(buf[0]!);
    if (marker !== null && (type === "P" || type === "Q") && buf.subarray(5, 1 + len).toString("latin1").includes(marker)) pair.marked = true;
    if (pair.marked && (type === "E" || type === "Q")) runs = true;
    buf = buf.subarray(1 + len);
  }
  pair.pending = Buffer.from(buf);
  return runs;
}

export async function startHoldRelay(targetPort: number): Promise<HoldRelay> {
  const pairs = new Set<Pair>();
  let armed: { marker: string; hit: () => void } | null = null;
  const server = net.createServer((client) => {
    const pair: Pair = { client, held: null, pending: Buffer.alloc(0), started: false, marked: false };
    pairs.add(pair);
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    client.on("data", (d: Buffer) => {
      // Every connection's messages are followed from its first byte, so their boundaries are known once armed.
      const a = armed;
      pair.pending = pair.pending.length === 0 ? d : Buffer.concat([pair.pending, d]);
      if (!runsMarked(pair, a?.marker ?? null) || a === null) return void upstream.write(d);
      armed = null;
      for (const p of pairs) p.marked = false;
      pair.held = [];
      upstream.write(d, () => a.hit());
    });
    upstream.on("data", (d: Buffer) => {
      if (pair.held !== null) pair.held.push(d);
      else client.write(d);
    });
    const gone = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", gone);
    upstream.on("close", gone);
    client.on("error", gone);
    upstream.on("error", gone);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    holdAfter: (marker) => new Promise<void>((hit) => (armed = { marker, hit })),
    release() {
      for (const pair of pairs) {
        const held = pair.held;
        pair.held = null;
        if (held !== null) for (const d of held) pair.client.write(d);
      }
    },
    close() {
      server.close();
      for (const pair of pairs) pair.client.destroy();
    },
  };
}
