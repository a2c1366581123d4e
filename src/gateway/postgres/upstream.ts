// The upstream side of a database session (docs/databases.md#upstream-tls-and-authentication): credgate connects to the
// real PostgreSQL server with a database credential (dial, egress guard and TLS in dial.ts), sends the startup message
// with the real user, answers the server's authentication itself (SCRAM-SHA-256, SCRAM-SHA-256-PLUS, MD5, cleartext
// over TLS only), and hands the relay a paused socket at the server's first ReadyForQuery, with the server's parameters
// and its real cancel key. The agent never sees the password, and no reason given for a failure contains it.
import { createHash } from "node:crypto";
import type * as net from "node:net";
import * as tls from "node:tls";
import type { Config } from "../../runtime/config.ts";
import { dialDatabase, DialError, type DatabaseEndpoint, type DialDeps } from "./dial.ts";
import { SCRAM, SCRAM_PLUS, ScramClient, ScramError, tlsServerEndPoint, type ChannelBinding } from "./scram.ts";
import { upstreamStartupParams } from "./startupParams.ts";
import { cancelRequest, MessageReader, parseErrorFields, passwordMessage, readCString, saslInitialResponse, saslResponse, startupMessage, type Message } from "./wire.ts";

/** The fields of a database credential (the snapshot's DatabaseCredential) the upstream side reads. */
export interface UpstreamCredential extends DatabaseEndpoint {
  user: string;
}

export interface UpstreamSession {
  /** After the server's first ReadyForQuery (consumed): paused, with no listener of ours attached. */
  socket: net.Socket | tls.TLSSocket;
  /** ParameterStatus messages the server sent, in order. */
  parameters: [string, string][];
  /** The server's real cancel key. */
  backendKey: { processId: number; secretKey: number };
  /** Bytes the server sent after its ReadyForQuery (usually none): the relay forwards them first. */
  pending: Uint8Array;
  /** How credgate logged in: `SCRAM-SHA-256-PLUS`, `SCRAM-SHA-256`, `md5`, `password`, or `trust` (none asked). */
  authentication: string;
}

/** Why the server could not be used: the `<reason>` of `could not connect to the database: <reason>`, never the password. */
export class UpstreamError extends Error {}

export interface UpstreamDeps extends DialDeps {
  config?: Config;
}

/** The whole login — dial, TLS, authentication, until the server is ready — is bounded by this. */
export const STARTUP_TIMEOUT_MS = 30_000;
/** A cancel request is sent and left for the server to close; the attempt is given up after this. */
export const CANCEL_TIMEOUT_MS = 10_000;
/** Startup-phase messages are small; a server sending more than this before it is ready is not one to trust. */
const STARTUP_BYTES_MAX = 1 << 20;

const AUTH_OK = 0, AUTH_KERBEROS = 2, AUTH_CLEARTEXT = 3, AUTH_MD5 = 5, AUTH_GSS = 7, AUTH_GSS_CONTINUE = 8, AUTH_SSPI = 9;
const AUTH_SASL = 10, AUTH_SASL_CONTINUE = 11, AUTH_SASL_FINAL = 12;
const UNANSWERED: Record<number, string> = {
  [AUTH_KERBEROS]: "Kerberos V5",
  [AUTH_GSS]: "GSSAPI",
  [AUTH_GSS_CONTINUE]: "GSSAPI",
  [AUTH_SSPI]: "SSPI",
};

/**
 * One attempt with a deadline and an abort signal: whichever comes first closes the socket adopted so far and
 * fails the attempt with a reason.
 */
class Attempt {
  #sockets: net.Socket[] = [];
  #failure: Promise<never>;
  #fail!: (err: Error) => void;
  #timer: ReturnType<typeof setTimeout>;
  #signal: AbortSignal | undefined;
  #onAbort = () => this.fail(new UpstreamError("the client went away"));
  #failed: Error | null = null;

