// The database broker's judge (docs/databases.md#statements-reads-and-writes): every statement an agent sends
// (each statement of a Query, every Parse) is judged before it reaches the server, in order — the leak guard (no
// credgate secret in it), the policy rules on the database host (method SQL, path /: block, rate limit,
// approval), the credential's readOnly, then its `writes` (block, or approve: held for a person). The verdict is
// synchronous unless something has to wait (a rate-limit count, a person): a session of reads costs no promise
// per statement, and a credential with `writes: allow` and no readOnly is not even classified.
import { approvalSummaryOfStatement, approvalPreviewOfStatement } from "./statementApproval.ts";
import { evaluateReadings, BODY_PEEK_BYTES, type CompiledRule, type PolicyRequest } from "../../core/policy.ts";
import { statementNature } from "../../core/sqlStatements.ts";
import { log } from "../../observability/log.ts";
import type { ApprovalService } from "../../services/approvals.ts";
import type { RateLimitService } from "../../services/rateLimits.ts";
import type { RequestLogDecision, RequestLogService } from "../../services/requestLogs.ts";
import type { RememberedApprovals } from "../rememberedApprovals.ts";
import type { Config } from "../../runtime/config.ts";
import type { Services } from "../../services/index.ts";
import type { DatabaseCredential, GatewaySnapshot } from "../snapshot.ts";
import type { DbSession, MatchedRule } from "./dbSession.ts";
import { leakWatchOf } from "../stages/leakGuard.ts";
import type { KnownValues } from "../../core/knownValues.ts";
import { logHeldStatement, statementAsBytes } from "./statementLog.ts";

export type { DbSession, MatchedRule } from "./dbSession.ts";

export type StatementVerdict =
  | { ok: true; decision: RequestLogDecision; approvalId?: string; rule?: MatchedRule }
  | { ok: false; decision: RequestLogDecision; code: string; message: string; approvalId?: string; rule?: MatchedRule };

export interface StatementJudgeDeps {
  approvals: Pick<ApprovalService, "hold" | "awaitOutcome">;
  /** Where a held statement's row is written at once (202, approval_pending), as for a held request. */
  requestLogs: Pick<RequestLogService, "enqueue" | "update">;
  rateLimits: Pick<RateLimitService, "hit">;
  /** Which agents may pass which hold for now (docs/policy.md#remembered-approvals), kept by the snapshot. */
  remembered: Pick<RememberedApprovals, "allows">;
  /** CREDGATE_LEAK_GUARD is not `off`: the watched values come from the agent's view (stages/leakGuard.ts). */
  leakGuard: boolean;
  /** Values read from vaults and stores, and the passwords of Vault database leases, watched once known. */
  fetched?: KnownValues | null;
}

// The refusals (docs/databases.md#refusals): SQLSTATE and message, as a PostgreSQL ErrorResponse carries them.
export const INSUFFICIENT_PRIVILEGE = "42501";
export const READ_ONLY_TRANSACTION = "25006";
export const CONFIGURATION_LIMIT_EXCEEDED = "53400";
export const ADMIN_SHUTDOWN = "57P01";
export const SYSTEM_ERROR = "58000";

const ALLOWED: StatementVerdict = { ok: true, decision: "allowed" };
const LEAK: StatementVerdict = { ok: false, decision: "blocked", code: INSUFFICIENT_PRIVILEGE, message: "credgate: the statement carries a credgate secret" };
const READ_ONLY: StatementVerdict = { ok: false, decision: "blocked", code: READ_ONLY_TRANSACTION, message: "credgate: this database credential is read-only" };
const WRITES_BLOCKED: StatementVerdict = { ok: false, decision: "blocked", code: INSUFFICIENT_PRIVILEGE, message: "credgate: writes are blocked for this database credential" };
const ENCODING_REFUSED: StatementVerdict = {
  ok: false,
  decision: "blocked",
  code: INSUFFICIENT_PRIVILEGE,
  message: "credgate: this client_encoding cannot be used through credgate; use UTF8",
};
const APPROVAL_STORE_DOWN: StatementVerdict = { ok: false, decision: "error", code: SYSTEM_ERROR, message: "credgate: the approval service is temporarily unavailable; try again" };

