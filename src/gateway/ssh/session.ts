// SSH interception (docs/ssh.md#how-it-works): inside an authenticated CONNECT to port 22 of a host an `ssh`
// secret names, credgate is the SSH server. It presents a host certificate for the CONNECT host signed by its
// SSH CA, accepts the agent without a key (the tunnel is authenticated already), and relays `session` channels
// with `exec` only, each judged first (judge.ts), to one upstream connection logged in with the stored key
// (upstream.ts), opened at the first command that passes. Everything else is refused with a line on the
// channel's stderr and exit status 1; port forwarding channels and requests are refused at the protocol level.
// One request-log row per command (and per refused shell or subsystem).
import type { Duplex } from "node:stream";
import type { Client, ClientChannel, Connection, ServerChannel, Session } from "ssh2";
import { ssh2 } from "../../crypto/ssh2Module.ts";
import { sshDisplayHost } from "../../core/sshRules.ts";
import { log } from "../../observability/log.ts";
import type { SshCertificateAuthority } from "../../crypto/sshCertificate.ts";
import type { Outbound } from "../../services/outbound.ts";
import type { RequestLogService } from "../../services/requestLogs.ts";
import { duplexOver } from "../client/duplexSocket.ts";
import type { AgentSocket } from "../client/socket.ts";
import { latencyOf, writeRequestLog } from "../requestLog.ts";
import type { AgentCredentials, GatewaySnapshot, SshCredential } from "../snapshot.ts";
import type { Tunnel } from "../tunnel.ts";
import { certifiedHostKey } from "./hostKey.ts";
import type { ExecJudge, ExecVerdict, MatchedRule } from "./judge.ts";
import { storedKey, type KeyVault } from "./storedKey.ts";
import { connectUpstream, type UpstreamFailure } from "./upstream.ts";

const SSH_PORT = 22;
/**
 * AES-GCM only toward the agent: the client's order decides, and OpenSSH would pick AES-CTR with a MAC that ssh2
 * computes separately (measured: the clone bench ran ~0.7× of direct with it, ~0.9× with GCM). OpenSSH ≥ 6.2,
 * Go's x/crypto and libssh2 ≥ 1.11 speak GCM (docs/ssh.md#the-ssh-implementation).
 */
const CIPHERS = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"];

export interface SshInterceptionDeps {
  outbound: Pick<Outbound, "connect">;
  judge: ExecJudge;
  requestLogs: Pick<RequestLogService, "enqueue" | "update">;
  ca: () => Promise<SshCertificateAuthority>;
  /** The gateway's external vault cache: a key kept there is read through it (docs/ssh.md#keys-in-an-external-vault). */
  vault: KeyVault;
  /** Read again before every command: the token, the agent's right to the key and its current rules. */
  snapshot: Pick<GatewaySnapshot, "agentForToken" | "credentials">;
}

type Row = { status: number; decision: ExecVerdict["decision"]; rule?: MatchedRule | null; approvalId?: string | null };

/** Why an agent's ssh gets no shell, terminal, subsystem or forwarding (docs/ssh.md#refusals). */
export function notAllowed(what: string): string {
  return `credgate: ${what} is not allowed through credgate`;
}

export class SshInterception {
  constructor(private readonly deps: SshInterceptionDeps) {}

  /** The key for a CONNECT to port 22 of a host one of the agent's `ssh` secrets names, else null (an ordinary tunnel). */
  credentialFor(tunnel: Tunnel): SshCredential | null {
    if (tunnel.port !== SSH_PORT || !tunnel.authenticated) return null;
    return tunnel.credentials.ssh.find((c) => c.hostMatch(tunnel.host)) ?? null;
  }

  async serve(sock: AgentSocket, tunnel: Tunnel, credential: SshCredential, first: Buffer): Promise<void> {
    const ca = await this.deps.ca();
    if (sock.closed) return;
    const hostKey = certifiedHostKey(ca.hostCertificate(tunnel.host));
    const server = new (ssh2().Server)({ hostKeys: [{ key: hostKey.key } as never], ident: "credgate", algorithms: { cipher: CIPHERS as never } });
    const duplex: Duplex = duplexOver(sock, first);
    server.on("connection", (client: Connection) => {
      hostKey.bind((client as unknown as { _protocol: unknown })._protocol);
      new AgentConnection(this.deps, client, tunnel, credential).start();
    });
    server.injectSocket(duplex as never);
    sock.resume();
  }
}

