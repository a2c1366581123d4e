// Pipeline requests for stage unit tests, built with the real constructor (src/gateway/request.ts), as the
// gateway builds them for a request inside a TLS tunnel.
import type { AgentCredentials, AgentEntry } from "../../src/gateway/snapshot.ts";
import { requestHeadersForUpstream } from "../../src/gateway/headers.ts";
import { ProxyRequest } from "../../src/gateway/request.ts";

export interface TestRequest {
  host: string;
  method?: string;
  /** Path and query. */
  target: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

const noWebSocket = {
  detach(): never {
    throw new Error("a stage unit test has no agent connection to take over");
  },
};

export function proxyRequest(r: TestRequest): ProxyRequest {
  const headers = new Headers(r.headers ?? {});
  const bytes = r.body === undefined ? null : typeof r.body === "string" ? new TextEncoder().encode(r.body) : r.body;
  const body = bytes
    ? new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      })
    : null;
  const incoming = { method: r.method ?? "GET", target: r.target, headers, headerLines: [...headers], body, chunked: false, signal: new AbortController().signal, gone: false, watchGone() {}, unwatchGone() {} };
  const to = { scheme: "https" as const, host: r.host, port: 443, authority: r.host, target: r.target, logHost: r.host };
  return new ProxyRequest(incoming, { kind: "tunnel", token: "agt_test" }, noWebSocket, to, requestHeadersForUpstream(headers), false);
}

const AGENT: AgentEntry = { id: "agent-1", projectId: "project-1", organizationId: "org-1", name: "Test agent", identifier: "test-agent", mode: "all" };

/** An agent's view with only what a test names; everything else empty. */
export function credentials(parts: Partial<Omit<AgentCredentials, "agent">>): AgentCredentials {
  return {
    agent: AGENT,
    injectable: [],
    visible: [],
    connections: [],
    visibleConnections: [],
    policy: { organization: { ordered: [], fallback: null }, project: { ordered: [], fallback: null }, empty: true, needsBody: false },
    budgets: new Map(),
    scopeBudgets: { llm_a: [], llm_b: [] },
    claim: null,
    ...parts,
  };
}
