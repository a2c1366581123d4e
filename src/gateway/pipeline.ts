// The gateway's stages in order (docs/gateway.md#pipeline), and the runner that moves a flow through them.
// Every concern is a stage (stage.ts, stages/); this file holds the list and the runner, nothing else. A
// CONNECT runs the connect hooks top to bottom until one answers, then every connected hook bottom to top. A
// request runs the request hooks top to bottom until one answers (the forward stage always does), then the
// response hooks of the stages it reached, bottom to top. With tracing on, the runner also records the flow's
// span and a span for every hook that waits (trace.ts); with it off, that costs one null check per flow.
// Building a pipeline checks its order against the stages' contracts (checkOrder), once.
import { log } from "../observability/log.ts";
import type { Tracer } from "../observability/tracing.ts";
import { REQUEST_ID_HEADER } from "../observability/requestId.ts";
import type { Config } from "../runtime/config.ts";
import type { Services } from "../services/index.ts";
import type { VaultResolver } from "../vault/resolver.ts";
import type { EgressGuard } from "./egressGuard.ts";
import { BAD_GATEWAY, badGateway } from "./errors.ts";
import { Reply } from "./reply.ts";
import type { ProxyRequest } from "./request.ts";
import type { GatewaySnapshot } from "./snapshot.ts";
import { answer, PASS, type ConnectVerdict, type RequestVerdict, type Stage, type StageKey } from "./stage.ts";
import { approvalStage } from "./stages/approval.ts";
import { authStage } from "./stages/auth.ts";
import { awsCheckStage, awsSignStage } from "./stages/awsSign.ts";
import { budgetStage } from "./stages/budget.ts";
import { claimStage } from "./stages/claim.ts";
import { cleartextStage } from "./stages/cleartext.ts";
import { connectionStage } from "./stages/connection.ts";
import { echoStage } from "./stages/echo.ts";
import { egressStage } from "./stages/egress.ts";
import { forwardStage } from "./stages/forward.ts";
import { githubAppStage } from "./stages/githubApp.ts";
import { cloudTokenStage } from "./stages/cloudToken.ts";
import { cloudPlaceholdersStage } from "./stages/cloudPlaceholders.ts";
import { guidanceStage } from "./stages/guidance.ts";
import { injectStage } from "./stages/inject.ts";
import { injectConnectionStage } from "./stages/injectConnection.ts";
import { interceptStage } from "./stages/intercept.ts";
import { leakGuardStage } from "./stages/leakGuard.ts";
import { logStage } from "./stages/log.ts";
import { mcpStage } from "./stages/mcp.ts";
import { McpSessions } from "./stages/mcpSessions.ts";
import { mcpToolsStage } from "./stages/mcpTools.ts";
import { passthroughStage } from "./stages/passthrough.ts";
import { placeholderStage } from "./stages/placeholder.ts";
import { policyStage } from "./stages/policy.ts";
import { resourcesStage } from "./stages/resources.ts";
import { websocketFramesStage } from "./stages/websocketFrames.ts";
import { targetStage } from "./stages/target.ts";
import { traceConnect, traceConnected, traceReply, traceRequest, traceWait } from "./trace.ts";
import type { Tunnel } from "./tunnel.ts";
import type { UpstreamPool } from "./upstream/pool.ts";

/** Everything some stage uses; each stage is handed its own part. */
export interface PipelineDeps {
  config: Config;
  services: Services;
  snapshot: GatewaySnapshot;
  upstreams: UpstreamPool;
  egress: EgressGuard;
  /** Values kept outside credgate (1Password, secret stores), cached per reference: `services.stores`. */
  vault: VaultResolver;
}

