// Every outbound connection of the process goes through here, so that all of them honour
// CREDGATE_RESOLVE (curl --resolve: dial a pinned address, keep Host and TLS name), CREDGATE_CONNECT_TO
// (curl --connect-to: dial another host and port, keep Host and TLS name) and CREDGATE_UPSTREAM_CA_FILE
// (extra trusted CAs on top of the system roots), and never an env proxy.
import { readFileSync } from "node:fs";
import * as net from "node:net";
import * as tls from "node:tls";
import type { Config } from "../runtime/config.ts";

export interface DialTarget {
  /** Address to connect to (the pinned one, or the host itself). */
  address: string;
  /** Port to connect to (another one only under CREDGATE_CONNECT_TO). */
  port: number;
  /** Hostname for SNI, certificate verification and the Host header. */
  host: string;
}

const defaultPort = (url: URL) => Number(url.port) || (url.protocol === "https:" ? 443 : 80);

export class Outbound {
  readonly #resolve: Map<string, string>;
  readonly #connectTo: Map<string, { host: string; port: number }>;
  readonly #ca: string[] | undefined;
  readonly #session: Bun.FetchSession;
  /**
   * One session per pinned `host:port` over https, with the TLS options (CA list, server name) on the session:
   * a per-request `tls` option makes Bun process the whole CA list again on every request (~100 µs with the
   * system roots). Bounded by CREDGATE_RESOLVE's entries.
   */
  readonly #pinnedSessions = new Map<string, Bun.FetchSession>();

  constructor(config: Pick<Config, "resolve" | "upstreamCaFile"> & Partial<Pick<Config, "connectTo">>) {
    this.#resolve = config.resolve;
    this.#connectTo = config.connectTo ?? new Map();
    this.#ca = config.upstreamCaFile ? [...tls.rootCertificates, readFileSync(config.upstreamCaFile, "utf8")] : undefined;
    this.#session = new Bun.FetchSession({ proxy: false, ...(this.#ca ? { tls: { ca: this.#ca } } : {}) });
  }

  /** The trusted CAs for upstream TLS when CREDGATE_UPSTREAM_CA_FILE adds one (system roots + it). */
  get ca(): string[] | undefined {
    return this.#ca;
  }

  #pinnedSession(host: string, port: number): Bun.FetchSession {
    const key = `${host}:${port}`;
    let session = this.#pinnedSessions.get(key);
    if (!session) {
      session = new Bun.FetchSession({ proxy: false, tls: { ...(this.#ca ? { ca: this.#ca } : {}), serverName: host } });
      this.#pinnedSessions.set(key, session);
    }
    return session;
  }

  /** Where to dial `host:port`. */
  dialTarget(host: string, port: number): DialTarget {
    const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
    // Like curl, --connect-to picks the host and port first and --resolve then pins that host's address.
    const to = this.#connectTo.get(`${bare}:${port}`) ?? { host: bare, port };
    return { address: this.#resolve.get(`${to.host}:${to.port}`) ?? to.host, port: to.port, host: bare };
  }

  /**
   * fetch() for any outbound HTTP(S): pinned addresses keep the original Host header and TLS server name.
   * Callers pass their own redirect/decompress choices.
   */
  fetch(input: string | URL, init: BunFetchRequestInit = {}): Promise<Response> {
    const url = typeof input === "string" ? new URL(input) : input;
    return this.fetchAt(url, this.dialTarget(url.hostname, defaultPort(url)), init);
  }

  /**
   * fetch() that dials exactly `target` (e.g. the address an egress guard checked, so a second lookup cannot
   * swap it), keeping the URL's Host header and TLS server name.
   */
  fetchAt(url: URL, target: DialTarget, init: BunFetchRequestInit = {}): Promise<Response> {
    const port = defaultPort(url);
    if (target.address === target.host && target.port === port) return this.#session.fetch(url, init);
    const pinned = new URL(url);
    pinned.hostname = net.isIPv6(target.address) ? `[${target.address}]` : target.address;
    pinned.port = String(target.port);
    const headers = new Headers(init.headers);
    if (!headers.has("host")) headers.set("host", url.host);
    const session = url.protocol === "https:" ? this.#pinnedSession(target.host, port) : this.#session;
    return session.fetch(pinned, { ...init, headers });
  }

  /** A raw TCP connection (optionally TLS with ALPN http/1.1), e.g. for WebSocket upgrades and passthrough. */
  connect(host: string, port: number, opts: { tls: boolean; timeoutMs: number; target?: DialTarget }): Promise<net.Socket> {
    // The gateway passes the target its egress guard approved, so exactly that address is dialled.
    const target = opts.target ?? this.dialTarget(host, port);
    return new Promise((resolve, reject) => {
      const sock: net.Socket = opts.tls
        ? tls.connect({
            host: target.address,
            port: target.port,
            servername: net.isIP(target.host) ? undefined : target.host,
            ALPNProtocols: ["http/1.1"],
            ...(this.#ca ? { ca: this.#ca } : {}),
            checkServerIdentity: (_h, cert) => tls.checkServerIdentity(target.host, cert),
          })
        : net.connect({ host: target.address, port: target.port });
      const timer = setTimeout(() => sock.destroy(new Error(`connect timed out after ${opts.timeoutMs / 1000} s`)), opts.timeoutMs);
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
