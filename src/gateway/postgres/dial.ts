// Reaching a database server for a credential: the address is judged by the egress guard and dialled exactly
// (docs/guards.md#egress-guard), through the single outbound door so CREDGATE_RESOLVE / CREDGATE_CONNECT_TO pins
// and the upstream proxy apply (docs/operations.md#upstream-proxy), then TLS is negotiated the PostgreSQL way:
// an SSLRequest, the server's one-byte `S`, and the handshake on the same socket with the trust store of every
// upstream (the system roots plus CREDGATE_UPSTREAM_CA_FILE). node:net/node:tls rather than Bun's sockets: Bun's
// TLS upgrade drops bytes written before its handshake completes.
import * as net from "node:net";
import * as tls from "node:tls";
import { isLoopback, parseAddress } from "../../core/addressRules.ts";
import type { EgressGuard } from "../egressGuard.ts";
import type { DialTarget, Outbound } from "../../services/outbound.ts";
import { sslRequest } from "./wire.ts";

export type DatabaseTls = "verify-full" | "require" | "off";

/** Where a database credential points (the fields of the snapshot's DatabaseCredential that the dial reads). */
export interface DatabaseEndpoint {
  host: string;
  port: number;
  tls: DatabaseTls;
}

export interface DialDeps {
  egress: Pick<EgressGuard, "check">;
  outbound: Pick<Outbound, "connect" | "ca" | "proxyFor">;
}

/** TCP connect (and the upstream proxy's tunnel), as for the HTTP upstreams. */
export const CONNECT_TIMEOUT_MS = 10_000;

/** A refusal or failure on the way to the server: its message is the reason a person reads (never a secret). */
export class DialError extends Error {}

/** Whoever waits on the attempt: told of the socket as soon as it exists, so a timeout or abort can close it. */
export interface DialWatch {
  adopt(socket: net.Socket): void;
}

/** A connection to the server, TLS per the credential, nothing sent on it yet after the handshake. */
export async function dialDatabase(given: DatabaseEndpoint, deps: DialDeps, watch: DialWatch): Promise<net.Socket | tls.TLSSocket> {
  // An IPv6 literal may come bracketed; names are case-insensitive (as the outbound door reads them).
  const endpoint = { ...given, host: given.host.replace(/^\[|\]$/g, "").toLowerCase() };
  const target = await judged(endpoint, deps);
  if (endpoint.tls === "off") plainAllowed(endpoint, target, deps);
  let raw: net.Socket;
  try {
    raw = await deps.outbound.connect(endpoint.host, endpoint.port, { tls: false, timeoutMs: CONNECT_TIMEOUT_MS, target });
  } catch (err) {
    throw new DialError(connectFailure(endpoint, err as NodeJS.ErrnoException));
  }
  watch.adopt(raw);
  raw.setNoDelay(true);
  raw.setKeepAlive(true, 60_000);
  if (endpoint.tls === "off") return raw;
  await agreeOnTls(raw);
  const secure = startTls(raw, endpoint, deps.outbound.ca);
  watch.adopt(secure);
  await handshake(secure, endpoint);
  return secure;
}

async function judged(endpoint: DatabaseEndpoint, deps: DialDeps): Promise<DialTarget> {
  const verdict = await deps.egress.check(endpoint.host, endpoint.port);
  switch (verdict.kind) {
    case "dial":
      return verdict.target;
    case "denied":
      return Promise.reject(new DialError(`credgate does not connect to ${verdict.address} (${endpoint.host}): the destination is an internal or reserved address`));
    case "unresolved":
      return Promise.reject(new DialError(`${endpoint.host} does not resolve (${verdict.reason})`));
  }
}

/** `tls: off` is validated against the host already; here the address really dialled must be loopback too, and direct. */
function plainAllowed(endpoint: DatabaseEndpoint, target: DialTarget, deps: DialDeps): void {
  const address = parseAddress(target.address);
  if (!address || !isLoopback(address)) throw new DialError(`tls off is only allowed for a loopback database, and ${endpoint.host} is dialled at ${target.address}`);
  if (deps.outbound.proxyFor(target)) throw new DialError(`tls off is only allowed for a loopback database reached directly, and ${endpoint.host} goes through the upstream proxy`);
}

function connectFailure(endpoint: DatabaseEndpoint, err: NodeJS.ErrnoException): string {
  // The proxy's reasons already say what happened, without naming the proxy (docs/operations.md#upstream-proxy).
  if (err.message.startsWith("the upstream proxy")) return err.message;
  return `could not reach ${endpoint.host}:${endpoint.port} (${err.code ?? err.message})`;
}

/** SSLRequest, and the server's one-byte answer: `S` goes on, `N` (or an old server's error) is refused. */
function agreeOnTls(raw: net.Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: DialError | null) => {
      raw.off("data", onData);
      raw.off("error", onError);
      raw.off("close", onClose);
      if (err) reject(err);
      else resolve();
    };
    const onData = (chunk: Buffer) => {
      raw.pause();
      const answer = chunk[0];
      // Bytes after the `S` were written in clear by someone before the handshake (CVE-2021-23222): never read them.
      if (answer === 0x53) return done(chunk.length === 1 ? null : new DialError("the server sent unencrypted data after agreeing to TLS"));
      if (answer === 0x4e) return done(new DialError("the server does not support TLS (the credential's tls setting requires it)"));
      done(new DialError("the server refused the TLS request"));
    };
    const onError = (err: NodeJS.ErrnoException) => done(new DialError(`the connection failed during the TLS request (${err.code ?? err.message})`));
    const onClose = () => done(new DialError("the server closed the connection at the TLS request"));
    raw.on("data", onData);
    raw.on("error", onError);
    raw.on("close", onClose);
    raw.write(sslRequest());
  });
}

function startTls(raw: net.Socket, endpoint: DatabaseEndpoint, ca: string[] | undefined): tls.TLSSocket {
  const verify = endpoint.tls === "verify-full";
  return tls.connect({
    socket: raw,
    servername: net.isIP(endpoint.host) ? undefined : endpoint.host,
    ...(ca ? { ca } : {}),
    rejectUnauthorized: verify,
    // The real host, also when the address was pinned: the certificate must name what the credential names.
    checkServerIdentity: verify ? (_name, cert) => tls.checkServerIdentity(endpoint.host, cert) : () => undefined,
    ALPNProtocols: ["postgresql"],
  });
}

function handshake(secure: tls.TLSSocket, endpoint: DatabaseEndpoint): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      secure.off("secureConnect", onSecure);
      reject(new DialError(certificateFailure(endpoint, err)));
    };
    const onSecure = () => {
      secure.off("error", onError);
      if (endpoint.tls === "verify-full" && !secure.authorized) {
        secure.destroy();
        return reject(new DialError(`the server's certificate could not be verified (${String(secure.authorizationError)})`));
      }
      resolve();
    };
    secure.once("error", onError);
    secure.once("secureConnect", onSecure);
  });
}

function certificateFailure(endpoint: DatabaseEndpoint, err: NodeJS.ErrnoException): string {
  if (err.code === "ERR_TLS_CERT_ALTNAME_INVALID" || /altnames|does not match/i.test(err.message)) {
    return `the server's certificate is not valid for ${endpoint.host} (${err.message})`;
  }
  if (err.code && /CERT|SELF_SIGNED|VERIFY|ISSUER|EXPIRED/.test(err.code)) {
    return `the server's certificate could not be verified (${err.message}); add its CA to CREDGATE_UPSTREAM_CA_FILE`;
  }
  return `the TLS handshake with the server failed (${err.message})`;
}
