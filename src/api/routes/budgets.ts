// Budgets for every scope and the spend report (docs/budgets.md#budgets-for-every-scope,
// docs/budgets.md#spend-report): `/budgets` for a project and its agents (read project·any, write project·admin),
// `/org/budgets` for the organization's own (organization·admin); `/spend` (project·any) and `/org/spend` (organization·admin).
import { Type as T, type TObject } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { SCOPE_BUDGET_PERIODS } from "../../core/model.ts";
import * as R from "../../core/records/index.ts";
import type { BudgetOwner } from "../../services/budgets/scopeBudgets.ts";
import { currentMonth, type SpendGroup } from "../../services/budgets/spend.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";
import { created, noContent, route, type ContextFor, type RouteDef } from "../route.ts";
import * as S from "../schemas.ts";
import { timestamp } from "./logs.ts";

/** $1,000,000: a limit in nano-USD stays an exact integer in a double. */
const LIMIT_MAX = 100_000_000;

const limitCents = T.Integer({
  minimum: 1,
  error: "limitCents must be a positive integer",
  refine: (v: number) => (v > LIMIT_MAX ? `limitCents must be at most ${LIMIT_MAX}` : null),
  description: `1-${LIMIT_MAX}`,
});
const period = T.Union(SCOPE_BUDGET_PERIODS.map((p) => T.Literal(p)));
const secretType = T.Union([T.Literal("llm_a"), T.Literal("llm_b"), T.Null()], { description: "null: both LLM key types" });
const alertPercents = T.Array(T.Integer({ minimum: 1, maximum: 100 }), { error: "alertPercents must be integers from 1 to 100", description: "default [80, 100]" });
const unchangeable = (name: string) => T.Optional(T.Unknown({ refine: () => `${name} cannot be changed` }));

const CreateBudgetBody = T.Object({
  scope: T.Union([T.Literal("project"), T.Literal("agent")]),
  agentId: T.Optional(
    T.String({
      requiredWhen: (body: Record<string, unknown>) => body.scope === "agent",
      refine: (_v: string, body: Record<string, unknown>) => (body.scope === "agent" ? null : "agentId is only for agent budgets"),
    }),
  ),
  secretType: T.Optional(secretType),
  limitCents,
  period,
  alertPercents: T.Optional(alertPercents),
});

const CreateOrgBudgetBody = T.Object({
  scope: T.Optional(T.Union([T.Literal("organization")])),
  agentId: T.Optional(T.Unknown({ refine: () => "agentId is only for agent budgets" })),
  secretType: T.Optional(secretType),
  limitCents,
  period,
  alertPercents: T.Optional(alertPercents),
});

const UpdateBudgetBody = T.Object({
  limitCents: T.Optional(limitCents),
  alertPercents: T.Optional(alertPercents),
  scope: unchangeable("scope"),
  agentId: unchangeable("agentId"),
  secretType: unchangeable("secretType"),
  period: unchangeable("period"),
});

function budgetRoutes<A extends "project" | "organization">(prefix: "/budgets" | "/org/budgets", access: A, owner: (ctx: ContextFor<A>) => BudgetOwner, create: TObject): RouteDef[] {
  const org = access === "organization";
  return [
    route({
      method: "GET",
      path: prefix,
      response: returns(T.Array(R.Budget), org ? "The organization's own budgets, oldest first" : "The project's budgets and its agents', oldest first"),
      access,
      role: org ? "admin" : "any",
      handler: ({ services, ctx }) => services.scopeBudgets.list(owner(ctx)),
    }),
    route({
      method: "POST",
      path: prefix,
      response: returnsCreated(R.Budget),
      access,
      role: "admin",
      body: create,
      handler: async ({ services, ctx, body }) => {
        const input = body as { scope?: "project" | "agent"; agentId?: string; secretType?: "llm_a" | "llm_b" | null; limitCents: number; period: (typeof SCOPE_BUDGET_PERIODS)[number]; alertPercents?: number[] };
        return created(await services.scopeBudgets.create(owner(ctx), { ...input, scope: input.scope ?? "organization" }));
      },
    }),
    route({
      method: "PATCH",
      path: `${prefix}/:budgetId`,
      response: returns(R.Budget),
      access,
      role: "admin",
      body: UpdateBudgetBody,
      emptyBody: ApiError.flat(400, "No fields to update"),
      handler: ({ services, ctx, params, body }) => services.scopeBudgets.update(owner(ctx), params.budgetId, body),
    }),
    route({
      method: "DELETE",
      path: `${prefix}/:budgetId`,
      response: returnsNothing(),
      access,
      role: "admin",
      handler: async ({ services, ctx, params }) => {
        await services.scopeBudgets.delete(owner(ctx), params.budgetId);
        return noContent();
      },
    }),
  ];
}

function spendQuery(q: URLSearchParams, groups: readonly SpendGroup[]): { since: string; until: string; groupBy: SpendGroup } {
  const raw = q.get("groupBy") || groups[0]!;
  if (!(groups as readonly string[]).includes(raw)) throw ApiError.flat(400, `groupBy must be one of: ${groups.join(", ")}`);
  const month = currentMonth();
  const since = timestamp("since", q.get("since")) ?? month.since;
  const until = timestamp("until", q.get("until")) ?? month.until;
  return { since, until, groupBy: raw as SpendGroup };
}

export const budgetsRoutes: RouteDef[] = [
  ...budgetRoutes("/budgets", "project", (ctx) => ({ organizationId: ctx.organizationId, projectId: ctx.projectId }), CreateBudgetBody),
  ...budgetRoutes("/org/budgets", "organization", (ctx) => ({ organizationId: ctx.organizationId, projectId: null }), CreateOrgBudgetBody),
  route({
    method: "GET",
    path: "/spend",
    query: S.SpendQuery,
    response: returns(R.SpendReport, "Metered requests that were admitted, per key; days in order, other keys by cost"),
    access: "project",
    handler: ({ services, ctx, query }) => services.spend.report({ organizationId: ctx.organizationId, projectId: ctx.projectId, ...spendQuery(query, ["agent", "model", "day"]) }),
  }),
  route({
    method: "GET",
    path: "/org/spend",
    query: S.OrgSpendQuery,
    response: returns(R.SpendReport, "Across the organization's projects"),
    access: "organization",
    role: "admin",
    handler: ({ services, ctx, query }) => services.spend.report({ organizationId: ctx.organizationId, projectId: null, ...spendQuery(query, ["project", "agent", "model", "day"]) }),
  }),
];
