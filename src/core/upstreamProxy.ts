// The upstream proxy (docs/operations.md#upstream-proxy): which outbound connections go through it
// (CREDGATE_UPSTREAM_NO_PROXY, curl's NO_PROXY rules) and the client side of its handshake, HTTP CONNECT with
// Basic proxy authentication or SOCKS5 with user name and password (RFC 1928, RFC 1929), as byte-level state
// machines that any socket can drive. credgate asks the proxy for the address it resolved and checked itself.
import { inCidr, parseAddress, parseCidr, type Cidr } from "./addressRules.ts";

export interface UpstreamProxy {
  kind: "http" | "socks5";
  /** The proxy's host (a name or an address) and port. */
  host: string;
  port: number;
  user: string | null;
  password: string | null;
  /** `scheme://host:port`, without the credentials: what logs and messages may show. */
  shown: string;
}

/** `http://[user:pass@]host:port` or `socks5://[user:pass@]host:port`; a string saying what is wrong otherwise. */
export function parseUpstreamProxy(raw: string): UpstreamProxy | string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `"${raw.replace(/\/\/[^@/]*@/, "//…@")}" is not a URL such as http://host:3128 or socks5://host:1080`;
  }
  const kind = url.protocol === "http:" ? "http" : url.protocol === "socks5:" ? "socks5" : null;
  if (kind === null) return `the scheme must be http:// or socks5:// (credgate resolves names itself, so socks5h:// is not needed), got ${url.protocol}//`;
  if (!url.hostname) return "it names no host";
  if (!url.port) return "it must name the proxy's port, e.g. http://proxy.internal:3128";
  if (url.pathname !== "/" && url.pathname !== "") return "it must not have a path";
  if (url.pathname === "" && (url.search || url.hash)) return "it must not have a path";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const user = url.username ? decodeURIComponent(url.username) : null;
  const password = url.password ? decodeURIComponent(url.password) : user !== null ? "" : null;
  if (kind === "socks5" && ((user?.length ?? 0) > 255 || (password?.length ?? 0) > 255)) return "a SOCKS5 user name and password are at most 255 bytes each";
  return { kind, host, port: Number(url.port), user, password, shown: `${kind}://${url.host}` };
}

/** CREDGATE_UPSTREAM_NO_PROXY: every host (`*`), names (with their subdomains), addresses and CIDR ranges. */
export interface NoProxyRules {
  all: boolean;
  names: string[];
  ranges: Cidr[];
}

export const NO_RULES: NoProxyRules = { all: false, names: [], ranges: [] };

/** A comma list like curl's NO_PROXY: `*`, `example.com` / `.example.com` / `*.example.com` (the name and its subdomains), IPs, CIDRs. */
export function parseNoProxy(raw: string): NoProxyRules | string {
  const rules: NoProxyRules = { all: false, names: [], ranges: [] };
  for (const item of raw.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean)) {
    if (item === "*") {
      rules.all = true;
      continue;
    }
    const cidr = parseCidr(item);
    if (cidr) {
      rules.ranges.push(cidr);
      continue;
    }
    const name = item.replace(/^\*?\./, "").replace(/\.$/, "");
    if (!/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(name)) return `"${item}" is not a host name, IP address or CIDR range`;
    rules.names.push(name);
  }
  return rules;
}

/** Whether a connection to `host` (the name asked for) at `address` (where it is dialled) goes around the proxy. */
export function bypassesProxy(rules: NoProxyRules, host: string, address: string): boolean {
  if (rules.all) return true;
  for (const name of rules.names) if (host === name || (host.length > name.length && host.endsWith(name) && host[host.length - name.length - 1] === ".")) return true;
  if (rules.ranges.length === 0) return false;
  for (const a of [parseAddress(host), parseAddress(address)]) if (a && rules.ranges.some((c) => inCidr(a, c))) return true;
  return false;
}

/** One step of a handshake: bytes to send, and whether it is over. `rest` is what came after the proxy's last answer. */
export type HandshakeStep = { send: Uint8Array | null; done: false } | { send: null; done: true; rest: Uint8Array } | { failed: string };

/** The client side of a tunnel handshake: `start` gives the first bytes, `feed` takes what the proxy sends. */
export interface ProxyHandshake {
  start(): Uint8Array;
  feed(data: Uint8Array): HandshakeStep;
}

const MAX_CONNECT_ANSWER = 16 * 1024;

function authority(address: string, port: number): string {
  return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
}

/** HTTP CONNECT: `CONNECT <address>:<port>`, Basic proxy credentials when given; any 2xx opens the tunnel. */
class HttpConnect implements ProxyHandshake {
  #buf = Buffer.alloc(0);
  constructor(
    private readonly proxy: UpstreamProxy,
    private readonly address: string,
    private readonly port: number,
  ) {}

  start(): Uint8Array {
    const to = authority(this.address, this.port);
    let head = `CONNECT ${to} HTTP/1.1\r\nHost: ${to}\r\n`;
    if (this.proxy.user !== null) head += `Proxy-Authorization: Basic ${Buffer.from(`${this.proxy.user}:${this.proxy.password ?? ""}`).toString("base64")}\r\n`;
    return Buffer.from(`${head}\r\n`, "latin1");
  }

