// What credgate decides about one `exec` (docs/ssh.md#commands), before anything reaches the server, in order:
// the secret's `commands` (git only by default), the policy rules on the host (method SSH, path = the
// repository), then `push` for `git-receive-pack` (block, or approve: held for a person, remembered per agent
// and secret). Synchronous unless something waits (a rate-limit count, a person).
import { evaluateReadings, type CompiledRule, type PolicyRequest } from "../../core/policy.ts";
import { parseGitCommand, repositoryPath } from "../../core/sshRules.ts";
import { pathReadings } from "../../core/pathReadings.ts";
import { log } from "../../observability/log.ts";
import type { ApprovalService } from "../../services/approvals.ts";
import type { RateLimitService } from "../../services/rateLimits.ts";
import type { RequestLogDecision } from "../../services/requestLogs.ts";
import type { RememberedApprovals } from "../rememberedApprovals.ts";
import type { AgentCredentials, SshCredential } from "../snapshot.ts";

export interface MatchedRule {
  logicalId: string;
  name: string;
}

export type ExecVerdict =
  | { ok: true; decision: RequestLogDecision; rule?: MatchedRule; approvalId?: string }
  | { ok: false; decision: RequestLogDecision; message: string; rule?: MatchedRule; approvalId?: string };

export interface ExecJudgeDeps {
  approvals: Pick<ApprovalService, "hold" | "awaitOutcome">;
  rateLimits: Pick<RateLimitService, "hit">;
  remembered: Pick<RememberedApprovals, "allows">;
}

export interface ExecContext {
  credentials: AgentCredentials;
  credential: SshCredential;
  /** The CONNECT host (lowercase, no port) and the host as logs show it (without :22). */
  host: string;
  displayHost: string;
  /** Called once a hold is created: its row is written at once (202, approval_pending). */
  onHeld(approvalId: string, rule: MatchedRule | null): void;
}

/** The approval that holds a push with a key of `push: approve`, remembered per agent and secret. */
export function pushApprovalRule(credential: SshCredential): MatchedRule {
  return { logicalId: `ssh-push:${credential.secretId}`, name: `Pushes with the SSH key "${credential.name}"` };
}

export class ExecJudge {
  constructor(private readonly deps: ExecJudgeDeps) {}

  judge(ctx: ExecContext, command: string, signal: AbortSignal): ExecVerdict | Promise<ExecVerdict> {
    const git = parseGitCommand(command);
    if (ctx.credential.commands === "git" && git === null) return refused("blocked", `credgate: only git commands are allowed on ${ctx.host}`);
    const path = git ? repositoryPath(git.repository) : "/";
    const push = git?.service === "git-receive-pack";
    const policy = ctx.credentials.policy;
    if (policy.empty) return this.#afterPolicy(ctx, command, push, null, null, signal);
    const req: PolicyRequest = { host: ctx.host, path, method: "SSH", agentId: ctx.credentials.agent.id, connectionId: null, body: null };
    // Every reading of the repository path (docs/injection.md#every-reading-of-a-path): a server resolves
    // `acme/../other.git` to another repository, which a rule on `/acme/*` alone must not open.
    const decision = evaluateReadings(policy, req, pathReadings(path));
    const rule = decision.rule ? { logicalId: decision.rule.logicalId, name: decision.rule.name } : null;
    switch (decision.verdict) {
      case "allow":
        return this.#afterPolicy(ctx, command, push, null, rule, signal);
      case "block":
        return refused(decision.rule!.isDefault ? "blocked_by_default_policy" : "blocked", `credgate: blocked by credgate policy rule "${decision.rule!.name}"`, rule);
      case "approval":
        return this.#afterPolicy(ctx, command, push, decision.rules, rule, signal);
      case "rate":
        return Promise.all(decision.rules.map((r) => this.#limited(ctx, r))).then((limited) =>
          limited.some((l) => l) ? refused("rate_limited", `credgate: rate limit reached on ${ctx.host}`, rule) : this.#afterPolicy(ctx, command, push, null, rule, signal),
        );
    }
  }

  async #limited(ctx: ExecContext, r: CompiledRule): Promise<boolean> {
    const hit = await this.deps.rateLimits.hit({ scope: r.scope, logicalId: r.logicalId, agentId: ctx.credentials.agent.id }, r.rateLimit!, r.rateLimitWindow!);
    return hit.limited;
  }

