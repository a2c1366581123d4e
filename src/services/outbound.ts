// Every outbound connection of the process goes through here, so that all of them honour CREDGATE_RESOLVE (curl
// --resolve: dial a pinned address, keep Host and TLS name), CREDGATE_CONNECT_TO (curl --connect-to: dial another
// host and port, keep Host and TLS name), CREDGATE_UPSTREAM_CA_FILE (extra trusted CAs on top of the system roots),
// credgate's own name resolution with its cache shared by the instance's processes (docs/operations.md#dns), and
// the upstream proxy (docs/operations.md#upstream-proxy) — never an env proxy. Names are resolved here, and the
// address is what is dialled or asked of the proxy (`CONNECT <address>:<port>`), with the name kept for TLS.
import type { Socket } from "bun";
import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as tls from "node:tls";
import type { Config } from "../runtime/config.ts";
import { log } from "../observability/log.ts";
import { SharedCaches, type Fresh, type SharedCache } from "../core/sharedCache.ts";
import { bypassesProxy, NO_RULES, type NoProxyRules, type UpstreamProxy } from "../core/upstreamProxy.ts";
import { NameResolver, type DnsAnswer } from "./dns.ts";
import { tunnelOnBunSocket, tunnelOnNodeSocket } from "./proxyTunnel.ts";

export interface DialTarget {
  /** Address to connect to (the pinned or resolved one, or the host itself before resolution). */
  address: string;
  /** Port to connect to (another one only under CREDGATE_CONNECT_TO). */
  port: number;
  /** Hostname for SNI, certificate verification and the Host header. */
  host: string;
}

export type OutboundConfig = Pick<Config, "resolve" | "upstreamCaFile"> & Partial<Pick<Config, "connectTo" | "dnsServers" | "upstreamProxy" | "upstreamNoProxy">>;

/** Connecting through the proxy and TLS to a fetch() destination. */
const FETCH_CONNECT_TIMEOUT_MS = 10_000;
/** Sessions kept for TLS server names (one per host and port dialled by address). */
const MAX_SESSIONS = 256;
/** The operator hears of tunnels the proxy would not open at most this often (agents get each reason in their 502). */
const PROXY_WARNING_MS = 60_000;

/**
 * The upstream proxy did not open a tunnel (docs/operations.md#upstream-proxy): its message is the proxy's reason,
 * in words fit for an agent or an operator (never the proxy's URL or credentials).
 */
export class UpstreamProxyError extends Error {}

const defaultPort = (url: URL) => Number(url.port) || (url.protocol === "https:" ? 443 : 80);

export class Outbound {
  readonly #resolve: Map<string, string>;
  readonly #connectTo: Map<string, { host: string; port: number }>;
  readonly #ca: string[] | undefined;
  readonly #session: Bun.FetchSession;
  /**
   * One session per `host:port` over https dialled by address, with the TLS options (CA list, server name) on the
   * session: a per-request `tls` option makes Bun process the whole CA list again on every request (~100 µs with
   * the system roots).
   */
  readonly #namedSessions = new Map<string, Bun.FetchSession>();
  readonly #names: SharedCache<DnsAnswer>;
  readonly #proxy: UpstreamProxy | null;
  readonly #noProxy: NoProxyRules;
  #proxyWarnedAt = -Infinity;

  constructor(config: OutboundConfig, caches: SharedCaches = new SharedCaches()) {
    this.#resolve = config.resolve;
    this.#connectTo = config.connectTo ?? new Map();
    this.#ca = config.upstreamCaFile ? [...tls.rootCertificates, readFileSync(config.upstreamCaFile, "utf8")] : undefined;
    this.#session = new Bun.FetchSession({ proxy: false, ...(this.#ca ? { tls: { ca: this.#ca } } : {}) });
    this.#proxy = config.upstreamProxy ?? null;
    this.#noProxy = config.upstreamNoProxy ?? NO_RULES;
    const resolver = new NameResolver(config.dnsServers ?? null);
    this.#names = caches.define<DnsAnswer>("dns", { load: (name) => resolver.load(name), failed: (reason) => ({ address: null, reason }) });
  }

  /** The trusted CAs for upstream TLS when CREDGATE_UPSTREAM_CA_FILE adds one (system roots + it). */
  get ca(): string[] | undefined {
    return this.#ca;
  }

