// A raw byte pipe both ways between the agent's socket and an upstream node socket, with backpressure each
// way: a WebSocket after 101, or a passthrough tunnel. `closed` runs once, when either side has gone (both are
// closed then). `activity`, when given, is told of every chunk either way (the idle sweep, idle.ts). `rewrite`,
// when given, passes each chunk of a direction through a function first (WebSocket frames read by the guards and
// placeholder substitution: wsFrames.ts); null from it closes the pipe.
import type * as net from "node:net";
import type { AgentSocket } from "./socket.ts";

export interface PipeRewrite {
  toUpstream: ((chunk: Buffer) => Buffer | null) | null;
  toAgent: ((chunk: Buffer) => Buffer | null) | null;
}

export function pipeRaw(agent: AgentSocket, upstream: net.Socket, closed: (why: string) => void, activity: { active: boolean } | null = null, rewrite: PipeRewrite | null = null): void {
  let open = true;
  const close = (why: string) => {
    if (!open) return;
    open = false;
    upstream.destroy();
    agent.end();
    closed(why);
  };
  agent.events = {
    data(chunk) {
      if (activity) activity.active = true;
      if (rewrite?.toUpstream) {
        const out = rewrite.toUpstream(chunk);
        if (out === null) return close("refused by a guard");
        chunk = out;
      }
      if (!upstream.write(chunk)) agent.pause();
    },
    drain() {
      upstream.resume();
    },
    close() {
      close("agent closed");
    },
  };
  upstream.on("drain", () => agent.resume());
  upstream.on("data", (chunk: Buffer) => {
    if (activity) activity.active = true;
    if (rewrite?.toAgent) {
      const out = rewrite.toAgent(chunk);
      if (out === null) return close("refused by a guard");
      chunk = out;
    }
    if (!agent.write(chunk)) upstream.pause();
  });
  upstream.on("end", () => close("upstream closed"));
  upstream.on("close", () => close("upstream closed"));
  upstream.on("error", () => close("upstream error"));
  upstream.on("timeout", () => close("idle for 600 s"));
  agent.resume();
  upstream.resume();
}