  feed(data: Uint8Array): HandshakeStep {
    this.#buf = Buffer.concat([this.#buf, data]);
    const end = this.#buf.indexOf("\r\n\r\n");
    if (end < 0) return this.#buf.length > MAX_CONNECT_ANSWER ? { failed: "the upstream proxy sent an answer too large to be one" } : { send: null, done: false };
    const status = /^HTTP\/1\.[01] (\d{3})(?: ([^\r\n]*))?\r\n/.exec(this.#buf.subarray(0, end + 2).toString("latin1"));
    if (!status) return { failed: "the upstream proxy did not answer CONNECT with HTTP" };
    const code = Number(status[1]);
    if (code < 200 || code > 299) {
      const reason = (status[2] ?? "").replace(/[^\x20-\x7e]/g, "").slice(0, 100);
      // 407 is the standard answer; tinyproxy answers a CONNECT with 401.
      const auth = code === 407 || code === 401;
      const hint = !auth ? "" : this.proxy.user === null ? " (the proxy wants credentials: put them in CREDGATE_UPSTREAM_PROXY)" : " (the proxy refused the credentials of CREDGATE_UPSTREAM_PROXY)";
      return { failed: `the upstream proxy refused the tunnel: ${code}${reason ? ` ${reason}` : ""}${hint}` };
    }
    return { send: null, done: true, rest: this.#buf.subarray(end + 4) };
  }
}

const SOCKS_REPLIES: Record<number, string> = {
  1: "general failure",
  2: "connection not allowed by its rules",
  3: "network unreachable",
  4: "host unreachable",
  5: "connection refused",
  6: "TTL expired",
  7: "command not supported",
  8: "address type not supported",
};

/** SOCKS5 CONNECT to an address (or, only if one is given, a name), with user and password when configured. */
class Socks5 implements ProxyHandshake {
  #buf = Buffer.alloc(0);
  #state: "method" | "auth" | "reply" = "method";
  constructor(
    private readonly proxy: UpstreamProxy,
    private readonly address: string,
    private readonly port: number,
  ) {}

  start(): Uint8Array {
    // No authentication (0) always; user/password (2) when configured.
    return Uint8Array.from(this.proxy.user !== null ? [5, 2, 0, 2] : [5, 1, 0]);
  }

  feed(data: Uint8Array): HandshakeStep {
    this.#buf = this.#buf.length === 0 ? Buffer.from(data) : Buffer.concat([this.#buf, data]);
    const b = this.#buf;
    switch (this.#state) {
      case "method": {
        if (b.length < 2) return { send: null, done: false };
        if (b[0] !== 5) return { failed: "the upstream proxy does not speak SOCKS5" };
        const method = b[1];
        this.#buf = b.subarray(2);
        if (method === 0) {
          this.#state = "reply";
          return { send: this.#request(), done: false };
        }
        if (method === 2 && this.proxy.user !== null) {
          this.#state = "auth";
          const user = Buffer.from(this.proxy.user);
          const password = Buffer.from(this.proxy.password ?? "");
          return { send: Buffer.concat([Uint8Array.from([1, user.length]), user, Uint8Array.from([password.length]), password]), done: false };
        }
        if (this.proxy.user === null) return { failed: "the upstream proxy wants credentials: put them in CREDGATE_UPSTREAM_PROXY" };
        return { failed: "the upstream proxy accepted none of the offered authentication methods" };
      }
      case "auth": {
        if (b.length < 2) return { send: null, done: false };
        if (b[1] !== 0) return { failed: "the upstream proxy refused the user name or password of CREDGATE_UPSTREAM_PROXY" };
        this.#buf = b.subarray(2);
        this.#state = "reply";
        return { send: this.#request(), done: false };
      }
      case "reply": {
        if (b.length < 5) return { send: null, done: false };
        if (b[0] !== 5) return { failed: "the upstream proxy does not speak SOCKS5" };
        if (b[1] !== 0) return { failed: `the upstream proxy could not connect: ${SOCKS_REPLIES[b[1]!] ?? `SOCKS5 reply ${b[1]}`}` };
        const addressBytes = b[3] === 1 ? 4 : b[3] === 4 ? 16 : b[3] === 3 ? 1 + b[4]! : -1;
        if (addressBytes < 0) return { failed: "the upstream proxy sent a malformed SOCKS5 reply" };
        const length = 4 + addressBytes + 2;
        if (b.length < length) return { send: null, done: false };
        return { send: null, done: true, rest: b.subarray(length) };
      }
    }
  }

  #request(): Uint8Array {
    const port = Uint8Array.from([this.port >> 8, this.port & 0xff]);
    const parsed = parseAddress(this.address);
    if (!parsed) {
      const name = Buffer.from(this.address);
      return Buffer.concat([Uint8Array.from([5, 1, 0, 3, name.length]), name, port]);
    }
    const bytes: number[] = [];
    const width = parsed.v6 ? 16 : 4;
    for (let i = width - 1; i >= 0; i--) bytes.push(Number((parsed.bits >> BigInt(8 * i)) & 0xffn));
    return Buffer.concat([Uint8Array.from([5, 1, 0, parsed.v6 ? 4 : 1, ...bytes]), port]);
  }
}

/** The handshake that asks `proxy` for a tunnel to `address:port`. */
export function proxyHandshake(proxy: UpstreamProxy, address: string, port: number): ProxyHandshake {
  return proxy.kind === "http" ? new HttpConnect(proxy, address, port) : new Socks5(proxy, address, port);
}