  /** Where to dial `host:port` (pins applied; a name is still to be resolved). */
  dialTarget(host: string, port: number): DialTarget {
    const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
    // Like curl, --connect-to picks the host and port first and --resolve then pins that host's address.
    const to = this.#connectTo.get(`${bare}:${port}`) ?? { host: bare, port };
    return { address: this.#resolve.get(`${to.host}:${to.port}`) ?? to.host, port: to.port, host: bare };
  }

  /** The name's fresh cached answer, at once, or the lookup (one per name for the whole instance at a time). */
  resolveName(name: string): Fresh<DnsAnswer> | Promise<Fresh<DnsAnswer>> {
    return this.#names.peek(name) ?? this.#names.get(name);
  }

  /** The target with its name resolved (unchanged when it is an address); rejects with the resolver's code. */
  async resolved(target: DialTarget): Promise<DialTarget> {
    if (net.isIP(target.address)) return target;
    return { ...target, address: await this.#addressOf(target.address) };
  }

  async #addressOf(name: string): Promise<string> {
    const answer = (await this.resolveName(name)).value;
    if (answer.address === null) throw Object.assign(new Error(`${name} does not resolve (${answer.reason})`), { code: answer.reason });
    return answer.address;
  }

  /** The upstream proxy a connection to `target` (resolved) goes through, or null when it goes direct. */
  proxyFor(target: DialTarget): UpstreamProxy | null {
    return this.#proxy !== null && !bypassesProxy(this.#noProxy, target.host, target.address) ? this.#proxy : null;
  }

  /** The proxy's own address: the operator's, so it is not judged by the egress guard (loopback and private are fine). */
  async #proxyAddress(proxy: UpstreamProxy): Promise<string> {
    if (net.isIP(proxy.host)) return proxy.host;
    try {
      return await this.#addressOf(proxy.host);
    } catch (err) {
      throw new Error(`the upstream proxy's name ${proxy.host} does not resolve (${(err as NodeJS.ErrnoException).code})`);
    }
  }

  /** A tunnel through `proxy` to the resolved target on a Bun socket (the gateway's pooled connections). */
  async openTunnel(proxy: UpstreamProxy, target: DialTarget, timeoutMs: number): Promise<Socket<unknown>> {
    try {
      return await tunnelOnBunSocket(proxy, await this.#proxyAddress(proxy), target.address, target.port, timeoutMs);
    } catch (err) {
      throw this.#tunnelFailed(proxy, target, err as Error);
    }
  }

  async #nodeTunnel(proxy: UpstreamProxy, target: DialTarget, timeoutMs: number): Promise<net.Socket> {
    try {
      return await tunnelOnNodeSocket(proxy, await this.#proxyAddress(proxy), target.address, target.port, timeoutMs);
    } catch (err) {
      throw this.#tunnelFailed(proxy, target, err as Error);
    }
  }

  /** Logs a tunnel the proxy did not open (its URL without credentials), at most once a minute. */
  #tunnelFailed(proxy: UpstreamProxy, target: DialTarget, err: Error): UpstreamProxyError {
    const now = performance.now();
    if (now - this.#proxyWarnedAt >= PROXY_WARNING_MS) {
      this.#proxyWarnedAt = now;
      log.warn("upstream proxy did not open a tunnel", { proxy: proxy.shown, host: target.host, address: target.address, port: target.port, reason: err.message });
    }
    return new UpstreamProxyError(err.message);
  }

