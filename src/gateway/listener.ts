// The gateway's one port (CONTRACT §6.1–6.3), on Bun's native sockets. It reads the first request head of
// each connection: CONNECT is authenticated here (407 before anything else), then the tunnel is
// TLS-terminated on the same socket (upgradeTLS, with a leaf for the CONNECT host) or kept plain, and handed
// to a ClientConnection, which reads HTTP/1.1 and runs the pipeline per request. Other connections go to one
// too, as proxy connections (absolute-form or origin-form control requests). Passthrough hosts get a raw
// tunnel. No node stream sits on the path of an intercepted request: that layer cost more than the TLS.
import type { TCPSocketListener } from "bun";
import * as net from "node:net";
import * as tls from "node:tls";
import { compileHostPattern, normalizeHost } from "../core/patterns.ts";
import type { ApiApp } from "../api/app.ts";
import type { Services } from "../services/index.ts";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import { randomUUID } from "node:crypto";
import { REQUEST_ID_HEADER, requestIdFor } from "../observability/requestId.ts";
import { claimRequiredBody, isLlmRequest } from "./claim.ts";
import { ClientConnection } from "./client/agentConnection.ts";
import { DuplexAgentSocket, duplexOver } from "./client/duplexSocket.ts";
import { pipeRaw } from "./client/pipe.ts";
import { agentSocketHandlers, BunAgentSocket, type AgentSocket } from "./client/socket.ts";
import type { GatewayContext } from "./context.ts";
import type { EgressVerdict } from "./egressGuard.ts";
import { egressDeniedAnswer, headTooLarge, invalidConnectTarget, malformedRequest, PROXY_AUTH_REQUIRED, rawAnswer, upstreamUnreachableAnswer } from "./errors.ts";
import { requestHandler, type Tunnel } from "./handler.ts";
import { writeLog } from "./requestLog.ts";
import { logHostOf } from "./request.ts";
import { proxyToken } from "./proxyAuth.ts";
import type { AgentEntry, GatewaySnapshot } from "./snapshot.ts";
import type { MemoryKeeper } from "./memory.ts";
import type { LeafCache, LeafPem, SelfLeaf } from "./tls.ts";

const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_TIMEOUT_MS = 30_000;
const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
const TUNNEL_IDLE_MS = 600_000;

export interface ListenerDeps {
  services: Services;
  snapshot: GatewaySnapshot;
  leaves: LeafCache;
  /** The certificate of the proxy itself (HTTPS proxy, §6.18). */
  selfLeaf: SelfLeaf;
  context: GatewayContext;
  api: ApiApp;
  /** Hears of every request (full collections follow the load, memory.ts). */
  memory: MemoryKeeper;
}

interface Head {
  method: string;
  target: string;
  headers: Map<string, string>;
  /** Bytes of the head itself, and whatever arrived after it. */
  raw: Buffer;
  rest: Buffer;
}

function parseHead(buf: Buffer, end: number): Head | null {
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0] ?? "");
  if (!m) return null;
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { method: m[1]!, target: m[2]!, headers, raw: buf.subarray(0, end + 4), rest: buf.subarray(end + 4) };
}

