// The stages' test kit (docs/gateway.md#the-test-kit): real ProxyRequests and Tunnels, built the way the
// gateway builds them (a request from an AgentSide made for tests, a CONNECT from real head bytes), the agent
// views and secrets the snapshot would hold, the stage dependencies over real services, and a way to read a
// reply through its transforms. Nothing here stands in for the gateway's own code; nothing in the gateway
// imports it.
import { compileHostPattern, compilePathPattern } from "../core/patterns.ts";
import type { Config } from "../runtime/config.ts";
import type { Services } from "../services/index.ts";
import type { AgentSide, GoneWatcher } from "./agentSide.ts";
import type { AgentSocket } from "./client/socket.ts";
import type { Flow } from "./flow.ts";
import { absoluteDestination, destinationsIn } from "./handler.ts";
import { isWebSocketUpgrade } from "./headers.ts";
import { parseAuthority, parseRequestHead, type HeaderLines } from "./http1/head.ts";
import { pipelineDeps } from "./index.ts";
import type { PipelineDeps } from "./pipeline.ts";
import type { Reply } from "./reply.ts";
import { ProxyRequest } from "./request.ts";
import { GatewaySnapshot, type AgentCredentials, type AgentEntry, type CompiledSecret } from "./snapshot.ts";
import type { Stage, StageKey } from "./stage.ts";
import { Tunnel } from "./tunnel.ts";

type TestHeaders = Record<string, string> | [string, string][];

function linesOf(headers: TestHeaders | undefined): HeaderLines {
  if (!headers) return [];
  return Array.isArray(headers) ? headers.map(([n, v]) => [n, v]) : Object.entries(headers);
}

function streamOf(body: string | Uint8Array): ReadableStream<Uint8Array> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

/** The agent's side of one request, as a test writes it: no socket behind it unless `takeOver` is given one. */
export class TestAgentSide implements AgentSide {
  readonly headerLines: HeaderLines;
  readonly body: ReadableStream<Uint8Array> | null;
  #headers: Headers | null = null;
  #controller = new AbortController();
  #watchers: GoneWatcher[] = [];
  #gone = false;
  /** A gRPC call over HTTP/2 (what an h2 stream with an application/grpc content type says). */
  grpc = false;
  trailers: HeaderLines | null = null;