/** One agent's SSH connection: its sessions, and the upstream connection they share. */
class AgentConnection {
  #upstream: Promise<Client | UpstreamFailure> | null = null;
  readonly #gone = new AbortController();
  readonly #displayHost: string;

  constructor(
    private readonly deps: SshInterceptionDeps,
    private readonly client: Connection,
    private readonly tunnel: Tunnel,
    private credential: SshCredential,
  ) {
    this.#displayHost = sshDisplayHost(tunnel.host, tunnel.port);
  }

  start(): void {
    const client = this.client;
    // The agent's ssh went away or spoke badly: its connection closes, and with it the upstream one.
    client.on("error", () => {});
    client.on("close", () => {
      this.#gone.abort();
      void this.#upstream?.then((u) => {
        if ("end" in u) u.end();
      });
    });
    // The tunnel is the agent's authentication: whatever the agent's ssh offers is accepted.
    client.on("authentication", (ctx) => ctx.accept());
    client.on("ready", () => {
      client.on("session", (accept) => this.#session(accept()));
    });
  }

  #session(session: Session): void {
    let terminal = false;
    let agentForwarding = false;
    let gitProtocol: string | null = null;
    session.on("pty", (_accept, reject) => {
      terminal = true;
      reject?.();
    });
    session.on("auth-agent", (_accept, reject) => {
      agentForwarding = true;
      reject?.();
    });
    session.on("x11", (_accept, reject) => reject?.());
    session.on("env", (accept, reject, info) => {
      // Only git's protocol version reaches the server (docs/ssh.md#commands).
      if (info.key === "GIT_PROTOCOL" && /^[A-Za-z0-9=:._-]{1,64}$/.test(info.val)) {
        gitProtocol = info.val;
        accept?.();
      } else reject?.();
    });
    session.on("shell", (accept) => this.#refuse(accept(), "shell", notAllowed("a shell")));
    session.on("subsystem", (accept, _reject, info) => this.#refuse(accept(), `subsystem ${info.name}`, notAllowed(`the subsystem ${info.name}`)));
    session.on("exec", (accept, _reject, info) => {
      const channel = accept();
      if (agentForwarding) return this.#refuse(channel, info.command, notAllowed("agent forwarding"));
      if (terminal) channel.stderr.write(`${notAllowed("a terminal")}\n`);
      void this.#exec(channel, info.command, gitProtocol);
    });
  }

  /** A refusal: the reason on stderr, exit status 1, the channel closed; one row (403). */
  #refuse(channel: ServerChannel, what: string, message: string, row: Row = { status: 403, decision: "blocked" }, started = performance.now()): void {
    channel.stderr.write(`${message}\n`);
    channel.exit(1);
    channel.end();
    this.#log(what, row, started);
  }

  /**
   * The agent's current view for one command on this connection (docs/ssh.md#commands): its token still valid
   * (a regenerated one ends every command from then on) and the key still its own, with today's rules.
   */
  async #current(): Promise<{ credentials: AgentCredentials; credential: SshCredential } | string> {
    const agent = await this.deps.snapshot.agentForToken(this.tunnel.token ?? "");
    if (!agent || agent.id !== this.tunnel.agent.id) return "credgate: the agent token is no longer valid";
    const credentials = await this.deps.snapshot.credentials(agent);
    const credential = credentials.ssh.find((c) => c.secretId === this.credential.secretId) ?? null;
    if (!credential) return `credgate: no SSH key for ${this.tunnel.host} is available to this agent any more`;
    return { credentials, credential };
  }

  async #exec(channel: ServerChannel, command: string, gitProtocol: string | null): Promise<void> {
    const started = performance.now();
    let heldRow: string | null = null;
    let current: { credentials: AgentCredentials; credential: SshCredential } | string;
    try {
      current = await this.#current();
    } catch {
      current = "credgate: gateway internal error";
    }
    if (typeof current === "string") return this.#refuse(channel, command, current, { status: current.includes("token") ? 407 : 403, decision: "blocked" }, started);
    this.credential = current.credential;
    const pending = this.deps.judge.judge(
      {
        credentials: current.credentials,
        credential: current.credential,
        host: this.tunnel.host,
        displayHost: this.#displayHost,
        onHeld: (approvalId, rule) => {
          heldRow = this.#log(command, { status: 202, decision: "approval_pending", rule, approvalId }, started);
        },
      },
      command,
      this.#gone.signal,
    );
    const verdict = pending instanceof Promise ? await pending : pending;
    const row = (status: number, extra: Partial<Row> = {}): Row => ({ status, decision: verdict.decision, rule: verdict.rule ?? null, approvalId: verdict.approvalId ?? null, ...extra });
    const finish = (r: Row) => {
      if (heldRow !== null) this.deps.requestLogs.update(heldRow, { status: r.status, decision: r.decision, latencyMs: latencyOf(started) });
      else this.#log(command, r, started);
    };
    if (!verdict.ok) {
      channel.stderr.write(`${verdict.message}\n`);
      channel.exit(1);
      channel.end();
      return finish(row(403));
    }
    const upstream = await this.#connectUpstream();
    if (!("exec" in upstream)) {
      this.#upstream = null;
      // The reason without the value (docs/ssh.md#keys-in-an-external-vault): the row says only 502.
      if (upstream.kind === "key") log.warn("SSH key unusable", { secretId: this.credential.secretId, reason: upstream.message });
      channel.stderr.write(`${upstream.message}\n`);
      channel.exit(1);
      channel.end();
      return finish(row(upstream.kind === "host-key" ? 403 : 502, { decision: upstream.kind === "host-key" ? "blocked" : "error" }));
    }
    upstream.exec(command, gitProtocol ? { env: { GIT_PROTOCOL: gitProtocol } } : {}, (err, up) => {
      if (err) {
        channel.stderr.write(`credgate: ${this.#displayHost} refused the command: ${err.message}\n`);
        channel.exit(1);
        channel.end();
        return finish(row(400));
      }
      relay(channel, up, (code) => finish(row(code === 0 ? 200 : 400)));
    });
  }

  #connectUpstream(): Promise<Client | UpstreamFailure> {
    if (this.#upstream === null) {
      const credential = this.credential;
      this.#upstream = storedKey(credential, this.deps.vault).then((k) =>
        k.ok
          ? connectUpstream(this.deps.outbound, { host: this.tunnel.host, port: this.tunnel.port, credential, key: k.key, egress: this.tunnel.egress })
          : { kind: "key", message: k.message },
      );
    }
    return this.#upstream;
  }

  #log(command: string, r: Row, started: number): string {
    return writeRequestLog(this.deps.requestLogs as RequestLogService, {
      agent: this.tunnel.agent,
      method: "SSH",
      host: this.#displayHost,
      path: command,
      status: r.status,
      started,
      injectionCount: r.decision === "allowed" || r.decision.startsWith("approv") ? 1 : 0,
      decision: r.decision,
      matchedRule: r.rule ?? null,
      approvalId: r.approvalId ?? null,
      requestId: this.tunnel.requestId,
    });
  }
}

/**
 * Bytes both ways with backpressure (pipe); the server's exit status reaches the agent after every byte of its
 * output, then EOF and close. `done` hears the exit status (null when the server sent none).
 */
function relay(agent: ServerChannel, up: ClientChannel, done: (code: number | null) => void): void {
  let code: number | null = null;
  // Output ends (stdout, stderr) and the channel's close: the server sends its exit status between EOF and close.
  let open = 3;
  agent.pipe(up);
  up.pipe(agent, { end: false });
  up.stderr.pipe(agent.stderr, { end: false });
  up.on("exit", (c: number | null) => (code = typeof c === "number" ? c : null));
  const ended = () => {
    if (--open > 0) return;
    const close = () => {
      agent.exit(code ?? 1);
      agent.end();
      done(code);
    };
    if (agent.writableLength > 0 || agent.stderr.writableLength > 0) {
      // Output still queued behind the agent's window: the exit status goes after it.
      const wait = () => (agent.writableLength > 0 || agent.stderr.writableLength > 0 ? setTimeout(wait, 5) : close());
      wait();
    } else close();
  };
  up.once("end", ended);
  up.stderr.once("end", ended);
  up.once("close", ended);
  agent.once("close", () => up.close());
}
