// Opening a tunnel through the upstream proxy (docs/operations.md#upstream-proxy): a TCP connection to the proxy,
// then the handshake of core/upstreamProxy.ts. Two drivers, one per socket kind: Bun's native sockets (the
// gateway's pooled upstream connections, upgraded to TLS in place with `upgradeTLS`) and node:net sockets
// (WebSocket upgrades, passthrough tunnels, fetch() through the proxy). Both reject with a reason a person can read.
import type { Socket } from "bun";
import * as net from "node:net";
import { proxyHandshake, type HandshakeStep, type ProxyHandshake, type UpstreamProxy } from "../core/upstreamProxy.ts";

interface Pending {
  handshake: ProxyHandshake;
  settle(err: string | null, socket?: Socket<Pending>): void;
  /** The tunnel belongs to its user now: this driver hears nothing more (a TLS layer's raw bytes included). */
  handedOver: boolean;
}

/** The step's outcome: an error message, the bytes after the proxy's last answer once the tunnel is open, or undefined to go on. */
function outcome(step: HandshakeStep, write: (b: Uint8Array) => void): string | Uint8Array | undefined {
  if ("failed" in step) return step.failed;
  if (step.send) write(step.send);
  return step.done ? step.rest : undefined;
}

const unreachable = (err: string) => `the upstream proxy could not be reached (${err})`;

/** Handlers shared by every tunnel on Bun sockets: the state is the socket's data (no closure per connection). */
const BUN_HANDLERS = {
  open(socket: Socket<Pending>) {
    socket.setNoDelay(true);
    socket.write(socket.data.handshake.start());
  },
  data(socket: Socket<Pending>, buf: Buffer) {
    const p = socket.data;
    if (p.handedOver) return;
    const result = outcome(p.handshake.feed(buf), (b) => socket.write(b));
    if (result === undefined) return;
    // An HTTP upstream never speaks before the request: bytes here mean the stream is out of step.
    if (typeof result !== "string" && result.length > 0) return p.settle("the upstream proxy sent bytes before the tunnel was used", socket);
    if (typeof result !== "string") p.handedOver = true;
    p.settle(typeof result === "string" ? result : null, socket);
  },
  close(socket: Socket<Pending>) {
    if (!socket.data.handedOver) socket.data.settle("the upstream proxy closed the connection during the handshake");
  },
  error(socket: Socket<Pending>, err: Error) {
    if (!socket.data.handedOver) socket.data.settle(err.message);
  },
  connectError(socket: Socket<Pending>, err: Error) {
    socket.data.settle(unreachable((err as NodeJS.ErrnoException).code ?? err.message));
  },
};

/**
 * A tunnel to `address:port` through the proxy (dialled at `proxyAddress`) on a Bun socket. The caller takes it
 * over with `upgradeTLS` (this driver then ignores the raw bytes) or `reload`.
 */
export function tunnelOnBunSocket(proxy: UpstreamProxy, proxyAddress: string, address: string, port: number, timeoutMs: number): Promise<Socket<unknown>> {
  return new Promise((resolve, reject) => {
    let socket: Socket<Pending> | null = null;
    let settled = false;
    const pending: Pending = {
      handshake: proxyHandshake(proxy, address, port),
      handedOver: false,
      settle(err, from) {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket ??= from ?? null;
        if (err === null) return resolve(socket as Socket<unknown>);
        pending.handedOver = true;
        socket?.end();
        reject(new Error(err));
      },
    };
    const timer = setTimeout(() => pending.settle(`the upstream proxy did not open the tunnel within ${timeoutMs / 1000} s`), timeoutMs);
    Bun.connect<Pending>({ hostname: proxyAddress, port: proxy.port, data: pending, socket: BUN_HANDLERS }).then(
      (s) => {
        socket = s;
        if (settled) s.end();
      },
      (err: NodeJS.ErrnoException) => pending.settle(unreachable(err.code ?? err.message)),
    );
  });
}

/**
 * The same on a node:net socket, resolved once the tunnel is open, in the state of a fresh socket: read in paused
 * mode during the handshake, so that whatever the destination sent with the proxy's answer (a server that speaks
 * first) is put back and flows to the caller's first `data` listener.
 */
export function tunnelOnNodeSocket(proxy: UpstreamProxy, proxyAddress: string, address: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const handshake = proxyHandshake(proxy, address, port);
    const sock = net.connect({ host: proxyAddress, port: proxy.port });
    let connected = false;
    let done = false;
    const finish = (result: string | Uint8Array) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.off("readable", onReadable);
      sock.off("error", onError);
      sock.off("close", onClose);
      if (typeof result === "string") {
        sock.destroy();
        return reject(new Error(result));
      }
      if (result.length > 0) sock.unshift(Buffer.from(result));
      resolve(sock);
    };
    const onReadable = () => {
      for (let buf: Buffer | null; !done && (buf = sock.read() as Buffer | null) !== null; ) {
        const result = outcome(handshake.feed(buf), (b) => sock.write(b));
        if (result !== undefined) finish(result);
      }
    };
    const onError = (err: NodeJS.ErrnoException) => finish(connected ? err.message : unreachable(err.code ?? err.message));
    const onClose = () => finish("the upstream proxy closed the connection during the handshake");
    const timer = setTimeout(() => finish(`the upstream proxy did not open the tunnel within ${timeoutMs / 1000} s`), timeoutMs);
    sock.setNoDelay(true);
    sock.once("connect", () => {
      connected = true;
      sock.write(handshake.start());
    });
    sock.on("readable", onReadable);
    sock.on("error", onError);
    sock.on("close", onClose);
  });
}
