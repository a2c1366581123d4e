// The gateway's one port (docs/gateway.md#listener), on Bun's native sockets. It reads the first request head
// of each connection with the one strict parser (http1/head.ts). A CONNECT becomes a Tunnel and goes through
// the stages' connect hooks (auth → 407, egress guard → 403, passthrough decision, claim check); refused, it is
// answered raw; passed, it is opened: passthrough hosts get a raw pipe to the host, every other tunnel is
// intercepted — TLS terminated on the same socket (upgradeTLS, with a leaf for the host) or kept plain — and
// handed to an Http1AgentConnection, which reads HTTP/1.1 and runs the pipeline per request. Any other first head
// is handed, parsed, to an Http1AgentConnection as a proxy connection (absolute-form or origin-form control
// requests). No node stream sits on the path of an intercepted request: that layer cost more than the TLS.
import type { TCPSocketListener } from "bun";
import { randomUUID } from "node:crypto";
import * as net from "node:net";
import * as tls from "node:tls";
import type { ApiApp } from "../api/app.ts";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { REQUEST_ID_HEADER, requestIdFor } from "../observability/requestId.ts";
import type { Outbound } from "../services/outbound.ts";
import { Http1AgentConnection } from "./client/http1AgentConnection.ts";
import { H2AgentConnection } from "./h2/h2AgentConnection.ts";
import { DuplexAgentSocket, duplexOver } from "./client/duplexSocket.ts";
import { pipeRaw } from "./client/pipe.ts";
import { agentSocketHandlers, BunAgentSocket, type AgentSocket } from "./client/socket.ts";
import { headTooLarge, invalidConnectTarget, malformedRequest, rawAnswer, upstreamUnreachableAnswer } from "./errors.ts";
import { requestHandler } from "./handler.ts";
import { headerValue, MAX_HEAD_BYTES, parseAuthority, parseRequestHead, type RequestHead } from "./http1/head.ts";
import { IdleSweeper, type Idle } from "./idle.ts";
import type { MemoryKeeper } from "./memory.ts";
import type { Pipeline } from "./pipeline.ts";
import { answer, type ConnectVerdict } from "./stage.ts";
import type { LeafCache, LeafPem, SelfLeaf } from "./tls.ts";
import { Tunnel } from "./tunnel.ts";
import type { SshInterception } from "./ssh/session.ts";

const HEAD_TIMEOUT_MS = 30_000;
const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
const PASSTHROUGH_CONNECT_TIMEOUT_MS = 10_000;
const ESTABLISHED = "HTTP/1.1 200 Connection Established\r\n\r\n";

export interface ListenerDeps {
  pipeline: Pipeline;
  /** Dials passthrough tunnels. */
  outbound: Pick<Outbound, "connect">;
  leaves: LeafCache;
  /** The certificate of the proxy itself (HTTPS proxy, docs/gateway.md#listener). */
  selfLeaf: SelfLeaf;
  api: ApiApp;
  /** Hears of every request (full collections follow the load, memory.ts). */
  memory: MemoryKeeper;
  /** Idle limits of intercepted and passthrough tunnels (docs/gateway.md#tunnels). */
  tunnelIdleSeconds: number;
  passthroughIdleSeconds: number;
  /** Offer h2 inside intercepted tunnels (CREDGATE_GATEWAY_HTTP2, docs/gateway.md#http2-and-grpc). */
  http2: boolean;
  /** Terminates SSH to port 22 of hosts an `ssh` secret names (docs/ssh.md#how-it-works); absent: such tunnels are ordinary. */
  ssh?: SshInterception;
}

/**
 * ALPN inside intercepted tunnels, in the wire format Bun takes (docs/gateway.md#http2-and-grpc). `http/1.0` is
 * accepted too: a client that offers only it (curl --http1.0) would otherwise get a fatal TLS alert instead of an
 * answer, and the HTTP/1.x reader serves it.
 */