/** `host:port` of a CONNECT target (IPv6 in brackets); null when malformed. */
export function parseAuthority(target: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+)(?::(\d{1,5}))?$/.exec(target);
  if (!m) return null;
  const port = m[2] ? Number(m[2]) : 443;
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!, port };
}

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
  readonly #connections = new Set<ClientConnection>();
  /** (agent, host) pairs already warned about a failed MITM handshake: one line each, not one per attempt. */
  readonly #handshakeWarned = new Set<string>();
  #stopping = false;
  readonly #passthrough: ((host: string) => boolean)[];

  constructor(private readonly deps: ListenerDeps) {
    this.#passthrough = deps.services.deps.config.passthroughHosts.map(compileHostPattern);
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
        // The first byte says what the connection is: a TLS handshake is TLS to the proxy itself (§6.18).
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

  /** Reads the connection's first request head and hands the connection to what it asks for. */
  #readHead(sock: AgentSocket, first: Buffer | null, timer: ReturnType<typeof setTimeout>): void {
    let buf: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) {
        if (buf.length > MAX_HEAD_BYTES) sock.end(rawAnswer(headTooLarge(), randomUUID()));
        return;
      }
      sock.events = null;
      sock.pause();
      clearTimeout(timer);
      const head = parseHead(buf, end);
      if (!head) {
        sock.end(rawAnswer(malformedRequest(), randomUUID()));
        return;
      }
      if (head.method === "CONNECT") void this.#connect(sock, head);
      else this.#serve(sock, null, buf);
    };
    sock.events = { data: onData, drain() {}, close() {} };
    if (first) onData(first);
  }

  async #connect(sock: AgentSocket, head: Head): Promise<void> {
    const requestId = requestIdFor(head.headers.get(REQUEST_ID_HEADER));
    const token = proxyToken(head.headers.get("proxy-authorization"));
    let agent: AgentEntry | null;
    try {
      agent = token ? await this.deps.snapshot.agentForToken(token) : null;
    } catch {
      agent = null;
    }
    if (!token || !agent) {
      sock.end(rawAnswer(PROXY_AUTH_REQUIRED, requestId));
      return;
    }
    const authority = parseAuthority(head.target);
    if (!authority) {
      sock.end(rawAnswer(invalidConnectTarget(head.target), requestId));
      return;
    }
    const host = normalizeHost(authority.host);
    // The egress guard answers before the tunnel opens (§6.17); in-tunnel requests are checked again.
    const verdict = await this.deps.context.egress.check(host, authority.port);
    const logHost = logHostOf("https", host, authority.port);
    if (verdict.kind === "denied") {
      writeLog(this.deps.services, { agent, method: "CONNECT", host: logHost, path: "", status: 403, started: performance.now(), injectionCount: 0, decision: "blocked", requestId });
      sock.end(rawAnswer(egressDeniedAnswer(host, verdict.address), requestId));
      return;
    }
    if (this.#passthrough.some((match) => match(host))) {
      // A raw tunnel carries anything: an unclaimed organization's is refused unless it goes to an LLM (§6.12).
      const credentials = await this.deps.snapshot.credentials(agent);
      if (credentials.claim && !isLlmRequest(host, null, credentials.injectable)) {
        writeLog(this.deps.services, { agent, method: "CONNECT", host: logHost, path: "", status: 403, started: performance.now(), injectionCount: 0, decision: "claim_required", requestId });
        sock.end(rawAnswer({ status: 403, body: claimRequiredBody(credentials.claim) }, requestId));
        return;
      }
      await this.#passthroughTunnel(sock, head, agent, host, authority.port, verdict, requestId);
      return;
    }
    sock.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    countTunnel(sock);
    const first = head.rest.length > 0 ? head.rest : await firstChunk(sock);
    if (!first) return;
    const scheme = first[0] === 0x16 ? "https" : "http";
    let client: AgentSocket = sock;
    if (scheme === "https") {
      const leaf = await this.deps.leaves.get(host);
      if (sock.closed) return;
      client = this.#terminateTls(sock, leaf, first, agent, host);
    }
    const defaultPort = scheme === "https" ? 443 : 80;
    const bracketed = net.isIPv6(host) ? `[${host}]` : host;
    this.#serve(
      client,
      { scheme, host, port: authority.port, authority: authority.port === defaultPort ? bracketed : `${bracketed}:${authority.port}`, token },
      scheme === "https" ? null : first,
    );
    sock.resume();
  }

  /** TLS with the leaf for the CONNECT host, on the tunnel's socket; `hello` is the agent's ClientHello. */
  #terminateTls(sock: AgentSocket, leaf: LeafPem, hello: Buffer, agent: AgentEntry, host: string): AgentSocket {
    let secure: AgentSocket;
    let handshaken: () => boolean;
    if (sock instanceof BunAgentSocket && !sock.tls) {
      const upgraded = sock.upgradeTo(leaf, hello, agentSocketHandlers);
      handshaken = () => upgraded.handshaken;
      secure = upgraded;
    } else {
      // TLS inside the HTTPS proxy's TLS: Bun terminates one layer per socket, node:tls does the inner one.
      const stream = new tls.TLSSocket(duplexOver(sock, hello), { isServer: true, secureContext: tls.createSecureContext(leaf), ALPNProtocols: ["http/1.1"] });
      let done = false;
      stream.once("secure", () => (done = true));
      handshaken = () => done;
      secure = new DuplexAgentSocket(stream);
    }
    const timer = setTimeout(() => {
      if (!handshaken()) secure.destroy();
    }, TLS_HANDSHAKE_TIMEOUT_MS);
    secure.onceClosed(() => {
      clearTimeout(timer);
      if (!handshaken()) this.#warnHandshakeFailed(agent, host);
      sock.destroy();
    });
    return secure;
  }

  /**
   * The agent's client gave up on the TLS handshake with the MITM leaf: almost always because it does not
   * trust the gateway CA (the client's alert does not reach us, so that is the likely cause, said as such).
   */
  #warnHandshakeFailed(agent: AgentEntry, host: string): void {
    const key = `${agent.id}|${host}`;
    if (this.#handshakeWarned.has(key)) return;
    if (this.#handshakeWarned.size >= 10_000) this.#handshakeWarned.clear();
    this.#handshakeWarned.add(key);
    log.warn("an agent's client did not complete the TLS handshake with the gateway; it probably does not trust the gateway CA", {
      agentId: agent.id,
      agent: agent.identifier,
      host,
      hint: "install the gateway CA (GET /v1/gateway/ca) in the agent's trust store; credgate run and /v1/container-config set it up",
    });
  }

  /** Hands a client socket to a ClientConnection that reads its requests. */
  #serve(client: AgentSocket, tunnel: Tunnel | null, initial: Buffer | null): void {
    const handler = requestHandler(this.deps.context, this.deps.api, tunnel);
    const memory = this.deps.memory;
    const connection = new ClientConnection(client, (request, c) => {
      memory.noteRequest();
      return handler(request, c);
    });
    this.#connections.add(connection);
    client.onceClosed(() => this.#connections.delete(connection));
    if (this.#stopping) connection.closeWhenIdle();
    if (initial) connection.feed(initial);
    client.resume();
  }

  async #passthroughTunnel(sock: AgentSocket, head: Head, agent: AgentEntry, host: string, port: number, verdict: EgressVerdict, requestId: string): Promise<void> {
    const started = performance.now();
    const logHost = logHostOf("https", host, port);
    if (verdict.kind !== "dial") {
      writeLog(this.deps.services, { agent, method: "CONNECT", host: logHost, path: "", status: 502, started, injectionCount: 0, decision: "error", requestId });
      sock.end(rawAnswer(upstreamUnreachableAnswer(host, port, verdict.reason), requestId));
      return;
    }
    let upstream: net.Socket;
    try {
      upstream = await this.deps.services.outbound.connect(host, port, { tls: false, timeoutMs: 10_000, target: verdict.target });
    } catch (err) {
      writeLog(this.deps.services, { agent, method: "CONNECT", host: logHost, path: "", status: 502, started, injectionCount: 0, decision: "error", requestId });
      sock.end(rawAnswer(upstreamUnreachableAnswer(host, port, (err as Error).message), requestId));
      return;
    }
    writeLog(this.deps.services, { agent, method: "CONNECT", host: logHost, path: "", status: 200, started, injectionCount: 0, decision: "allowed", requestId });
    countTunnel(sock);
    this.#passthroughSockets.add(sock);
    sock.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.rest.length > 0) upstream.write(head.rest);
    upstream.setTimeout(TUNNEL_IDLE_MS);
    pipeRaw(sock, upstream, () => this.#passthroughSockets.delete(sock));
  }
}

/** An open CONNECT tunnel, intercepted or passthrough, until its socket closes. */
function countTunnel(sock: AgentSocket): void {
  metrics.openTunnels.inc();
  sock.onceClosed(() => metrics.openTunnels.dec());
}

/** The first bytes inside a tunnel (they say whether it is TLS); null when the agent went away first. */
function firstChunk(sock: AgentSocket): Promise<Buffer | null> {
  return new Promise((resolve) => {
    sock.events = {
      data(chunk) {
        sock.events = null;
        sock.pause();
        resolve(chunk);
      },
      drain() {},
      close() {
        resolve(null);
      },
    };
    sock.resume();
  });
}