/** The stages in order (docs/gateway.md#stages). Adding a feature adds a stage here. */
export function gatewayStages(d: PipelineDeps): Stage[] {
  const { config, services } = d;
  // The key of the mark on HTTP+SSE message endpoints: the same in every process of every instance.
  const mcpSessions = new McpSessions(services.deps.sealer.deriveKey("mcp-endpoint"));
  return [
    logStage({ requestLogs: services.requestLogs }),
    authStage({ snapshot: d.snapshot }),
    targetStage(),
    // Before egress: the metadata hosts are answered here and never dialled (169.254.169.254 would be refused).
    cloudPlaceholdersStage({ vault: d.vault }),
    egressStage({ egress: d.egress }),
    passthroughStage({ passthroughHosts: config.passthroughHosts }),
    interceptStage(),
    connectionStage(),
    policyStage({ rateLimits: services.rateLimits }),
    resourcesStage(),
    leakGuardStage({ enabled: config.leakGuard, minted: services.cloudTokens.known, fetched: d.vault.known }),
    injectConnectionStage({ oauth: services.oauth }),
    injectStage({ vault: d.vault }),
    // After inject: the MCP server's token replaces a secret's on the same header.
    mcpStage({ sessions: mcpSessions, auth: services.mcpAuth }),
    githubAppStage({ tokens: services.githubApps }),
    cloudTokenStage({ tokens: services.cloudTokens }),
    awsCheckStage(),
    cleartextStage({ plaintextHosts: config.plaintextHosts }),
    claimStage(),
    echoStage(),
    budgetStage({ prices: services.prices, ledger: services.budgetLedger, keySpend: services.partnerBudgets, spend: services.spend, publicUrl: config.publicUrl }),
    approvalStage({ approvals: services.approvals, requestLogs: services.requestLogs, remembered: d.snapshot.remembered }),
    // After the policy's own hold; before placeholder, so that a reviewer sees the arguments the agent wrote.
    mcpToolsStage({ approvals: services.approvals, requestLogs: services.requestLogs, remembered: d.snapshot.remembered, sessions: mcpSessions }),
    placeholderStage(),
    websocketFramesStage({ leakGuard: config.leakGuard, minted: services.cloudTokens.known, fetched: d.vault.known }),
    guidanceStage({ publicUrl: config.publicUrl }),
    // Last before forwarding: a signature is good for 15 minutes, and an approval may have held the request longer.
    awsSignStage(),
    forwardStage({ upstreams: d.upstreams, outbound: services.outbound, headerTimeoutSeconds: config.upstreamHeaderTimeoutSeconds }),
  ];
}

/**
 * Throws when `stages` are not in an order their contracts allow (docs/architecture.md#stage-contracts): a stage
 * reads a key no earlier stage provides, or two stages provide the same key. Run once, when a pipeline is built:
 * a wrong list fails at start, never on a request.
 */
export function checkOrder(stages: readonly Stage[]): void {
  const providers = new Map<StageKey, string>();
  for (const stage of stages) {
    for (const key of stage.provides ?? []) {
      const other = providers.get(key);
      if (other !== undefined) throw new Error(`gateway pipeline: stages "${other}" and "${stage.name}" both provide "${key}"; each key has one provider`);
      providers.set(key, stage.name);
    }
  }
  const provided = new Set<StageKey>();
  for (const stage of stages) {
    for (const key of stage.reads ?? []) {
      if (provided.has(key)) continue;
      const by = providers.get(key);
      throw new Error(
        `gateway pipeline: stage "${stage.name}" reads "${key}", which no earlier stage provides` +
          (by === undefined ? " (no stage in the list provides it)" : ` (stage "${by}" provides it, later in the list)`),
      );
    }
    for (const key of stage.provides ?? []) provided.add(key);
  }
}

export class Pipeline {
  constructor(
    readonly stages: readonly Stage[],
    /** Null when tracing is off (docs/operations.md#traces). */
    readonly tracer: Tracer | null = null,
  ) {
    checkOrder(stages);
  }

  /** The request's reply, once the stages have answered it and the response hooks have run. */
  request(rq: ProxyRequest): Reply | Promise<Reply> {
    if (this.tracer !== null && traceRequest(this.tracer, rq)) return this.#traced(rq);
    // Every log line written while the request is handled carries its id.
    return log.withContext({ requestId: rq.requestId }, requestFrom, this.stages, rq, 0);
  }

  /** A traced request: its log lines carry the trace id too, and its span ends with the reply. */
  #traced(rq: ProxyRequest): Reply | Promise<Reply> {
    const reply = log.withContext({ requestId: rq.requestId, traceId: rq.trace!.traceId }, requestFrom, this.stages, rq, 0);
    return reply instanceof Promise ? reply.then((r) => traceReply(rq, r)) : traceReply(rq, reply);
  }

  /** The connect hooks' verdict on a CONNECT: PASS opens the tunnel; an answer refuses it. */
  connect(tunnel: Tunnel): ConnectVerdict | Promise<ConnectVerdict> {
    if (this.tracer !== null) traceConnect(this.tracer, tunnel);
    return connectFrom(this.stages, tunnel, 0);
  }

  /**
   * The CONNECT has been answered with `status` — `verdict` says why when it was refused (by a connect hook,
   * or a passthrough dial that failed) — and every connected hook hears it, last stage first.
   */
  connected(tunnel: Tunnel, status: number, verdict: ConnectVerdict = PASS): void {
    settleConnect(tunnel, verdict);
    tunnel.status = status;
    for (let i = this.stages.length - 1; i >= 0; i--) {
      const stage = this.stages[i]!;
      if (!stage.connected) continue;
      try {
        stage.connected(tunnel);
      } catch (err) {
        log.error("gateway stage failed", { stage: stage.name, hook: "connected", host: tunnel.host, error: (err as Error).message });
      }
    }
    if (tunnel.trace !== null) traceConnected(tunnel);
  }
}

type Stages = readonly Stage[];