/** The approval that holds a write of a credential with `writes: approve`, remembered per agent and secret. */
export function writeApprovalRule(credential: DatabaseCredential): MatchedRule {
  return { logicalId: `database:${credential.secretId}`, name: `Writes with the database credential "${credential.name}"` };
}

/** A held statement's reason: the policy rule that holds it, or the credential's `writes: approve`. */
interface Hold {
  rule: MatchedRule;
  write: boolean;
}

export class StatementJudge {
  constructor(private readonly deps: StatementJudgeDeps) {}

  /** Judges one statement (a Query is judged statement by statement; a Parse is one). Sync when nothing waits. */
  judge(session: DbSession, statement: string, signal: AbortSignal): StatementVerdict | Promise<StatementVerdict> {
    const creds = session.credentials;
    if (this.deps.leakGuard) {
      // Any watched value, wherever it belongs: no statement needs a credgate secret (docs/databases.md#the-leak-guard).
      const watch = leakWatchOf(creds, null, this.deps.fetched ?? null);
      if (watch !== null && watch.set.findInString(statementAsBytes(statement), 0) >= 0) return LEAK;
    }
    const policy = creds.policy;
    if (policy.empty) return this.#afterPolicy(session, statement, signal, null, null);
    // The statement is the body a rule's conditions read (docs/databases.md#policy-rules-on-a-database-host).
    const body = policy.needsBody ? statement.slice(0, BODY_PEEK_BYTES).toLowerCase() : null;
    const req: PolicyRequest = { host: session.credential.host, path: "/", method: "SQL", agentId: session.agent.id, connectionId: null, body };
    const decision = evaluateReadings(policy, req, ["/"]);
    const rule = decision.rule ? { logicalId: decision.rule.logicalId, name: decision.rule.name } : null;
    switch (decision.verdict) {
      case "allow":
        return this.#afterPolicy(session, statement, signal, null, rule);
      case "block":
        return blockedByRule(decision.rule!, session);
      case "approval":
        return this.#afterPolicy(session, statement, signal, decision.rules, rule);
      case "rate":
        return Promise.all(decision.rules.map((r) => this.#rateHit(session, r))).then((limited) =>
          limited.some((l) => l)
            ? { ok: false, decision: "rate_limited", code: CONFIGURATION_LIMIT_EXCEEDED, message: "credgate: rate limit reached", ...(rule ? { rule } : {}) }
            : this.#afterPolicy(session, statement, signal, null, rule),
        );
    }
  }

  async #rateHit(session: DbSession, r: CompiledRule): Promise<boolean> {
    const hit = await this.deps.rateLimits.hit({ scope: r.scope, logicalId: r.logicalId, agentId: session.agent.id }, r.rateLimit!, r.rateLimitWindow!);
    return hit.limited;
  }