  #namedSession(host: string, port: number): Bun.FetchSession {
    const key = `${host}:${port}`;
    let session = this.#namedSessions.get(key);
    if (!session) {
      if (this.#namedSessions.size >= MAX_SESSIONS) {
        for (const s of this.#namedSessions.values()) s.close();
        this.#namedSessions.clear();
      }
      session = new Bun.FetchSession({ proxy: false, tls: { ...(this.#ca ? { ca: this.#ca } : {}), serverName: host } });
      this.#namedSessions.set(key, session);
    }
    return session;
  }

  /**
   * fetch() for any outbound HTTP(S) of credgate itself (OAuth, vault, migration): the name is resolved here and
   * its address dialled, with the original Host header and TLS server name; through the upstream proxy when one
   * applies. Callers pass their own redirect/decompress choices.
   */
  async fetch(input: string | URL, init: BunFetchRequestInit = {}): Promise<Response> {
    const url = typeof input === "string" ? new URL(input) : input;
    return this.fetchAt(url, await this.resolved(this.dialTarget(url.hostname, defaultPort(url))), init);
  }

  /**
   * fetch() that dials exactly `target` (e.g. the address an egress guard checked, so a second lookup cannot
   * swap it), keeping the URL's Host header and TLS server name; through the upstream proxy when one applies.
   */
  fetchAt(url: URL, target: DialTarget, init: BunFetchRequestInit = {}): Promise<Response> {
    const port = defaultPort(url);
    if (this.proxyFor(target)) return this.#fetchThroughProxy(url, init, target);
    if (target.address === target.host && target.port === port) return this.#session.fetch(url, init);
    const direct = new URL(url);
    direct.hostname = net.isIPv6(target.address) ? `[${target.address}]` : target.address;
    direct.port = String(target.port);
    const headers = new Headers(init.headers);
    if (!headers.has("host")) headers.set("host", url.host);
    const session = url.protocol === "https:" && !net.isIP(target.host) ? this.#namedSession(target.host, port) : this.#session;
    return session.fetch(direct, { ...init, headers });
  }

  /** One request on its own connection through the proxy (node:http over the tunnel), answered as a fetch Response. */
  async #fetchThroughProxy(url: URL, init: BunFetchRequestInit, target: DialTarget): Promise<Response> {
    const request = new Request(url.href, init as RequestInit);
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : null;
    const signal = init.signal ?? null;
    signal?.throwIfAborted();
    const socket = await this.connect(target.host, target.port, { tls: url.protocol === "https:", timeoutMs: FETCH_CONNECT_TIMEOUT_MS, target });
    return new Promise<Response>((resolve, reject) => {
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => (headers[name] = value));
      headers.host ??= url.host;
      headers.connection = "close";
      if (body) headers["content-length"] = String(body.length);
      const req = http.request({ method: request.method, path: url.pathname + url.search, headers, createConnection: () => socket }, (res) => {
        const status = res.statusCode ?? 502;
        const answer = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) answer.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const empty = request.method === "HEAD" || status === 204 || status === 304;
        const stream = empty
          ? null
          : new ReadableStream<Uint8Array>({
              start(controller) {
                res.on("data", (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)));
                res.on("end", () => {
                  controller.close();
                  socket.destroy();
                });
                res.on("error", (err) => controller.error(err));
              },
              cancel() {
                res.destroy();
                socket.destroy();
              },
            });
        if (empty) socket.destroy();
        resolve(new Response(stream, { status, statusText: res.statusMessage ?? "", headers: answer }));
      });
      req.on("error", (err) => {
        socket.destroy();
        reject(err);
      });
      signal?.addEventListener("abort", () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted")), { once: true });
      req.end(body ?? undefined);
    });
  }

  /**
   * A raw TCP connection (optionally TLS with ALPN http/1.1), e.g. for WebSocket upgrades and passthrough: to the
   * target the gateway's egress guard approved when given (exactly that address), else to `host:port` resolved here.
   */
  async connect(host: string, port: number, opts: { tls: boolean; timeoutMs: number; target?: DialTarget }): Promise<net.Socket> {
    const target = opts.target ?? (await this.resolved(this.dialTarget(host, port)));
    const proxy = this.proxyFor(target);
    const started = performance.now();
    const tunnel = proxy ? await this.#nodeTunnel(proxy, target, opts.timeoutMs) : null;
    const timeoutMs = Math.max(1, opts.timeoutMs - (performance.now() - started));
    return new Promise((resolve, reject) => {
      const sock: net.Socket = opts.tls
        ? tls.connect({
            ...(tunnel ? { socket: tunnel } : { host: target.address, port: target.port }),
            servername: net.isIP(target.host) ? undefined : target.host,
            ALPNProtocols: ["http/1.1"],
            ...(this.#ca ? { ca: this.#ca } : {}),
            checkServerIdentity: (_h, cert) => tls.checkServerIdentity(target.host, cert),
          })
        : (tunnel ?? net.connect({ host: target.address, port: target.port }));
      if (tunnel && !opts.tls) return resolve(tunnel);
      const timer = setTimeout(() => sock.destroy(new Error(`connect timed out after ${opts.timeoutMs / 1000} s`)), timeoutMs);
      sock.once(opts.tls ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        sock.off("error", reject);
        resolve(sock);
      });
      sock.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }
}