function connectFrom(stages: Stages, tunnel: Tunnel, i: number): ConnectVerdict | Promise<ConnectVerdict> {
  for (; i < stages.length; i++) {
    const stage = stages[i]!;
    if (!stage.connect) continue;
    let verdict: ConnectVerdict | Promise<ConnectVerdict>;
    try {
      verdict = stage.connect(tunnel);
    } catch (err) {
      verdict = connectFailed(tunnel, stage, err as Error);
    }
    if (verdict === PASS) continue;
    if (verdict instanceof Promise) {
      const at = i;
      if (tunnel.trace !== null) verdict = traceWait(tunnel.trace, stage.name, verdict);
      return verdict.then(
        (v) => (settleConnect(tunnel, v) ? v : connectFrom(stages, tunnel, at + 1)),
        (err: Error) => settled(tunnel, connectFailed(tunnel, stage, err)),
      );
    }
    if (settleConnect(tunnel, verdict)) return verdict;
  }
  return PASS;
}

/** Takes the verdict's decision; true when it answers the CONNECT. */
function settleConnect(tunnel: Tunnel, verdict: ConnectVerdict): boolean {
  if (verdict.decision !== null) tunnel.decision = verdict.decision;
  return verdict.response !== null;
}

function settled(tunnel: Tunnel, verdict: ConnectVerdict): ConnectVerdict {
  settleConnect(tunnel, verdict);
  return verdict;
}

function connectFailed(tunnel: Tunnel, stage: Stage, err: Error): ConnectVerdict {
  log.error("gateway stage failed", { stage: stage.name, hook: "connect", host: tunnel.host, error: err.message });
  return answer("error", BAD_GATEWAY);
}

/**
 * The request hooks from stage `i` on, synchronously until one returns a promise (then from its verdict on);
 * then the response hooks back from the stage that answered. Plain calls and promise callbacks rather than an
 * async function: this runs for every request.
 */
function requestFrom(stages: Stages, rq: ProxyRequest, i: number): Reply | Promise<Reply> {
  for (; i < stages.length; i++) {
    const stage = stages[i]!;
    if (!stage.request) continue;
    let verdict: RequestVerdict | Promise<RequestVerdict>;
    try {
      verdict = stage.request(rq);
    } catch (err) {
      verdict = requestFailed(rq, stage, err as Error);
    }
    if (verdict === PASS) continue;
    if (verdict instanceof Promise) {
      const at = i;
      // The forward stage's wait is the upstream exchange, which it traces itself (its CLIENT span).
      if (rq.trace !== null && at < stages.length - 1) verdict = traceWait(rq.trace, stage.name, verdict);
      return verdict.then(
        (v) => afterVerdict(stages, rq, at, v),
        (err: Error) => afterVerdict(stages, rq, at, requestFailed(rq, stage, err)),
      );
    }
    if (verdict.decision !== null) rq.decision = verdict.decision;
    if (verdict.response !== null) return responseFrom(stages, rq, i, verdict.response);
  }
  // The forward stage always answers: reaching the end is a gap in the list.
  rq.decision = "error";
  return responseFrom(stages, rq, stages.length - 1, badGateway());
}

function afterVerdict(stages: Stages, rq: ProxyRequest, at: number, verdict: RequestVerdict): Reply | Promise<Reply> {
  if (verdict.decision !== null) rq.decision = verdict.decision;
  return verdict.response !== null ? responseFrom(stages, rq, at, verdict.response) : requestFrom(stages, rq, at + 1);
}

function requestFailed(rq: ProxyRequest, stage: Stage, err: Error): RequestVerdict {
  // A stage that read the body (a peek) met a body scan's refusal (docs/guards.md#credential-leak-guard): that is the answer.
  if (rq.refusal !== null) return rq.refusal;
  log.error("gateway stage failed", { stage: stage.name, host: rq.host, error: err.message });
  return answer("error", badGateway());
}

/** The response hooks from stage `i` down to the first, each given the reply the one after it left. */
function responseFrom(stages: Stages, rq: ProxyRequest, i: number, response: Response | Reply): Reply | Promise<Reply> {
  let reply = response instanceof Reply ? response : Reply.of(response);
  for (; i >= 0; i--) {
    const stage = stages[i]!;
    if (!stage.response) continue;
    let next: Reply | Promise<Reply>;
    try {
      next = stage.response(rq, reply);
    } catch (err) {
      responseStageFailed(rq, stage, err as Error);
      continue;
    }
    if (next instanceof Promise) {
      const at = i;
      const before = reply;
      if (rq.trace !== null) next = traceWait(rq.trace, stage.name, next);
      return next.then(
        (r) => responseFrom(stages, rq, at - 1, r),
        (err: Error) => {
          responseStageFailed(rq, stage, err);
          return responseFrom(stages, rq, at - 1, before);
        },
      );
    }
    reply = next;
  }
  if (!reply.fromUpstream) reply.headers.set(REQUEST_ID_HEADER, rq.requestId);
  return reply;
}

function responseStageFailed(rq: ProxyRequest, stage: Stage, err: Error): void {
  log.error("gateway response stage failed", { stage: stage.name, host: rq.host, error: err.message });
}