  #afterPolicy(ctx: ExecContext, command: string, push: boolean, heldBy: readonly CompiledRule[] | null, rule: MatchedRule | null, signal: AbortSignal): ExecVerdict | Promise<ExecVerdict> {
    const cred = ctx.credential;
    if (push && cred.push === "block") return refused("blocked", `credgate: pushes to ${ctx.host} are blocked`, rule);
    const agentId = ctx.credentials.agent.id;
    let pending: { rule: MatchedRule; push: boolean } | null = null;
    for (const r of heldBy ?? []) {
      if (!this.deps.remembered.allows(agentId, r.logicalId)) {
        pending = { rule: { logicalId: r.logicalId, name: r.name }, push: false };
        break;
      }
    }
    const pushHeld = push && cred.push === "approve";
    if (pending === null && pushHeld) {
      const p = pushApprovalRule(cred);
      if (!this.deps.remembered.allows(agentId, p.logicalId)) pending = { rule: p, push: true };
    }
    if (pending === null) {
      const remembered = heldBy !== null || pushHeld;
      return { ok: true, decision: remembered ? "approved_by_memory" : "allowed", ...(rule ? { rule } : {}) };
    }
    return this.#hold(ctx, command, pending, signal);
  }

  async #hold(ctx: ExecContext, command: string, hold: { rule: MatchedRule; push: boolean }, signal: AbortSignal): Promise<ExecVerdict> {
    const rule = hold.push ? undefined : hold.rule;
    const notApproved = hold.push ? `credgate: the push to ${ctx.host} was not approved` : `credgate: the command on ${ctx.host} was not approved`;
    if (signal.aborted) return refused("approval_cancelled", notApproved, rule);
    const agent = ctx.credentials.agent;
    let held;
    try {
      held = await this.deps.approvals.hold({
        organizationId: agent.organizationId,
        projectId: agent.projectId,
        agent: { id: agent.id, name: agent.name, identifier: agent.identifier },
        method: "SSH",
        url: `ssh://${ctx.displayHost}`,
        host: ctx.displayHost,
        path: command.slice(0, 1000),
        headers: {},
        summary: {
          action: hold.push ? "git push over SSH" : "SSH command",
          details: [
            { label: "Host", value: ctx.displayHost },
            { label: "Key", value: ctx.credential.name.slice(0, 240) },
            { label: "Command", value: command.slice(0, 240) },
          ],
        },
        bodyPreview: null,
        rule: hold.rule,
      });
    } catch (err) {
      log.error("approval store failed", { error: (err as Error).message });
      return refused("error", "credgate: the approval service is temporarily unavailable; try again", rule);
    }
    const id = held.row.id;
    ctx.onHeld(id, rule ?? null);
    const outcome = await this.deps.approvals.awaitOutcome(id, held.outcome, signal);
    const tail = { approvalId: id, ...(rule ? { rule } : {}) };
    switch (outcome) {
      case "approved":
        return { ok: true, decision: "approval_approved", ...tail };
      case "denied":
        return { ok: false, decision: "approval_denied", message: notApproved, ...tail };
      case "expired":
        return { ok: false, decision: "approval_expired", message: notApproved, ...tail };
      case "cancelled":
        return { ok: false, decision: "approval_cancelled", message: "credgate: the gateway is restarting and released this command before it was reviewed; retry it", ...tail };
    }
  }
}

function refused(decision: RequestLogDecision, message: string, rule?: MatchedRule | null): ExecVerdict {
  return { ok: false, decision, message, ...(rule ? { rule } : {}) };
}
