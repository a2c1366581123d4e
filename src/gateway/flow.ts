// What a CONNECT (tunnel.ts) and a proxied request (request.ts) share as they move through the stages
// (docs/gateway.md#pipeline): where they go, who the agent is (set by the auth stage, which runs before every
// stage that reads it), and the decision the request log records (set by the runner from the stages' verdicts,
// nowhere else).
import type { Span } from "../observability/tracing.ts";
import type { RequestLogDecision } from "../services/requestLogs.ts";
import type { AgentCredentials, AgentEntry } from "./snapshot.ts";

/** Host with its port unless it is the scheme's default. */
export function displayHostOf(scheme: "https" | "http", host: string, port: number): string {
  return port === (scheme === "https" ? 443 : 80) ? host : `${host}:${port}`;
}

export class Flow {
  readonly started = performance.now();
  #agent: AgentEntry | null = null;
  #credentials: AgentCredentials | null = null;
  /** What the log records. The runner sets it from the verdicts (pipeline.ts); a stage never does. */
  decision: RequestLogDecision = "allowed";
  /** The flow's span when tracing is on and its trace is sampled (trace.ts; set by the runner), else null. */
  trace: Span | null = null;

  constructor(
    /** The agent's x-request-id when sane, else a new one: on gateway answers, log lines and the log row. */
    readonly requestId: string,
    /** Host for pattern matching: lowercase, no port, no trailing dot, no brackets. */
    readonly host: string,
    readonly port: number,
    /** Host with its non-default port, as logs and approvals show it. */
    readonly displayHost: string,
  ) {}

  get authenticated(): boolean {
    return this.#agent !== null;
  }

  /** Set by the auth stage ([agent]: stage.ts StageKey), which runs before every stage that reads it. */
  get agent(): AgentEntry {
    if (!this.#agent) throw new Error("the agent is read before the auth stage ran");
    return this.#agent;
  }

  set agent(agent: AgentEntry) {
    this.#agent = agent;
  }

  /** The agent's resolved view (snapshot.ts), set by the auth stage. */
  get credentials(): AgentCredentials {
    if (!this.#credentials) throw new Error("the credentials are read before the auth stage ran");
    return this.#credentials;
  }

  set credentials(credentials: AgentCredentials) {
    this.#credentials = credentials;
  }
}
