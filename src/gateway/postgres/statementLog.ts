// Request-log rows of the database listener (docs/databases.md#request-logs-and-metrics): one per statement — method SQL,
// the host, the statement's first 200 characters as the path with every credgate secret value in it replaced by
// `credgate-redacted`, the decision, the status (200 the server completed it, 400 the server refused it, 403
// credgate refused it), the latency, the approval. Bound parameters never reach this module: it only ever gets
// the statement's text. Rows go through the request-log service's batched queue; a held statement's row is
// written at once (202, approval_pending) and updated with the outcome, as a held request's is.
import { newId } from "../../core/ids.ts";
import { REDACTED } from "../../core/echoRedaction.ts";
import { replaceInString } from "../../core/needleStream.ts";
import { countDbStatement } from "../../observability/metrics.ts";
import type { RequestLogDecision, RequestLogService } from "../../services/requestLogs.ts";
import { logTime } from "../requestLog.ts";
import { leakWatchOf } from "../stages/leakGuard.ts";
import type { DbSession, MatchedRule } from "./dbSession.ts";

/** How much of a statement the log keeps. */
export const LOGGED_STATEMENT_CHARS = 200;
/** Held statements whose row waits for its outcome; past this many, the oldest are forgotten (their row stays 202). */
const HELD_ROWS_MAX = 10_000;

export interface StatementLogRow {
  statement: string;
  decision: RequestLogDecision;
  status: 200 | 400 | 403;
  latencyMs: number;
  approvalId?: string;
  /** The policy rule that decided, when one did (the judge's verdict says). */
  rule?: MatchedRule | null;
}

/** Approval id → the id of the row written when its statement was held. */
const heldRows = new Map<string, string>();

/**
 * The statement as the needle search reads text (stages/leakGuard.ts: one character per byte): the UTF-8 bytes
 * as latin1 when it has any non-ASCII character, so a secret value with one is found too.
 */
export function statementAsBytes(statement: string): string {
  return NON_ASCII.test(statement) ? Buffer.from(statement, "utf8").toString("latin1") : statement;
}

const NON_ASCII = /[^\x00-\x7f]/;

/** The statement as logged: its first 200 characters, every credgate secret value in them redacted. */
export function loggedStatement(session: DbSession, statement: string): string {
  const watch = leakWatchOf(session.credentials);
  if (watch === null) return statement.slice(0, LOGGED_STATEMENT_CHARS);
  // A value that starts inside the kept characters is redacted whole before the cut.
  const head = statement.slice(0, LOGGED_STATEMENT_CHARS + watch.set.maxLength);
  const bytes = statementAsBytes(head);
  const redacted = replaceInString(bytes, watch.set, () => REDACTED);
  const text = redacted === bytes ? head : bytes === head ? redacted : Buffer.from(redacted, "latin1").toString("utf8");
  return text.slice(0, LOGGED_STATEMENT_CHARS);
}

function rowOf(session: DbSession, statement: string, f: { status: number; decision: RequestLogDecision; latencyMs: number; approvalId: string | null; rule: MatchedRule | null }) {
  const agent = session.agent;
  return {
    id: newId(),
    organizationId: agent.organizationId,
    projectId: agent.projectId,
    agentId: agent.id,
    method: "SQL",
    host: session.host.toLowerCase(),
    path: loggedStatement(session, statement),
    provider: null,
    status: f.status,
    latencyMs: f.latencyMs,
    injectionCount: 0,
    decision: f.decision,
    matchedRuleLogicalId: f.rule?.logicalId ?? null,
    matchedRuleName: f.rule?.name ?? null,
    approvalId: f.approvalId,
    costNanos: null,
    requestId: null,
    createdAt: logTime(),
    mcpServerId: null,
  };
}

/** The row of a statement held for a person, written now (202, approval_pending); `logStatement` completes it. */
export function logHeldStatement(requestLogs: Pick<RequestLogService, "enqueue">, session: DbSession, statement: string, approvalId: string, rule?: MatchedRule | null): void {
  const row = rowOf(session, statement, { status: 202, decision: "approval_pending", latencyMs: 0, approvalId, rule: rule ?? null });
  requestLogs.enqueue(row);
  if (heldRows.size >= HELD_ROWS_MAX) heldRows.delete(heldRows.keys().next().value!);
  heldRows.set(approvalId, row.id);
}

/** One statement's row, once its answer is known (the held statement's row, updated). */
export function logStatement(requestLogs: Pick<RequestLogService, "enqueue" | "update">, session: DbSession, row: StatementLogRow): void {
  countDbStatement(row.decision);
  const approvalId = row.approvalId ?? null;
  const held = approvalId === null ? undefined : heldRows.get(approvalId);
  if (held !== undefined) {
    heldRows.delete(approvalId!);
    requestLogs.update(held, { status: row.status, decision: row.decision, latencyMs: row.latencyMs });
    return;
  }
  requestLogs.enqueue(rowOf(session, row.statement, { status: row.status, decision: row.decision, latencyMs: row.latencyMs, approvalId, rule: row.rule ?? null }));
}
