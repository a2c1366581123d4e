// Secrets: project routes `/secrets` (project·any) and organization routes `/org/secrets` (organization·admin), docs/injection.md#secrets.
import { Type as T } from "@sinclair/typebox";
import { ApiError, badRequest } from "../../core/errors.ts";
import { hostPatternError, HOST_MESSAGES, pathPatternError } from "../../core/patterns.ts";
import { coversVendorSuffix } from "../../core/cloudIdentity.ts";
import { INJECTION_REQUIRED_MESSAGE, injectionConfigError, opRefError } from "../../core/secretRules.ts";
import { parseStoreRef } from "../../core/storeRefs.ts";
import { NO_FIELDS_MESSAGE, type SecretOwner } from "../../services/secrets.ts";
import type { PartnerContext, RequestContext } from "../auth.ts";
import type { InjectionConfig } from "../../core/records/secrets.ts";
import { created, noContent, route, type ContextFor, type RouteDef } from "../route.ts";
import { refined } from "../validate.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

type Body = Record<string, unknown>;
const isInline = (b: Body) => (b.valueSource ?? "inline") === "inline";
const isVault = (b: Body) => b.valueSource === "external_vault";
const isStore = (b: Body) => b.valueSource === "vault";
const storeRefError = (ref: string) => {
  const parsed = parseStoreRef(ref);
  return typeof parsed === "string" ? parsed : null;
};
const configHas = (cfg: unknown, key: string) => typeof cfg === "object" && cfg !== null && key in cfg;
const isGcpConfig = (cfg: unknown) => configHas(cfg, "gcpServiceAccount");
const isCloudConfig = (cfg: unknown) => isGcpConfig(cfg) || configHas(cfg, "azureClientSecret");

const secretType = T.Union([T.Literal("llm_a"), T.Literal("llm_b"), T.Literal("generic")]);
const valueSource = T.Union([T.Literal("inline"), T.Literal("external_vault"), T.Literal("vault")]);
const opDisplay = T.Object({
  vault: T.Optional(T.String({ maxLength: 255 })),
  item: T.Optional(T.String({ maxLength: 255 })),
  field: T.Optional(T.String({ maxLength: 255 })),
});
const pathPattern = T.Union([T.String(), T.Null()], { trim: true, refine: (v: string) => pathPatternError(v) });

/** Create body, fields in the order the contract checks them (docs/injection.md#secrets). */
export const CreateSecretBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  type: secretType,
  valueSource: T.Optional(valueSource),
  value: T.Optional(
    T.String({ minLength: 1, maxLength: 10000, trim: true, blankIsAbsent: true, requiredWhen: isInline, skipWhen: (b: Body) => !isInline(b), missing: "value is required" }),
  ),
  opRef: T.Optional(
    T.String({
      trim: true,
      blankIsAbsent: true,
      requiredWhen: isVault,
      skipWhen: (b: Body) => !isVault(b),
      missing: "opRef is required when valueSource is external_vault",
      refine: opRefError,
    }),
  ),
  storeRef: T.Optional(
    T.String({
      trim: true,
      blankIsAbsent: true,
      requiredWhen: isStore,
      skipWhen: (b: Body) => !isStore(b),
      missing: "storeRef is required when valueSource is vault",
      refine: storeRefError,
    }),
  ),
  opDisplay: T.Optional(opDisplay),
  metadata: T.Optional(T.Object({ authMode: T.Optional(T.Union([T.Literal("api-key"), T.Literal("oauth")])) })),
  hostPattern: T.Optional(
    T.String({
      trim: true,
      blankIsAbsent: true,
      // A Google service account defaults to *.googleapis.com (docs/cloud-identities.md#variants).
      requiredWhen: (b: Body) => b.type === "generic" && !isGcpConfig(b.injectionConfig),
      missing: HOST_MESSAGES.required,
      refine: (v: string, b: Body) => (isCloudConfig(b.injectionConfig) && coversVendorSuffix(v) ? null : hostPatternError(v)),
    }),
  ),
  pathPattern: T.Optional(pathPattern),
  injectionConfig: T.Optional(
    refined<InjectionConfig>({
      requiredWhen: (b: Body) => b.type === "generic",
      skipWhen: (b: Body) => b.type !== "generic",
      missing: badRequest(INJECTION_REQUIRED_MESSAGE),
      refine: injectionConfigError,
    }),
  ),
});

export const UpdateSecretBody = T.Object({
  name: T.Optional(T.String({ minLength: 1, maxLength: 255, trim: true })),
  type: T.Optional(T.Unknown({ refine: () => "type cannot be changed" })),
  valueSource: T.Optional(valueSource),
  value: T.Optional(T.String({ minLength: 1, maxLength: 10000, trim: true })),
  opRef: T.Optional(T.String({ trim: true, refine: opRefError })),
  storeRef: T.Optional(T.String({ trim: true, refine: storeRefError })),
  opDisplay: T.Optional(opDisplay),
  // A vendor-served wildcard is checked against the secret's variant by the service (docs/cloud-identities.md#variants).
  hostPattern: T.Optional(T.String({ trim: true, refine: (v: string) => (coversVendorSuffix(v) ? null : hostPatternError(v)) })),
  pathPattern: T.Optional(pathPattern),
  injectionConfig: T.Optional(T.Unknown()),
});

