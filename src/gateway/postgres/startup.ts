// A connection to the database listener until its session starts (docs/databases.md#the-listener): the
// untyped startup packets — SSLRequest (answered `S`, then TLS with credgate's own leaf of the gateway CA),
// GSSENCRequest (`N`), CancelRequest (matched to a session by credgate's key), StartupMessage — then the
// cleartext password (the agent token), authentication (agentAuth.ts) and the server's parameters. A
// connection that has not finished all this within 60 seconds is closed, as PostgreSQL's
// authentication_timeout does. Every refusal is a FATAL ErrorResponse.
import { agentSocketHandlers, BunAgentSocket, type AgentSocket } from "../client/socket.ts";
import type { SelfLeaf } from "../tls.ts";
import { authenticate, refusalBeforePassword, type AgentAuthDeps, type StartupFacts } from "./agentAuth.ts";
import type { CancelKeys } from "./cancelKeys.ts";
import type { DbSession } from "./dbSession.ts";
import type { UpstreamSession } from "./upstream.ts";
import { log } from "../../observability/log.ts";
import { authenticationTimeout, protocolViolation, unsupportedProtocol, upstreamFailed, type Refusal } from "./refusals.ts";
import {
  authenticationCleartextPassword,
  authenticationOk,
  errorResponse,
  MAX_STARTUP_PACKET,
  message,
  parameterStatus,
  parsePassword,
  parseStartupPacket,
  type StartupPacket,
} from "./wire.ts";

/** The password message carries an agent token: far below this. */
const MAX_PASSWORD_MESSAGE = 4096;
export const AUTHENTICATION_TIMEOUT_MS = 60_000;
const p = 0x70;

export interface StartupDeps {
  auth: AgentAuthDeps;
  selfLeaf: SelfLeaf;
  cancelKeys: CancelKeys;
  /** The session begins: the listener relays it from here. `early`: the agent's bytes that came after its password. */
  started(agent: AgentSocket, upstream: UpstreamSession, db: DbSession, token: string, early: Buffer): void;
}

type Phase = "startup" | "password" | "authenticating" | "done";

export class StartupConversation {
  #sock: AgentSocket;
  #secure = false;
  #buf: Buffer = Buffer.alloc(0);
  #phase: Phase = "startup";
  #facts: StartupFacts | null = null;
  readonly #abort = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout>;

  constructor(
    sock: BunAgentSocket,
    private readonly peer: string | null,
    private readonly deps: StartupDeps,
  ) {
    this.#sock = sock;
    this.#timer = setTimeout(() => this.#timedOut(), AUTHENTICATION_TIMEOUT_MS);
    this.#listen(sock);
    sock.onceClosed(() => this.#gone());
  }

  #listen(sock: AgentSocket): void {
    sock.events = { data: (chunk) => this.#data(chunk), drain() {}, close: () => this.#gone() };
  }

  #data(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    if (this.#phase === "startup") this.#readPacket();
    else if (this.#phase === "password") this.#readPassword();
    // While authenticating (or once done) the bytes wait in #buf: they belong to the session.
  }

  #readPacket(): void {
    const buf = this.#buf;
    if (buf.length < 4) return;
    const length = buf.readInt32BE(0);
    if (length < 8 || length > MAX_STARTUP_PACKET) return this.#refuse(protocolViolation("invalid length of startup packet"));
    if (buf.length < length) return;
    const code = buf.readInt32BE(4);
    // Not a request code (1234.56xx) nor protocol 3: PostgreSQL answers 0A000.
    if (code >>> 16 !== 1234 && code >>> 16 !== 3) return this.#refuse(unsupportedProtocol(code >>> 16, code & 0xffff));
    const packet = parseStartupPacket(buf.subarray(0, length));
    this.#buf = buf.subarray(length);
    if ("error" in packet) return this.#refuse(protocolViolation(packet.error));
    this.#packet(packet);
  }