const ALPN_H2 = Buffer.from("\x02h2\x08http/1.1\x08http/1.0", "latin1");
const ALPN_H1 = Buffer.from("\x08http/1.1\x08http/1.0", "latin1");

/** What reads an agent's connection once it is known: HTTP/1.1 or HTTP/2 (both close when idle, or when the gateway stops). */
type AgentConnection = Idle & { closeWhenIdle(): void };

export type GatewaySharing = "alone" | "first" | "joining";

/** Whether the port is free for this process alone (gateway workers join it only after this). */
function probe(host: string, port: number): Promise<number> {
  const server = net.createServer();
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

export class GatewayListener {
  #server: TCPSocketListener<BunAgentSocket> | null = null;
  /** Every accepted socket until it closes (shutdown waits for them). */
  readonly #sockets = new Set<AgentSocket>();
  readonly #passthroughSockets = new Set<AgentSocket>();
  readonly #connections = new Set<AgentConnection>();
  /** (agent, host) pairs already warned about a failed MITM handshake: one line each, not one per attempt. */
  readonly #handshakeWarned = new Set<string>();
  readonly #idle: IdleSweeper;
  readonly #tunnelIdleMs: number;
  readonly #passthroughIdleMs: number;
  #stopping = false;

  constructor(private readonly deps: ListenerDeps) {
    this.#tunnelIdleMs = deps.tunnelIdleSeconds * 1000;
    this.#passthroughIdleMs = deps.passthroughIdleSeconds * 1000;
    this.#idle = new IdleSweeper(Math.min(this.#tunnelIdleMs, this.#passthroughIdleMs));
  }

  /**
   * `alone`: the port is this process's. `first`: gateway workers will join it (SO_REUSEPORT), but a port
   * already in use still fails, as alone. `joining`: a worker, on the port its primary holds.
   */
  async listen(host: string, port: number, sharing: GatewaySharing = "alone"): Promise<number> {
    if (sharing === "first") port = await probe(host, port);
    this.#server = Bun.listen<BunAgentSocket>({
      hostname: host,
      port,
      ...(sharing === "alone" ? { exclusive: true } : { reusePort: true }),
      socket: {
        ...agentSocketHandlers,
        open: (socket) => {
          socket.setNoDelay(true);
          this.#accept(BunAgentSocket.accepted(socket));
        },
      },
    });
    return this.#server.port;
  }

  /** Stops accepting; passthrough tunnels and idle connections close now, busy ones after their answer. */
  close(): void {
    this.#stopping = true;
    this.#server?.stop(false);
    this.#idle.stop();
    for (const s of this.#passthroughSockets) s.destroy();
    for (const c of this.#connections) c.closeWhenIdle();
  }

  /** Resolves once every client connection has closed (relayed answers flushed), or never; callers bound it. */
  settled(): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.#sockets.size === 0) resolve();
        else setTimeout(check, 20);
      };
      check();
    });
  }

  destroyAll(): void {
    for (const s of this.#sockets) s.destroy();
  }

  #accept(sock: BunAgentSocket): void {
    this.#sockets.add(sock);
    sock.onceClosed(() => this.#sockets.delete(sock));
    const timer = setTimeout(() => sock.destroy(), HEAD_TIMEOUT_MS);
    sock.onceClosed(() => clearTimeout(timer));
    sock.events = {
      data: (first) => {
        // The first byte says what the connection is: a TLS handshake is TLS to the proxy itself.
        if (first[0] === 0x16) void this.#secureFront(sock, first, timer);
        else this.#readHead(sock, first, timer);
      },
      drain() {},
      close() {},
    };
  }

  /** HTTPS proxy: TLS with the gateway's own leaf, then the same proxy protocol inside. */
  async #secureFront(sock: BunAgentSocket, hello: Buffer, timer: ReturnType<typeof setTimeout>): Promise<void> {
    sock.events = null;
    sock.pause();
    const leaf = await this.deps.selfLeaf.context();
    if (sock.closed) return;
    const secure = sock.upgradeTo(leaf, hello, agentSocketHandlers);
    this.#readHead(secure, null, timer);
    sock.resume();
  }

  /** Reads the connection's first request head (once, strictly) and hands the connection to what it asks for. */
  #readHead(sock: AgentSocket, first: Buffer | null, timer: ReturnType<typeof setTimeout>): void {
    let buf: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      // A head over the limit is refused whether or not its end has arrived yet: checked on the incomplete
      // buffer alone, a head that came whole in one read (or completed by its last read) passed at any size.
      if (end === -1 ? buf.length > MAX_HEAD_BYTES : end + 4 > MAX_HEAD_BYTES) {
        sock.end(rawAnswer(headTooLarge(), randomUUID()));
        return;
      }
      if (end === -1) return;
      sock.events = null;
      sock.pause();
      clearTimeout(timer);
      const head = parseRequestHead(buf, end);
      if (!head) {
        sock.end(rawAnswer(malformedRequest(), randomUUID()));
        return;
      }
      const rest = buf.subarray(end + 4);
      if (head.method === "CONNECT") void this.#connect(sock, head, rest);
      else this.#serve(sock, null).start(head, rest);
    };
    sock.events = { data: onData, drain() {}, close() {} };
    if (first) onData(first);
  }

  /** A CONNECT: the connect hooks decide; then the tunnel is refused, passed through or intercepted. */
  async #connect(sock: AgentSocket, head: RequestHead, early: Buffer): Promise<void> {
    const authority = parseAuthority(head.target);
    if (!authority) {
      sock.end(rawAnswer(invalidConnectTarget(head.target), requestIdFor(headerValue(head.headers, REQUEST_ID_HEADER))));
      return;
    }
    const tunnel = new Tunnel(head, authority, early);
    const pending = this.deps.pipeline.connect(tunnel);
    const verdict = pending instanceof Promise ? await pending : pending;
    // The agent went away while the hooks waited: there is nobody to answer.
    if (sock.closed) return;
    if (verdict.response !== null) return this.#refuse(sock, tunnel, verdict);
    if (tunnel.passthrough) return this.#passthrough(sock, tunnel);
    const sshKey = this.deps.ssh?.credentialFor(tunnel) ?? null;
    if (sshKey) return this.#interceptSsh(sock, tunnel, sshKey);
    return this.#intercept(sock, tunnel);
  }

  /** 200, then credgate is the SSH server inside the tunnel (closed at shutdown like a passthrough tunnel). */
  #interceptSsh(sock: AgentSocket, tunnel: Tunnel, key: NonNullable<ReturnType<SshInterception["credentialFor"]>>): void {
    sock.write(ESTABLISHED);
    this.deps.pipeline.connected(tunnel, 200);
    countTunnel(sock);
    this.#passthroughSockets.add(sock);
    sock.onceClosed(() => this.#passthroughSockets.delete(sock));
    this.deps.ssh!.serve(sock, tunnel, key, tunnel.early).catch((err: Error) => {
      log.error("ssh interception failed; the tunnel is closed", { host: tunnel.host, error: err.message });
      sock.destroy();
    });
  }

  /** The CONNECT is answered with the verdict's answer, and the connection closed. */
  #refuse(sock: AgentSocket, tunnel: Tunnel, verdict: ConnectVerdict): void {
    const response = verdict.response!;
    sock.end(rawAnswer(response, tunnel.requestId));
    this.deps.pipeline.connected(tunnel, response.status, verdict);
  }

  /** 200, then TLS with a leaf for the host when the agent's first byte is a handshake, else plain HTTP. */
  async #intercept(sock: AgentSocket, tunnel: Tunnel): Promise<void> {
    sock.write(ESTABLISHED);
    this.deps.pipeline.connected(tunnel, 200);
    countTunnel(sock);
    const first = tunnel.early.length > 0 ? tunnel.early : await this.#firstChunk(sock);
    if (!first) return;
    if (first[0] !== 0x16) {
      const connection = this.#serve(sock, { tunnel, scheme: "http" });
      this.#watchIdle(sock, connection);
      connection.feed(first);
      sock.resume();
      return;
    }
    const leaf = await this.deps.leaves.get(tunnel.host);
    if (sock.closed) return;
    // What reads the tunnel is known once ALPN has chosen (TLS data only comes after the handshake).
    const client = this.#terminateTls(sock, leaf, first, tunnel, (alpn) => {
      const connection = alpn === "h2" && this.deps.http2 ? this.#serveH2(client, tunnel) : this.#serve(client, { tunnel, scheme: "https" });
      this.#watchIdle(client, connection);
    });
    sock.resume();
  }

  #watchIdle(client: AgentSocket, connection: Idle): void {
    const watched = this.#idle.watch(connection, this.#tunnelIdleMs);
    client.onceClosed(() => this.#idle.forget(watched));
  }

  /** The first bytes inside a tunnel (they say whether it is TLS); null when the agent went away, or stayed silent too long. */
  #firstChunk(sock: AgentSocket): Promise<Buffer | null> {
    return new Promise((resolve) => {
      const waiting: Idle = {
        active: false,
        busy: false,
        closeIdle: () => sock.destroy(),
      };
      const watched = this.#idle.watch(waiting, this.#tunnelIdleMs);
      sock.events = {
        data: (chunk) => {
          this.#idle.forget(watched);
          sock.events = null;
          sock.pause();
          resolve(chunk);
        },
        drain() {},
        close: () => {
          this.#idle.forget(watched);
          resolve(null);
        },
      };
      sock.resume();
    });
  }

  /**
   * TLS with the leaf for the CONNECT host, on the tunnel's socket; `hello` is the agent's ClientHello. `ready`
   * hears the protocol ALPN selected once the handshake is done (h2 offered first unless CREDGATE_GATEWAY_HTTP2=off).
   */
  #terminateTls(sock: AgentSocket, leaf: LeafPem, hello: Buffer, tunnel: Tunnel, ready: (alpn: string | null) => void): AgentSocket {
    let secure: AgentSocket;
    let handshaken: () => boolean;
    if (sock instanceof BunAgentSocket && !sock.tls) {
      const upgraded = sock.upgradeTo({ ...leaf, ALPNProtocols: this.deps.http2 ? ALPN_H2 : ALPN_H1 }, hello, agentSocketHandlers);
      upgraded.onHandshake = ready;
      handshaken = () => upgraded.handshaken;
      secure = upgraded;
    } else {
      // TLS inside the HTTPS proxy's TLS: Bun terminates one layer per socket, node:tls does the inner one.
      const ALPNProtocols = this.deps.http2 ? ["h2", "http/1.1", "http/1.0"] : ["http/1.1", "http/1.0"];
      const stream = new tls.TLSSocket(duplexOver(sock, hello), { isServer: true, secureContext: tls.createSecureContext(leaf), ALPNProtocols });
      let done = false;
      stream.once("secure", () => {
        done = true;
        ready(stream.alpnProtocol || null);
      });
      handshaken = () => done;
      secure = new DuplexAgentSocket(stream);
    }
    const timer = setTimeout(() => {
      if (!handshaken()) secure.destroy();
    }, TLS_HANDSHAKE_TIMEOUT_MS);
    secure.onceClosed(() => {
      clearTimeout(timer);
      if (!handshaken()) this.#warnHandshakeFailed(tunnel);
      sock.destroy();
    });
    return secure;
  }

  /**
   * The agent's client gave up on the TLS handshake with the MITM leaf: almost always because it does not
   * trust the gateway CA (the client's alert does not reach us, so that is the likely cause, said as such).
   */
  #warnHandshakeFailed(tunnel: Tunnel): void {
    const agent = tunnel.agent;
    const key = `${agent.id}|${tunnel.host}`;
    if (this.#handshakeWarned.has(key)) return;
    if (this.#handshakeWarned.size >= 10_000) this.#handshakeWarned.clear();
    this.#handshakeWarned.add(key);
    log.warn("an agent's client did not complete the TLS handshake with the gateway; it probably does not trust the gateway CA", {
      agentId: agent.id,
      agent: agent.identifier,
      host: tunnel.host,
      hint: "install the gateway CA (GET /v1/gateway/ca) in the agent's trust store; credgate run and /v1/container-config set it up",
    });
  }

  /** Hands a client socket to an Http1AgentConnection that reads its requests. */
  #serve(client: AgentSocket, tunnel: { tunnel: Tunnel; scheme: "https" | "http" } | null): Http1AgentConnection {
    const handler = requestHandler(this.deps.pipeline, this.deps.api, tunnel);
    const memory = this.deps.memory;
    const connection = new Http1AgentConnection(client, (request) => {
      memory.noteRequest();
      return handler(request);
    });
    this.#connections.add(connection);
    client.onceClosed(() => this.#connections.delete(connection));
    if (this.#stopping) connection.closeWhenIdle();
    client.resume();
    return connection;
  }

  /** An HTTP/2 connection inside a tunnel (ALPN h2): each stream runs the pipeline like an HTTP/1.1 request. */
  #serveH2(client: AgentSocket, tunnel: Tunnel): H2AgentConnection {
    const handler = requestHandler(this.deps.pipeline, this.deps.api, { tunnel, scheme: "https" });
    const memory = this.deps.memory;
    const connection = new H2AgentConnection(client, (request) => {
      memory.noteRequest();
      return handler(request);
    });
    this.#connections.add(connection);
    client.onceClosed(() => this.#connections.delete(connection));
    if (this.#stopping) connection.closeWhenIdle();
    client.resume();
    return connection;
  }

  /** A raw pipe to the host the egress guard judged, once the CONNECT is answered 200; 502 when it cannot be dialled. */
  async #passthrough(sock: AgentSocket, tunnel: Tunnel): Promise<void> {
    const { host, port } = tunnel;
    const verdict = tunnel.egress;
    if (verdict === null || verdict.kind !== "dial") {
      const reason = verdict?.kind === "unresolved" ? verdict.reason : "no egress verdict";
      return this.#refuse(sock, tunnel, answer("error", upstreamUnreachableAnswer(host, port, reason)));
    }
    let upstream: net.Socket;
    try {
      upstream = await this.deps.outbound.connect(host, port, { tls: false, timeoutMs: PASSTHROUGH_CONNECT_TIMEOUT_MS, target: verdict.target });
    } catch (err) {
      return this.#refuse(sock, tunnel, answer("error", upstreamUnreachableAnswer(host, port, (err as Error).message)));
    }
    this.deps.pipeline.connected(tunnel, 200);
    // The agent went away during the dial: nothing to pipe.
    if (sock.closed) return void upstream.destroy();
    countTunnel(sock);
    this.#passthroughSockets.add(sock);
    sock.write(ESTABLISHED);
    if (tunnel.early.length > 0) upstream.write(tunnel.early);
    // Destroying the upstream closes the pipe both ways.
    const idle: Idle = { active: false, busy: false, closeIdle: () => upstream.destroy() };
    const watched = this.#idle.watch(idle, this.#passthroughIdleMs);
    pipeRaw(
      sock,
      upstream,
      () => {
        this.#passthroughSockets.delete(sock);
        this.#idle.forget(watched);
      },
      idle,
    );
  }
}

/** An open CONNECT tunnel, intercepted or passthrough, until its socket closes. */
function countTunnel(sock: AgentSocket): void {
  metrics.openTunnels.inc();
  sock.onceClosed(() => metrics.openTunnels.dec());
}
