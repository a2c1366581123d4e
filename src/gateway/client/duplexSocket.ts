// TLS inside TLS (an HTTPS proxy connection, docs/gateway.md#listener, carrying an intercepted tunnel): Bun cannot upgrade a
// socket that is already TLS, so that one case goes through node:tls, which needs a node Duplex under it and
// gives one back. These two adapters join the AgentSocket world to node streams; nothing else uses them.
import { Duplex } from "node:stream";
import type { AgentSocket, AgentSocketEvents } from "./socket.ts";

/** A node Duplex over an AgentSocket (what node:tls reads the ciphertext from). */
export function duplexOver(socket: AgentSocket, initial: Buffer): Duplex {
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      if (socket.write(chunk)) callback();
      else waiting = callback;
    },
    final(callback) {
      socket.end();
      callback();
    },
    destroy(err, callback) {
      socket.destroy();
      callback(err);
    },
  });
  let waiting: ((err?: Error | null) => void) | null = null;
  socket.events = {
    data(chunk) {
      if (!duplex.push(chunk)) socket.pause();
    },
    drain() {
      const callback = waiting;
      waiting = null;
      callback?.();
    },
    close() {
      duplex.push(null);
      duplex.destroy();
    },
  };
  if (initial.length > 0) duplex.push(initial);
  return duplex;
}

/** An AgentSocket over a node Duplex (the node:tls socket of the inner TLS). */
export class DuplexAgentSocket implements AgentSocket {
  #events: AgentSocketEvents | null = null;
  closed = false;

  constructor(private readonly stream: Duplex) {
    stream.on("data", (chunk: Buffer) => this.#events?.data(chunk));
    stream.on("drain", () => this.#events?.drain());
    stream.on("error", () => stream.destroy());
    stream.on("close", () => {
      this.closed = true;
      for (const fn of this.#closedHooks) fn();
      this.#events?.close();
    });
  }

  readonly #closedHooks: (() => void)[] = [];

  onceClosed(fn: () => void): void {
    if (this.closed) fn();
    else this.#closedHooks.push(fn);
  }

  get events(): AgentSocketEvents | null {
    return this.#events;
  }

  set events(events: AgentSocketEvents | null) {
    this.#events = events;
  }

  get paused(): boolean {
    return this.stream.isPaused();
  }

  get ended(): boolean {
    return this.stream.writableEnded || this.stream.destroyed;
  }

  get needsDrain(): boolean {
    return this.stream.writableNeedDrain;
  }

  write(data: Uint8Array | string): boolean {
    if (this.ended) return false;
    return this.stream.write(typeof data === "string" ? Buffer.from(data) : data);
  }

  writeLatin1(text: string): boolean {
    return this.write(Buffer.from(text, "latin1"));
  }

  end(data?: Uint8Array | string): void {
    if (this.ended) return;
    if (data === undefined) this.stream.end();
    else this.stream.end(typeof data === "string" ? Buffer.from(data) : data);
  }

  destroy(): void {
    this.stream.destroy();
  }

  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    this.stream.resume();
  }
}
