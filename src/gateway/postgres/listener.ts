// The database listener (docs/databases.md#the-listener): credgate's PostgreSQL port (CREDGATE_DB_PORT), on
// Bun's native sockets like the gateway port. Each connection is a StartupConversation until its session is
// authenticated and connected upstream, then a DatabaseSession relaying both ways. It runs in the primary
// process only (not in gateway workers): a CancelRequest comes on a new connection, which must reach the
// process that holds the session it names.
import type { TCPSocketListener } from "bun";
import { metrics } from "../../observability/metrics.ts";
import { agentSocketHandlers, BunAgentSocket, type AgentSocket } from "../client/socket.ts";
import type { SelfLeaf } from "../tls.ts";
import type { AgentAuthDeps } from "./agentAuth.ts";
import { CancelKeys } from "./cancelKeys.ts";
import type { DbSession } from "./dbSession.ts";
import type { UpstreamSession } from "./upstream.ts";
import { DatabaseSession, type SessionDeps } from "./session.ts";
import { StartupConversation } from "./startup.ts";
import { backendKeyData, readyForQuery } from "./wire.ts";

export interface DatabaseListenerDeps {
  auth: AgentAuthDeps;
  session: SessionDeps;
  selfLeaf: SelfLeaf;
}

export class DatabaseListener {
  #server: TCPSocketListener<BunAgentSocket> | null = null;
  readonly #sockets = new Set<AgentSocket>();
  readonly #sessions = new Set<DatabaseSession>();
  readonly #cancelKeys = new CancelKeys();
  #stopping = false;

  constructor(private readonly deps: DatabaseListenerDeps) {}

  async listen(host: string, port: number): Promise<number> {
    this.#server = Bun.listen<BunAgentSocket>({
      hostname: host,
      port,
      exclusive: true,
      socket: {
        ...agentSocketHandlers,
        open: (socket) => {
          socket.setNoDelay(true);
          const sock = BunAgentSocket.accepted(socket);
          if (this.#stopping) return void sock.destroy();
          this.#sockets.add(sock);
          sock.onceClosed(() => this.#sockets.delete(sock));
          new StartupConversation(sock, socket.remoteAddress || null, {
            auth: this.deps.auth,
            selfLeaf: this.deps.selfLeaf,
            cancelKeys: this.#cancelKeys,
            started: (agent, upstream, db, token, early) => this.#start(agent, upstream, db, token, early),
          });
        },
      },
    });
    return this.#server.port;
  }

  /** The relay begins: credgate's BackendKeyData (the cancel key it will recognise), ReadyForQuery, then both ways. */
  #start(agent: AgentSocket, upstream: UpstreamSession, db: DbSession, token: string, early: Buffer): void {
    if (agent.closed) {
      upstream.socket.destroy();
      return;
    }
    const session = new DatabaseSession(agent, upstream, db, token, this.deps.session, (s) => {
      this.#sessions.delete(s);
      if (s.key) this.#cancelKeys.release(s.key);
      metrics.dbConnections.dec();
    });
    this.#sessions.add(session);
    metrics.dbConnections.inc();
    const key = this.#cancelKeys.issue(session);
    session.key = key;
    agent.write(backendKeyData(key.processId, key.secretKey));
    // The server's first ReadyForQuery was consumed by the login (upstream.ts); a new session is idle.
    agent.write(readyForQuery(0x49));
    session.start(upstream.pending, early);
    if (this.#stopping) session.shutdown();
  }

  /** Stops accepting; idle sessions end now (FATAL 57P01), busy ones once their replies are in. */
  close(): void {
    this.#stopping = true;
    this.#server?.stop(false);
    this.#server = null;
    for (const s of this.#sessions) s.shutdown();
  }

  /** Resolves once every connection has closed; callers bound it. */
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
    for (const s of this.#sessions) s.destroy();
    for (const s of this.#sockets) s.destroy();
  }
}