  #packet(packet: StartupPacket): void {
    switch (packet.kind) {
      case "ssl":
        return void this.#startTls();
      case "gssenc":
        // No GSSAPI encryption here: the client goes on with SSLRequest or a plain startup.
        this.#sock.write("N");
        return this.#readPacket();
      case "cancel": {
        this.deps.cancelKeys.find(packet.processId, packet.secretKey)?.cancel();
        // As PostgreSQL: no answer, the connection is closed.
        return this.#close();
      }
      case "startup":
        return this.#startup(packet.protocol, packet.params);
    }
  }

  /** `S`, then TLS on the same socket with the gateway CA's leaf for credgate's own names. */
  async #startTls(): Promise<void> {
    const raw = this.#sock;
    // Bytes after an SSLRequest, before the handshake, would be read as if encrypted (CVE-2021-23214).
    if (this.#secure || this.#buf.length > 0 || !(raw instanceof BunAgentSocket)) return this.#refuse(protocolViolation("unexpected data after SSLRequest"));
    raw.events = null;
    raw.pause();
    const pending = this.deps.selfLeaf.context();
    const leaf = pending instanceof Promise ? await pending : pending;
    if (raw.closed) return;
    raw.write("S");
    const secure = raw.upgradeTo(leaf, Buffer.alloc(0), agentSocketHandlers);
    this.#sock = secure;
    this.#secure = true;
    this.#listen(secure);
    secure.onceClosed(() => this.#gone());
    raw.resume();
  }

  #startup(protocol: number, params: Map<string, string>): void {
    const major = protocol >>> 16;
    const minor = protocol & 0xffff;
    if (major !== 3) return this.#refuse(unsupportedProtocol(major, minor));
    const facts: StartupFacts = { params, secure: this.#secure, peer: this.peer };
    const refusal = refusalBeforePassword(facts);
    if (refusal !== null) return this.#refuse(refusal);
    this.#facts = facts;
    const protocolOptions = [...params.keys()].filter((k) => k.startsWith("_pq_."));
    // A newer minor version, or protocol options: say what credgate speaks (3.0, no options), as PostgreSQL does.
    if (minor > 0 || protocolOptions.length > 0) this.#sock.write(negotiateProtocolVersion(0, protocolOptions));
    this.#sock.write(authenticationCleartextPassword());
    this.#phase = "password";
    this.#readPassword();
  }

  #readPassword(): void {
    const buf = this.#buf;
    if (buf.length < 5) return;
    const length = buf.readInt32BE(1);
    if (buf[0] !== p) return this.#refuse(protocolViolation(`expected a password message, got message type "${String.fromCharCode(buf[0]!)}"`));
    if (length < 5 || length > MAX_PASSWORD_MESSAGE) return this.#refuse(protocolViolation("invalid length of password message"));
    if (buf.length < length + 1) return;
    const body = buf.subarray(5, length + 1);
    if (body.indexOf(0) !== body.length - 1) return this.#refuse(protocolViolation("malformed password message"));
    const token = parsePassword(body);
    this.#buf = buf.subarray(length + 1);
    this.#phase = "authenticating";
    void this.#authenticate(token);
  }

  async #authenticate(token: string): Promise<void> {
    let result: Awaited<ReturnType<typeof authenticate>>;
    try {
      result = await authenticate(this.#facts!, token, this.deps.auth, this.#abort.signal);
    } catch (err) {
      log.error("database listener: authentication failed unexpectedly", { error: (err as Error).message });
      result = { ok: false, refusal: upstreamFailed("internal error") };
    }
    if (this.#phase !== "authenticating") {
      // Timed out or gone meanwhile.
      if (result.ok) result.upstream.socket.destroy();
      return;
    }
    if (!result.ok) return this.#refuse(result.refusal);
    this.#phase = "done";
    clearTimeout(this.#timer);
    const sock = this.#sock;
    sock.events = null;
    sock.pause();
    const { upstream } = result;
    sock.write(authenticationOk());
    for (const [name, value] of upstream.parameters) sock.write(parameterStatus(name, value));
    this.deps.started(sock, upstream, result.db, token, this.#buf);
  }

  #refuse(refusal: Refusal): void {
    if (this.#phase === "done") return;
    this.#phase = "done";
    clearTimeout(this.#timer);
    this.#abort.abort();
    this.#sock.end(errorResponse("FATAL", refusal.code, refusal.message));
  }

  #timedOut(): void {
    if (this.#phase === "done") return;
    // Before a startup message there is no one to tell (a TLS handshake, or a client that sent nothing).
    if (this.#facts === null) return this.#close();
    this.#refuse(authenticationTimeout);
  }

  #close(): void {
    this.#phase = "done";
    clearTimeout(this.#timer);
    this.#abort.abort();
    this.#sock.destroy();
  }

  #gone(): void {
    if (this.#phase === "done") return;
    this.#phase = "done";
    clearTimeout(this.#timer);
    this.#abort.abort();
  }
}

/** NegotiateProtocolVersion ('v'): the newest minor version credgate speaks and the options it did not recognise. */
function negotiateProtocolVersion(minor: number, options: string[]): Uint8Array {
  const names = options.map((o) => Buffer.from(`${o}\0`));
  const body = Buffer.alloc(8);
  body.writeInt32BE(0x30000 | minor, 0);
  body.writeInt32BE(options.length, 4);
  return message("v", Buffer.concat([body, ...names]));
}
