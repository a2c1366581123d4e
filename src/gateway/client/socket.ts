// The agent's side of a connection as the gateway reads and writes it. One small interface over Bun's native
// sockets (TCP, and TLS terminated on the same socket with upgradeTLS: no node streams on the hot path) and,
// for the rare TLS inside the HTTPS proxy's own TLS, over a node Duplex (duplexSocket.ts). Writes never
// block: what the socket did not take is queued, and `drain` says when it has gone.
import type { Socket, SocketHandler } from "bun";
import { OutgoingBytes, type BatchedSocket, type Outgoing } from "../writeBatch.ts";

/** Whoever reads the socket now: the front while it reads the first head, then an Http1AgentConnection or a relay. */
export interface AgentSocketEvents {
  data(chunk: Buffer): void;
  drain(): void;
  close(): void;
}

export interface AgentSocket {
  events: AgentSocketEvents | null;
  /** False when bytes are queued: wait for `drain` before writing more. */
  write(data: Uint8Array | string): boolean;
  /** Writes latin1 text (a head, a chunk-size line): one byte per character, as heads are read. */
  writeLatin1(text: string): boolean;
  /** Closes the write side once the queue has gone. */
  end(data?: Uint8Array | string): void;
  destroy(): void;
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  /** `end` or `destroy` was called. */
  readonly ended: boolean;
  readonly closed: boolean;
  readonly needsDrain: boolean;
  /** `fn` runs once the socket has closed, whoever reads it then (right away when it already has). */
  onceClosed(fn: () => void): void;
}

/** Strings are UTF-8, as node sockets take them (the raw answers count their length so). */
const bytesOf = (data: Uint8Array | string): Uint8Array => (typeof data === "string" ? Buffer.from(data) : data);

export class BunAgentSocket implements AgentSocket, BatchedSocket {
  events: AgentSocketEvents | null = null;
  paused = false;
  ended = false;
  closed = false;
  /** The TLS socket this raw one was upgraded to: the raw side still hears the ciphertext, which nobody wants. */
  upgradedTo: BunAgentSocket | null = null;
  /** TLS terminated on this socket (Bun cannot terminate TLS again inside it). */
  tls = false;
  /** The TLS handshake with the agent completed. */
  handshaken = false;
  /** Told once the TLS handshake has completed, with the protocol ALPN selected (null: none). */
  onHandshake: ((alpn: string | null) => void) | null = null;
  /** Bytes of this turn, written at its end, and what the socket did not take yet (writeBatch.ts). */
  readonly #out = new OutgoingBytes(this);
  /** A writer was told to wait: it hears `drain` once everything has gone. */
  #owesDrain = false;
  #closedHooks: (() => void)[] | null = null;
  #endWhenDrained = false;

  /** Set at once for an accepted socket; for a TLS one, as soon as upgradeTLS returns it (see `upgradeTo`). */
  socket!: Socket<BunAgentSocket>;

  static accepted(socket: Socket<BunAgentSocket>): BunAgentSocket {
    const agent = new BunAgentSocket();
    agent.socket = socket;
    socket.data = agent;
    return agent;
  }

  /**
   * Terminates TLS on this socket (the bytes already read, `initial`, are the ClientHello): the returned
   * socket carries the plaintext; this one is left to Bun.
   */
  upgradeTo(tls: { cert: string; key: string; ALPNProtocols?: Buffer }, initial: Buffer, handlers: SocketHandler<BunAgentSocket>): BunAgentSocket {
    // The plain bytes of this turn (the 200 to the CONNECT) must leave before the TLS handshake's.
    this.flushBatch();
    const secure = new BunAgentSocket();
    secure.tls = true;
    this.upgradedTo = secure;
    // initialData: the ClientHello the front had to read to know it was TLS (Bun 1.4 feeds it to the TLS layer).
    const options = { data: secure, tls, socket: handlers, initialData: initial };
    const [, socket] = this.socket.upgradeTLS<BunAgentSocket>(options);
    secure.socket = socket;
    return secure;
  }

  get needsDrain(): boolean {
    return this.#out.needsDrain;
  }

  write(data: Uint8Array | string): boolean {
    return this.#add(bytesOf(data));
  }

  writeLatin1(text: string): boolean {
    return this.#add(text);
  }

  #add(part: Outgoing): boolean {
    if (this.ended || this.closed) return false;
    if (this.#out.add(part)) return true;
    this.#owesDrain = true;
    return false;
  }

  flushBatch(): void {
    if (this.closed) return this.#out.clear();
    const all = this.#out.writeBatch(this.socket);
    if (all === null) return;
    if (all) return this.#drained();
    // Whoever sees needsDrain now waits for `drain`.
    this.#owesDrain = true;
  }

  end(data?: Uint8Array | string): void {
    if (data !== undefined) this.write(data);
    if (this.ended) return;
    this.ended = true;
    if (!this.#out.empty) this.#endWhenDrained = true;
    else this.socket.end();
  }

  destroy(): void {
    this.ended = true;
    this.#out.clear();
    this.socket.terminate();
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  onceClosed(fn: () => void): void {
    if (this.closed) fn();
    else (this.#closedHooks ??= []).push(fn);
  }

  // --- what the socket handlers deliver ---

  onData(chunk: Buffer): void {
    if (this.upgradedTo === null) this.events?.data(chunk);
  }

  onDrain(): void {
    if (this.upgradedTo !== null) return;
    // Bun also says `drain` when nothing was queued (a TLS socket, once its handshake has gone out). This
    // turn's batch may still be waiting for the end of the turn: only then has everything gone, and ending
    // the socket before would lose it (an answer with `Connection: close` never arrived).
    if (this.#out.writeQueued(this.socket) && this.#out.empty) this.#drained();
  }

  /** Everything written: end if asked to, else tell a waiting writer. */
  #drained(): void {
    if (this.#endWhenDrained) {
      this.#endWhenDrained = false;
      this.socket.end();
      return;
    }
    if (!this.#owesDrain) return;
    this.#owesDrain = false;
    this.events?.drain();
  }

  onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.ended = true;
    this.#out.clear();
    if (this.#closedHooks) for (const fn of this.#closedHooks) fn();
    if (this.upgradedTo !== null) this.upgradedTo.onClose();
    else this.events?.close();
  }
}

/** Socket handlers that hand every event to the socket's BunAgentSocket (shared by every socket: no closures). */
export const agentSocketHandlers: SocketHandler<BunAgentSocket> = {
  data(socket, chunk) {
    socket.data.onData(chunk);
  },
  drain(socket) {
    socket.data.onDrain();
  },
  close(socket) {
    socket.data?.onClose();
  },
  handshake(socket, success) {
    // A server never asks for a client certificate, so the authorization error is not ours to judge.
    if (!success) return;
    const agent = socket.data;
    agent.handshaken = true;
    agent.onHandshake?.(socket.alpnProtocol || null);
  },
  // An error is always followed by close.
  error() {},
};