const noFields = ApiError.flat(400, NO_FIELDS_MESSAGE);

/** Partner secrets hold their value here: an external-vault reference would be the partner's vault, read for its customers. */
export const PARTNER_INLINE_ONLY = "Partner secrets must hold an inline value (valueSource external_vault is not supported)";
/** Nor a secret store of theirs (docs/injection.md#secret-stores): a partner's values reach every customer. */
export const PARTNER_STORE_INLINE_ONLY = "Partner secrets must hold an inline value (valueSource vault is not supported)";

function secretRoutes<A extends "project" | "organization" | "partner">(prefix: "/secrets" | "/org/secrets" | "/partner/secrets", access: A, owner: (ctx: ContextFor<A>) => SecretOwner): RouteDef[] {
  const role = access === "organization" ? "admin" : "any";
  const modes = access === "partner" ? (["cloud"] as const) : undefined;
  const inlineOnly = (body: { valueSource?: string; storeRef?: string }) => {
    if (access === "partner" && body.valueSource === "external_vault") throw badRequest(PARTNER_INLINE_ONLY);
    if (access === "partner" && (body.valueSource === "vault" || body.storeRef !== undefined)) throw badRequest(PARTNER_STORE_INLINE_ONLY);
  };
  return [
    route({
      method: "POST",
      path: prefix,
      response: returnsCreated(R.SecretCreated),
      access,
      role,
      modes: modes && [...modes],
      body: CreateSecretBody,
      handler: async ({ services, ctx, body }) => {
        inlineOnly(body);
        return created(await services.secrets.create(owner(ctx), body));
      },
    }),
    route({
      method: "PATCH",
      path: `${prefix}/:secretId`,
      response: returns(R.Success),
      access,
      role,
      modes: modes && [...modes],
      body: UpdateSecretBody,
      emptyBody: noFields,
      handler: async ({ services, ctx, params, body }) => {
        inlineOnly(body);
        await services.secrets.update(owner(ctx), params.secretId, body);
        return R.SUCCESS;
      },
    }),
    route({
      method: "POST",
      path: `${prefix}/:secretId/test`,
      response: returns(R.SecretTestResult, "An AWS Signature V4 secret signs STS GetCallerIdentity; a GitHub App secret mints an installation token (not kept); a secret-store secret is read once from its store, bypassing the cache"),
      access,
      role,
      modes: modes && [...modes],
      handler: ({ services, ctx, params }) => services.secretTests.test(owner(ctx), params.secretId),
    }),
    route({
      method: "DELETE",
      path: `${prefix}/:secretId`,
      response: returnsNothing(),
      access,
      role,
      modes: modes && [...modes],
      handler: async ({ services, ctx, params }) => {
        await services.secrets.delete(owner(ctx), params.secretId);
        return noContent();
      },
    }),
  ];
}

const projectOwner = (ctx: RequestContext): SecretOwner => ({ scope: "project", projectId: ctx.projectId, organizationId: ctx.organizationId });
const orgOwner = (ctx: RequestContext): SecretOwner => ({ scope: "organization", organizationId: ctx.organizationId });
const partnerOwner = (ctx: PartnerContext): SecretOwner => ({ scope: "partner", partnerId: ctx.partnerId });

export const secretsRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/secrets",
    response: returns(T.Array(R.Secret), "The project's secrets and the organization's, newest first"),
    access: "project",
    handler: ({ services, ctx }) => services.secrets.listForProject(ctx.projectId, ctx.organizationId),
  }),
  route({
    method: "GET",
    path: "/secrets/:secretId",
    response: returns(R.Secret),
    access: "project",
    handler: ({ services, ctx, params }) => services.secrets.getForProject(ctx.projectId, ctx.organizationId, params.secretId),
  }),
  ...secretRoutes("/secrets", "project", projectOwner),
  route({
    method: "GET",
    path: "/org/secrets",
    response: returns(T.Array(R.Secret)),
    access: "organization",
    role: "admin",
    handler: ({ services, ctx }) => services.secrets.list(orgOwner(ctx)),
  }),
  route({
    method: "GET",
    path: "/org/secrets/:secretId",
    response: returns(R.Secret),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx, params }) => services.secrets.view(await services.secrets.find(orgOwner(ctx), params.secretId)),
  }),
  ...secretRoutes("/org/secrets", "organization", orgOwner),
  route({
    method: "GET",
    path: "/partner/secrets",
    modes: ["cloud"],
    response: returns(T.Array(R.Secret), "The partner's secrets (scope partner)"),
    access: "partner",
    handler: ({ services, ctx }) => services.secrets.list(partnerOwner(ctx)),
  }),
  ...secretRoutes("/partner/secrets", "partner", partnerOwner),
];