  /** readOnly, then writes; then the holds a person must lift (or lifted already, remembered). */
  #afterPolicy(session: DbSession, statement: string, signal: AbortSignal, heldBy: readonly CompiledRule[] | null, rule: MatchedRule | null): StatementVerdict | Promise<StatementVerdict> {
    const cred = session.credential;
    let writeHeld = false;
    if (cred.readOnly || cred.writes !== "allow") {
      const nature = statementNature(statement);
      if (cred.readOnly && (nature.write || nature.lifts)) return READ_ONLY;
      if (cred.writes === "block" && (nature.write || nature.lifts)) return WRITES_BLOCKED;
      // A client_encoding whose multibyte characters hold ASCII bytes would make the server read later
      // statements otherwise than the judge: refused, never asked (a reviewer could not see that).
      if (nature.rereads) return ENCODING_REFUSED;
      writeHeld = cred.writes === "approve" && nature.write;
    }
    if (heldBy === null && !writeHeld) return rule === null ? ALLOWED : { ok: true, decision: "allowed", rule };
    // Each hold must have been remembered to pass without one; the first that was not is asked for.
    const agentId = session.agent.id;
    let pending: Hold | null = null;
    for (const r of heldBy ?? []) {
      if (!this.deps.remembered.allows(agentId, r.logicalId)) {
        pending = { rule: { logicalId: r.logicalId, name: r.name }, write: false };
        break;
      }
    }
    if (pending === null && writeHeld) {
      const w = writeApprovalRule(cred);
      if (!this.deps.remembered.allows(agentId, w.logicalId)) pending = { rule: w, write: true };
    }
    if (pending === null) return { ok: true, decision: "approved_by_memory", ...(rule ? { rule } : {}) };
    return this.#hold(session, statement, signal, pending);
  }

  async #hold(session: DbSession, statement: string, signal: AbortSignal, hold: Hold): Promise<StatementVerdict> {
    const rule = hold.write ? undefined : hold.rule;
    if (signal.aborted) return { ok: false, decision: "approval_cancelled", code: ADMIN_SHUTDOWN, message: RELEASED, ...(rule ? { rule } : {}) };
    const agent = session.agent;
    let held;
    try {
      held = await this.deps.approvals.hold({
        organizationId: agent.organizationId,
        projectId: agent.projectId,
        agent: { id: agent.id, name: agent.name, identifier: agent.identifier },
        method: "SQL",
        url: `postgresql://${session.host}/${encodeURIComponent(session.database)}`,
        host: session.host,
        path: statement.slice(0, 1000),
        headers: {},
        summary: approvalSummaryOfStatement(session, statement),
        bodyPreview: approvalPreviewOfStatement(session, statement),
        rule: hold.rule,
      });
    } catch (err) {
      log.error("approval store failed", { error: (err as Error).message });
      return APPROVAL_STORE_DOWN;
    }
    const id = held.row.id;
    logHeldStatement(this.deps.requestLogs, session, statement, id, rule);
    const outcome = await this.deps.approvals.awaitOutcome(id, held.outcome, signal);
    const tail = { approvalId: id, ...(rule ? { rule } : {}) };
    switch (outcome) {
      case "approved":
        return { ok: true, decision: "approval_approved", ...tail };
      case "denied":
      case "expired":
        return {
          ok: false,
          decision: outcome === "denied" ? "approval_denied" : "approval_expired",
          code: INSUFFICIENT_PRIVILEGE,
          message: hold.write ? "credgate: the write was not approved" : "credgate: the statement was not approved",
          ...tail,
        };
      case "cancelled":
        return { ok: false, decision: "approval_cancelled", code: ADMIN_SHUTDOWN, message: RELEASED, ...tail };
    }
  }
}

const RELEASED = "credgate: the gateway is restarting and released this statement before it was reviewed; retry it";

/** A block rule's refusal, worded as pg_hba words its own: which rule, which host. */
function blockedByRule(rule: CompiledRule, session: DbSession): StatementVerdict {
  const matched = { logicalId: rule.logicalId, name: rule.name };
  if (rule.isDefault) {
    return {
      ok: false,
      decision: "blocked_by_default_policy",
      code: INSUFFICIENT_PRIVILEGE,
      message: `credgate: a default-deny policy blocks statements to host "${session.host}" for this agent; ask an administrator to allow it`,
      rule: matched,
    };
  }
  return { ok: false, decision: "blocked", code: INSUFFICIENT_PRIVILEGE, message: `credgate: policy rule "${rule.name}" blocks statements to host "${session.host}"`, rule: matched };
}

/** The judge over the gateway's own services and snapshot (what the listener builds once). */
export function statementJudgeOf(services: Services, snapshot: GatewaySnapshot, config: Pick<Config, "leakGuard">): StatementJudge {
  return new StatementJudge({
    approvals: services.approvals,
    requestLogs: services.requestLogs,
    rateLimits: services.rateLimits,
    remembered: snapshot.remembered,
    leakGuard: config.leakGuard,
    fetched: services.stores.known,
  });
}