  constructor(
    readonly method: string,
    readonly target: string,
    headers: TestHeaders = [],
    body: string | Uint8Array | ReadableStream<Uint8Array> | null = null,
    readonly chunked = false,
    private readonly socket: { socket: AgentSocket; buffered: Buffer } | null = null,
  ) {
    const lines = linesOf(headers);
    // A body of known bytes is framed as a client frames it: with its Content-Length, unless sent chunked.
    if (body !== null && !(body instanceof ReadableStream) && !chunked && !lines.some(([n]) => /^(content-length|transfer-encoding)$/i.test(n))) {
      lines.push(["content-length", String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength)]);
    }
    this.headerLines = lines;
    this.body = body === null || body instanceof ReadableStream ? body : streamOf(body);
  }

  get headers(): Headers {
    return (this.#headers ??= new Headers(this.headerLines));
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get gone(): boolean {
    return this.#gone;
  }

  watchGone(watcher: GoneWatcher): void {
    this.#watchers.push(watcher);
  }

  unwatchGone(watcher: GoneWatcher): void {
    this.#watchers = this.#watchers.filter((w) => w !== watcher);
  }

  /** The agent goes away: watchers hear it and the signal aborts, as when its connection closes. */
  goAway(): void {
    if (this.#gone) return;
    this.#gone = true;
    for (const w of this.#watchers) w.agentGone();
    this.#controller.abort();
  }

  takeOver(): { socket: AgentSocket; buffered: Buffer } {
    if (!this.socket) throw new Error("this test request has no connection to take over");
    return this.socket;
  }
}

export interface TestTunnelInit {
  /** The CONNECT target, `host:port`. */
  authority: string;
  /** The agent token in its Proxy-Authorization (none when null). */
  token?: string | null;
  /** More header lines of the CONNECT head. */
  headers?: TestHeaders;
  /** Bytes the agent sent after the head. */
  early?: Buffer;
}

/** A CONNECT as the listener reads it: the head is written out and parsed by the gateway's parser. */
export function testTunnel(init: TestTunnelInit): Tunnel {
  const lines = [`CONNECT ${init.authority} HTTP/1.1`, `Host: ${init.authority}`];
  const token = init.token === undefined ? "agt_test" : init.token;
  if (token !== null) lines.push(`Proxy-Authorization: Basic ${Buffer.from(`x:${token}`).toString("base64")}`);
  for (const [name, value] of linesOf(init.headers)) lines.push(`${name}: ${value}`);
  const bytes = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  const head = parseRequestHead(bytes, bytes.length - 4);
  const authority = parseAuthority(init.authority);
  if (!head || !authority) throw new Error(`not a CONNECT the gateway would read: ${init.authority}`);
  return new Tunnel(head, authority, init.early ?? Buffer.alloc(0));
}

export interface TestRequestInit {
  /** The request-target as the agent sends it: a path inside a tunnel, a URL on a proxy connection. */
  target: string;
  method?: string;
  headers?: TestHeaders;
  body?: string | Uint8Array | ReadableStream<Uint8Array> | null;
  /** The agent sent its body chunked. */
  chunked?: boolean;
  /** Inside this tunnel (built with testTunnel), or `host[:port]` of one made here; omitted: a proxy connection (absolute-form target). */
  tunnel?: Tunnel | string;
  /** What the agent speaks inside the tunnel (https unless said). */
  scheme?: "https" | "http";
  /** The agent side itself, when the test needs to drive it (goAway, takeOver). */
  side?: TestAgentSide;
}

/** A proxied request, built as the gateway's handler builds it. */
export function testRequest(init: TestRequestInit): ProxyRequest {
  const side = init.side ?? new TestAgentSide(init.method ?? "GET", init.target, init.headers, init.body ?? null, init.chunked ?? false);
  if (init.tunnel === undefined) {
    const to = absoluteDestination(side.target);
    if (!to) throw new Error(`a request on a proxy connection needs an http(s) URL, got ${side.target}`);
    return new ProxyRequest(side, null, to, false);
  }
  const tunnel = typeof init.tunnel === "string" ? testTunnel({ authority: init.tunnel.includes(":") ? init.tunnel : `${init.tunnel}:443` }) : init.tunnel;
  const to = destinationsIn(tunnel, init.scheme ?? "https")(side.target);
  return new ProxyRequest(side, tunnel, to, isWebSocketUpgrade(side.headerLines));
}

export function agentEntry(parts: Partial<AgentEntry> = {}): AgentEntry {
  return { id: "agent-1", projectId: "project-1", organizationId: "org-1", name: "Test agent", identifier: "test-agent", mode: "all", ...parts };
}

/** An agent's resolved view with only what a test names; everything else empty (no policy, nothing granted). */
export function agentCredentials(parts: Partial<AgentCredentials> = {}): AgentCredentials {
  return {
    agent: parts.agent ?? agentEntry(),
    injectable: [],
    visible: [],
    connections: [],
    visibleConnections: [],
    databases: new Map(),
    ssh: [],
    policy: { organization: { ordered: [], fallback: null }, project: { ordered: [], fallback: null }, empty: true, needsBody: false },
    partnerBudgets: new Map(),
    scopeBudgets: { llm_a: [], llm_b: [] },
    claim: null,
    mcpServers: [],
    ...parts,
  };
}

export interface TestSecretInit extends Partial<Omit<CompiledSecret, "hostMatch" | "pathMatch">> {
  hostPattern: string;
  pathPattern?: string | null;
}

/** A secret as the snapshot compiles it: its patterns compiled by the gateway's matchers. */
export function compiledSecret(init: TestSecretInit): CompiledSecret {
  const { hostPattern, pathPattern = null, ...rest } = init;
  const pattern = pathPattern?.trim() ?? "";
  return {
    id: "secret-1",
    name: "Test secret",
    scope: "project",
    tier: 3,
    catchAllPath: pattern === "" || pattern === "*" || pattern === "/*",
    createdAt: "2025-01-01T00:00:00.000Z",
    value: "secret-value",
    valueRef: null,
    type: "generic",
    authMode: "api-key",
    injection: { headerName: "x-api-key" },
    ...rest,
    hostMatch: compileHostPattern(hostPattern),
    pathMatch: compilePathPattern(pathPattern),
  };
}

/** Sets who the agent is on a request or tunnel, as the auth stage does once the token checked out. */
export function signIn(flow: Flow, credentials: AgentCredentials): void {
  flow.agent = credentials.agent;
  flow.credentials = credentials;
}

/**
 * A stage with no hooks that provides `keys`: put first in a small test pipeline, it stands for the stages the test
 * played by hand (signIn, a secret set on the request), so the pipeline's order check (pipeline.ts checkOrder)
 * accepts the real stages after it.
 */
export function given(...keys: StageKey[]): Stage {
  return { name: `given ${keys.join(", ")}`, reads: [], provides: keys };
}

/** The stages' dependencies over real services (a temp store: test/support/app.ts), with a snapshot loaded from it. */
export async function testPipelineDeps(config: Config, services: Services): Promise<PipelineDeps> {
  return pipelineDeps(config, services, await GatewaySnapshot.create(services));
}

/**
 * The reply's body as the agent would get it — read through its transforms — and the reply finished, so its
 * end callbacks have run. An empty string for a reply without a body.
 */
export function replyText(reply: Reply): Promise<string> {
  const source = reply.body;
  const parts: Uint8Array[] = [];
  const through = (chunk: Uint8Array | null, i: number): void => {
    for (let t = i; chunk && t < reply.transforms.length; t++) chunk = reply.transforms[t]!.data(chunk);
    if (chunk && chunk.byteLength > 0) parts.push(chunk.slice());
  };
  const finish = (complete: boolean): string => {
    for (let i = 0; i < reply.transforms.length; i++) through(reply.transforms[i]!.end(complete), i + 1);
    reply.finish(complete);
    return Buffer.concat(parts).toString("utf8");
  };
  if (!source) return Promise.resolve(finish(true));
  return new Promise((resolve, reject) => {
    source.start({
      data(chunk) {
        through(chunk, 0);
        return true;
      },
      end: () => resolve(finish(true)),
      error: (err) => {
        finish(false);
        reject(err);
      },
    });
  });
}