  constructor(timeoutMs: number, what: string, signal?: AbortSignal) {
    this.#failure = new Promise<never>((_, reject) => (this.#fail = reject));
    this.#failure.catch(() => {});
    this.#timer = setTimeout(() => this.fail(new UpstreamError(`${what} timed out after ${timeoutMs / 1000} s`)), timeoutMs);
    this.#signal = signal;
    if (signal?.aborted) this.#onAbort();
    else signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  adopt(socket: net.Socket): void {
    this.#sockets.push(socket);
    if (this.#failed) socket.destroy();
  }

  fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = err;
    for (const s of this.#sockets) s.destroy();
    this.#fail(err);
  }

  run<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.#failure]);
  }

  end(): void {
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener("abort", this.#onAbort);
  }
}

/** Messages from the server during the startup, read one at a time. */
class Incoming {
  readonly #reader = new MessageReader();
  #wake: (() => void) | null = null;
  #ended: UpstreamError | null = null;
  readonly #onData = (chunk: Buffer) => {
    this.#reader.push(chunk);
    if (this.#reader.buffered > STARTUP_BYTES_MAX) this.#end("the server sent more than 1 MiB before it was ready");
    this.#notify();
  };
  readonly #onError = (err: NodeJS.ErrnoException) => this.#end(`the connection failed (${err.code ?? err.message})`);
  readonly #onClose = () => this.#end("the server closed the connection");

  constructor(private readonly socket: net.Socket) {
    socket.on("data", this.#onData);
    socket.on("error", this.#onError);
    socket.on("close", this.#onClose);
  }

  #end(reason: string): void {
    this.#ended ??= new UpstreamError(reason);
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async next(): Promise<Message> {
    for (;;) {
      const m = this.#reader.next();
      if (m !== null && "error" in m) throw new UpstreamError(`the server sent a malformed message (${m.error})`);
      if (m !== null) return m;
      if (this.#ended) throw this.#ended;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Stops listening; the socket is paused and the bytes read past the last message are returned. */
  detach(): Uint8Array {
    this.socket.pause();
    this.socket.off("data", this.#onData);
    this.socket.off("error", this.#onError);
    this.socket.off("close", this.#onClose);
    return this.#reader.drain();
  }
}

const int32 = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset, b.byteLength).getInt32(at);
const text = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8");
const md5hex = (...parts: (string | Uint8Array)[]) => {
  const h = createHash("md5");
  for (const p of parts) h.update(p);
  return h.digest("hex");
};

/** The server's ErrorResponse as a reason (its message, the password replaced should a server ever echo it). */
function serverError(body: Uint8Array, password: string): UpstreamError {
  const fields = parseErrorFields(body);
  let message = fields.get("M") ?? "the server refused the connection";
  if (password.length >= 4) message = message.split(password).join("credgate-redacted");
  return new UpstreamError(message);
}

/** Names in a SASL mechanism list (C strings ending with an empty one). */
function mechanisms(body: Uint8Array): string[] {
  const out: string[] = [];
  let at = 4;
  while (at < body.length) {
    const { value, next } = readCString(body, at);
    if (value === "") break;
    out.push(value);
    at = next;
  }
  return out;
}

function channelBinding(socket: net.Socket, offered: string[]): ChannelBinding {
  if (!(socket instanceof tls.TLSSocket)) return { kind: "none" };
  if (!offered.includes(SCRAM_PLUS)) return { kind: "unused" };
  const der = socket.getPeerCertificate()?.raw;
  if (!der || der.length === 0) throw new UpstreamError("the server's certificate is not available for channel binding");
  return { kind: "tls-server-end-point", data: tlsServerEndPoint(der) };
}

/** The login on an open connection: startup message, authentication, parameters, until ReadyForQuery. */
async function login(socket: net.Socket, user: string, password: string, params: Record<string, string>): Promise<UpstreamSession> {
  const incoming = new Incoming(socket);
  const encrypted = socket instanceof tls.TLSSocket;
  let scram: ScramClient | null = null;
  let authentication = "trust";
  socket.write(startupMessage(params));
  // Authentication.
  for (;;) {
    const m = await incoming.next();
    if (m.type === 0x45 /* E */) throw serverError(m.body, password);
    if (m.type === 0x4e /* N */ || m.type === 0x76 /* v: NegotiateProtocolVersion */) continue;
    if (m.type !== 0x52 /* R */ || m.body.length < 4) throw new UpstreamError(`the server sent an unexpected message ('${String.fromCharCode(m.type)}') during authentication`);
    const code = int32(m.body, 0);
    if (code === AUTH_OK) {
      if (scram && !scram.done) throw new UpstreamError("the server accepted the login without proving that it knows the password");
      break;
    }
    if (code === AUTH_CLEARTEXT) {
      if (!encrypted) throw new UpstreamError("the server asked for a cleartext password without TLS");
      authentication = "password";
      socket.write(passwordMessage(password));
    } else if (code === AUTH_MD5) {
      if (m.body.length < 8) throw new UpstreamError("the server sent a malformed MD5 request");
      authentication = "md5";
      socket.write(passwordMessage(`md5${md5hex(md5hex(password, user), m.body.subarray(4, 8))}`));
    } else if (code === AUTH_SASL) {
      if (scram) throw new UpstreamError("the server started SASL authentication twice");
      const offered = mechanisms(m.body);
      if (!offered.includes(SCRAM) && !offered.includes(SCRAM_PLUS)) {
        throw new UpstreamError(`the server asked for SASL authentication with ${offered.join(", ") || "no mechanism"}, which credgate does not answer`);
      }
      const binding = channelBinding(socket, offered);
      if (binding.kind !== "tls-server-end-point" && !offered.includes(SCRAM)) throw new UpstreamError("the server offered only SCRAM-SHA-256-PLUS, which needs TLS");
      scram = new ScramClient(password, binding);
      authentication = scram.mechanism;
      socket.write(saslInitialResponse(scram.mechanism, Buffer.from(scram.first())));
    } else if (code === AUTH_SASL_CONTINUE) {
      if (!scram) throw new UpstreamError("the server continued a SASL exchange that was not started");
      socket.write(saslResponse(Buffer.from(await scram.final(text(m.body.subarray(4))))));
    } else if (code === AUTH_SASL_FINAL) {
      if (!scram) throw new UpstreamError("the server ended a SASL exchange that was not started");
      scram.verify(text(m.body.subarray(4)));
    } else {
      const name = UNANSWERED[code] ?? `method ${code}`;
      throw new UpstreamError(`the server asked for ${name} authentication, which credgate does not answer (use scram-sha-256 for this user)`);
    }
  }
  // Parameters and the cancel key, until the server is ready.
  const parameters: [string, string][] = [];
  let backendKey: UpstreamSession["backendKey"] | null = null;
  for (;;) {
    const m = await incoming.next();
    if (m.type === 0x45 /* E */) throw serverError(m.body, password);
    if (m.type === 0x53 /* S */) {
      const name = readCString(m.body, 0);
      parameters.push([name.value, readCString(m.body, name.next).value]);
    } else if (m.type === 0x4b /* K */) {
      if (m.body.length < 8) throw new UpstreamError("the server sent a malformed BackendKeyData");
      backendKey = { processId: int32(m.body, 0), secretKey: int32(m.body, 4) };
    } else if (m.type === 0x5a /* Z */) {
      break;
    } else if (m.type !== 0x4e /* N */ && m.type !== 0x76 /* v */) {
      throw new UpstreamError(`the server sent an unexpected message ('${String.fromCharCode(m.type)}') before it was ready`);
    }
  }
  // A server without a cancel key (some poolers) gets none: a cancel then reaches nobody.
  return { socket, parameters, backendKey: backendKey ?? { processId: 0, secretKey: 0 }, pending: incoming.detach(), authentication };
}

function asUpstreamError(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (err instanceof DialError || err instanceof ScramError) return new UpstreamError(err.message);
  return new UpstreamError(`unexpected failure (${(err as Error).message})`);
}

/**
 * Connects and logs in to the credential's server as its real user. Resolves once the server is ready; rejects
 * with an UpstreamError (a server's refusal carries the server's own message).
 */
export async function connectUpstream(
  cred: UpstreamCredential,
  password: string,
  opts: {
    database: string;
    /** The agent's startup parameters (user and database aside): only display and time-limit settings pass (startupParams.ts). */
    startupParams: Record<string, string>;
    /** Sends `-c default_transaction_read_only=on` in the options. */
    readOnly: boolean;
    deps: UpstreamDeps;
    signal?: AbortSignal;
    /** Bound of the whole login (default STARTUP_TIMEOUT_MS). */
    timeoutMs?: number;
  },
): Promise<UpstreamSession> {
  const startup = upstreamStartupParams(cred.user, opts.database, opts.startupParams, opts.readOnly);
  if ("error" in startup) throw new UpstreamError(startup.error);
  const attempt = new Attempt(opts.timeoutMs ?? STARTUP_TIMEOUT_MS, "connecting to the database", opts.signal);
  try {
    const socket = await attempt.run(dialDatabase(cred, opts.deps, attempt));
    return await attempt.run(login(socket, cred.user, password, startup.params));
  } catch (err) {
    const failure = asUpstreamError(err);
    attempt.fail(failure);
    throw failure;
  } finally {
    attempt.end();
  }
}

/**
 * Forwards an agent's cancel: a new connection to the same server (same egress, proxy and TLS rules) carrying a
 * CancelRequest with the server's real key. The server answers nothing; it closes the connection.
 */
export async function forwardCancel(cred: DatabaseEndpoint, backendKey: UpstreamSession["backendKey"], deps: UpstreamDeps): Promise<void> {
  const attempt = new Attempt(CANCEL_TIMEOUT_MS, "sending the cancel request", undefined);
  try {
    const socket = await attempt.run(dialDatabase(cred, deps, attempt));
    await attempt.run(
      new Promise<void>((resolve) => {
        socket.on("error", () => resolve());
        socket.on("close", () => resolve());
        socket.on("data", () => {});
        socket.resume();
        socket.end(cancelRequest(backendKey.processId, backendKey.secretKey));
      }),
    );
    socket.destroy();
  } catch (err) {
    const failure = asUpstreamError(err);
    attempt.fail(failure);
    throw failure;
  } finally {
    attempt.end();
  }
}
