// One request-log row per authenticated proxied request (CONTRACT §6.16); never a secret: the path is
// logged without its query, as the agent sent it.
import { newId } from "../core/ids.ts";
import type { Services } from "../services/index.ts";
import type { AgentEntry } from "./snapshot.ts";

export interface LogFields {
  agent: AgentEntry;
  method: string;
  /** Host with its non-default port. */
  host: string;
  path: string;
  status: number;
  /** performance.now() at the start; latency runs until the upstream response headers. */
  started: number;
  injectionCount: number;
  decision: string;
  provider?: string | null;
}

export function writeLog(services: Services, f: LogFields): string {
  const id = newId();
  services.requestLogs.enqueue({
    id,
    organizationId: f.agent.organizationId,
    projectId: f.agent.projectId,
    agentId: f.agent.id,
    method: f.method,
    host: f.host.toLowerCase(),
    path: f.path.slice(0, 2048),
    provider: f.provider ?? null,
    status: f.status,
    latencyMs: Math.max(0, Math.round(performance.now() - f.started)),
    injectionCount: f.injectionCount,
    decision: f.decision,
    matchedRuleLogicalId: null,
    matchedRuleName: null,
    approvalId: null,
    costNanos: null,
    createdAt: new Date().toISOString(),
  });
  return id;
}
