// Approvals (docs/policy.md#reviewing-approvals): the reviewer's long-poll, the record and the decision; the
// approval link's decision (docs/policy.md#approval-links) and remembered approvals
// (docs/policy.md#remembered-approvals). Served on the API port and the gateway port.
import { Type as T } from "@sinclair/typebox";
import { ApiError, forbidden, unauthorized } from "../../core/errors.ts";
import type { PendingScope } from "../../services/approvals.ts";
import { approvalRecordView, approvalRequestView } from "../../services/approvalViews.ts";
import type { Services } from "../../services/index.ts";
import type { RequestContext } from "../auth.ts";
import { noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import * as S from "../schemas.ts";
import { returns, returnsNothing } from "../responses.ts";
import { REMEMBER_MESSAGE } from "../../services/rememberedApprovals.ts";

const decision = T.Union([T.Literal("approve"), T.Literal("deny")]);
/**
 * `remember: {minutes, anyArguments?}` with an approve: the same agent passes the same rule's hold for that long;
 * for an MCP tool call, with the same arguments only unless `anyArguments` (docs/gateway.md#mcp-servers).
 */
const remember = T.Optional(
  T.Object(
    { minutes: T.Integer({ minimum: 1, maximum: 1440, error: REMEMBER_MESSAGE, missing: REMEMBER_MESSAGE }), anyArguments: T.Optional(T.Boolean()) },
    { refine: (_v: unknown, body: { decision?: string }) => (body.decision === "approve" ? null : "remember is only allowed with decision approve") },
  ),
);

/** The answer to a decision: `rememberedUntil` only when the decision asked to remember. */
const decided = (rememberMinutes: number | undefined, until: string | null): R.DecisionResult =>
  rememberMinutes === undefined ? R.SUCCESS : { success: true, rememberedUntil: until };

function excludeOf(query: URLSearchParams): string[] {
  return (query.get("exclude") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A decision may come from a project key, or an org key or session with or without X-Project-Id. */
async function decisionScope(services: Services, ctx: RequestContext, headers: Headers): Promise<PendingScope> {
  if (ctx.principal.via === "project_key") return { organizationId: ctx.organizationId, projectId: ctx.principal.projectId };
  const header = headers.get("x-project-id")?.trim();
  if (!header) return { organizationId: ctx.organizationId };
  const project = await services.orgs.getProject(header);
  if (!project || project.organizationId !== ctx.organizationId) throw unauthorized();
  return { organizationId: ctx.organizationId, projectId: project.id };
}

async function pendingResponse(services: Services, scope: PendingScope, query: URLSearchParams, signal: AbortSignal) {
  const rows = await services.approvals.poll(scope, excludeOf(query), signal);
  return { requests: rows.map(approvalRequestView), timeoutSeconds: services.approvals.timeoutSeconds };
}

export const approvalsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/approvals/remembered",
    response: returns(T.Array(R.RememberedApproval), "The project's remembered approvals still in force, soonest end first"),
    access: "project",
    handler: ({ services, ctx }) => services.rememberedApprovals.list({ organizationId: ctx.organizationId, projectId: ctx.projectId }),
  }),
  route({
    method: "DELETE",
    path: "/approvals/remembered/:rememberedId",
    response: returnsNothing("Ended at once"),
    access: "project",
    role: "admin",
    handler: async ({ services, ctx, params }) => {
      await services.rememberedApprovals.revoke({ organizationId: ctx.organizationId, projectId: ctx.projectId }, params.rememberedId);
      return noContent();
    },
  }),
  route({
    method: "GET",
    path: "/approvals/pending",
    query: S.PendingQuery,
    response: returns(R.PendingApprovals, "Long-poll: at once when something is pending, else after CREDGATE_APPROVAL_POLL_SECONDS"),
    access: "project",
    handler: ({ services, ctx, query, request }) => pendingResponse(services, { organizationId: ctx.organizationId, projectId: ctx.projectId }, query, request.signal),
  }),
  route({
    method: "GET",
    path: "/approvals/:approvalId",
    response: returns(R.ApprovalRecord),
    access: "project",
    handler: async ({ services, ctx, params }) =>
      approvalRecordView(await services.approvals.get({ organizationId: ctx.organizationId, projectId: ctx.projectId }, params.approvalId)),
  }),
  route({
    method: "POST",
    path: "/approvals/:approvalId/decision",
    response: returns(R.DecisionResult),
    access: "organization",
    body: T.Object({ decision, remember }),
    handler: async ({ services, ctx, params, body, request }) => {
      const scope = await decisionScope(services, ctx, request.headers);
      const user = ctx.userId ? await services.orgs.getUser(ctx.userId) : undefined;
      const minutes = body.remember?.minutes;
      const until = await services.approvals.decide(scope, params.approvalId, body.decision, { userId: ctx.userId, email: user?.email ?? null }, minutes, body.remember?.anyArguments === true);
      return decided(minutes, until);
    },
  }),
  route({
    method: "POST",
    path: "/approvals/:approvalId/link-decision",
    response: returns(R.DecisionResult, "Decided with the approval link's token (no other authentication)"),
    access: "none",
    body: T.Object({ token: T.String({ minLength: 1, maxLength: 256 }), decision, remember }),
    handler: async ({ services, params, body }) => {
      const minutes = body.remember?.minutes;
      const until = await services.approvals.decideByLink(params.approvalId, body.token, body.decision, minutes, body.remember?.anyArguments === true);
      return decided(minutes, until);
    },
  }),
  route({
    method: "GET",
    path: "/org/approvals/pending",
    query: S.PendingQuery,
    response: returns(R.PendingApprovals, "Long-poll across every project of the organization"),
    access: "organization",
    // The key-type check comes first: any project key, whatever its holder's role, gets the same answer.
    handler: ({ services, ctx, query, request }) => {
      if (ctx.principal.via === "project_key") throw ApiError.envelope(403, "An organization API key is required for this endpoint");
      if (ctx.role === "member") throw forbidden();
      return pendingResponse(services, { organizationId: ctx.organizationId }, query, request.signal);
    },
  }),
];
