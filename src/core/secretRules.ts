// Pure rules about secrets (docs/injection.md#secrets): injection-config shape, value safety, LLM
// normalisation, default hosts and the masked preview.
import { createPrivateKey } from "node:crypto";
import type { InjectionConfig } from "./records/secrets.ts";
import { normalizeSurfaces, placeholderError, surfacesError } from "./placeholders.ts";
import { cloudVariantError, normalizeAzure, normalizeGcp } from "./cloudIdentity.ts";
import { databaseConfigError, normalizeDatabaseConfig } from "./databaseRules.ts";
import { normalizeSshConfig, sshConfigError } from "./sshRules.ts";

export type SecretTypeName = "llm_a" | "llm_b" | "generic";
export type AuthMode = "api-key" | "oauth";

/** An injectionConfig read field by field (the record's code view). */
export type InjectionConfigShape = InjectionConfig;

export const INJECTION_SHAPE_MESSAGE =
  "injectionConfig must be exactly one of: {headerName, valueFormat}, {paramName, paramFormat}, {pathTemplate}, {pathRegex, pathReplacement}, {placeholder, surfaces}, {awsSigV4}, {githubApp}, {database}, {gcpServiceAccount}, {azureClientSecret}";
export const AWS_KEY_ID_MESSAGE = "awsSigV4.accessKeyId must be 16-128 characters of A-Z and 0-9";
export const AWS_REGION_MESSAGE = "awsSigV4.region is not a region name";
export const AWS_SERVICE_MESSAGE = "awsSigV4.service is not a service name";
export const GITHUB_APP_KEY_MESSAGE = "value must be a PEM private key for a GitHub App";
export const INJECTION_REQUIRED_MESSAGE = "Header name, parameter name, or URL path template is required for generic secrets";
export const PATH_VALUE_MESSAGE = "Secret value can't contain / ? # % whitespace or control characters when injected into the URL path";
/** A header value must be printable ASCII: anything else (a pasted typographic `…`, CR, LF, NUL) breaks every request. */
export const HEADER_VALUE_MESSAGE = "value must contain only printable ASCII characters when injected into a header";

const VARIANTS: { required: string[]; optional: string[] }[] = [
  { required: ["headerName"], optional: ["valueFormat"] },
  { required: ["paramName"], optional: ["paramFormat"] },
  { required: ["pathTemplate"], optional: [] },
  { required: ["pathRegex", "pathReplacement"], optional: [] },
  { required: ["placeholder"], optional: ["surfaces"] },
];
/** Fields that are not strings (checked by their own rule). */
const NOT_STRINGS = ["surfaces"];

const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a header value may hold: printable ASCII (space to tilde). */
const HEADER_SAFE = /^[\x20-\x7e]*$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A positive integer as JSON gives it: a number, or a numeric string (docs/injection.md#github-app). */
function positiveId(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** The signed and minted variants (docs/injection.md#aws-signature-v4, #github-app): one key holding an object. */
function signedVariantError(cfg: Record<string, unknown>): string | null {
  if ("awsSigV4" in cfg) {
    const v = cfg.awsSigV4;
    if (!isObject(v) || Object.keys(v).some((k) => !["accessKeyId", "region", "service"].includes(k))) return INJECTION_SHAPE_MESSAGE;
    if (typeof v.accessKeyId !== "string" || !/^[A-Z0-9]{16,128}$/.test(v.accessKeyId)) return AWS_KEY_ID_MESSAGE;
    if (v.region !== undefined && (typeof v.region !== "string" || !/^[a-z0-9-]{2,32}$/.test(v.region))) return AWS_REGION_MESSAGE;
    if (v.service !== undefined && (typeof v.service !== "string" || !/^[a-z0-9-]{2,64}$/.test(v.service))) return AWS_SERVICE_MESSAGE;
    return null;
  }
  const v = cfg.githubApp;
  if (!isObject(v) || Object.keys(v).some((k) => k !== "appId" && k !== "installationId")) return INJECTION_SHAPE_MESSAGE;
  if (positiveId(v.appId) === null) return "githubApp.appId must be a positive integer";
  if (positiveId(v.installationId) === null) return "githubApp.installationId must be a positive integer";
  return null;
}

/** Checks an injectionConfig object; returns the first failure message or null. */
export function injectionConfigError(raw: unknown): string | null {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return INJECTION_SHAPE_MESSAGE;
  const cfg = raw as Record<string, unknown>;
  const keys = Object.keys(cfg);
  if (keys.length === 1 && (keys[0] === "awsSigV4" || keys[0] === "githubApp")) return signedVariantError(cfg);
  if (keys.length === 1 && keys[0] === "database") return databaseConfigError(cfg.database);
  if (keys.length === 1 && keys[0] === "ssh") return sshConfigError(cfg.ssh);
  if (keys.length === 1 && (keys[0] === "gcpServiceAccount" || keys[0] === "azureClientSecret")) return cloudVariantError(cfg, INJECTION_SHAPE_MESSAGE);
  const variant = VARIANTS.find(
    (v) => v.required.every((k) => k in cfg) && keys.every((k) => v.required.includes(k) || v.optional.includes(k)),
  );
  if (!variant || keys.some((k) => !NOT_STRINGS.includes(k) && typeof cfg[k] !== "string")) return INJECTION_SHAPE_MESSAGE;
  const c = cfg as InjectionConfigShape;
  if (c.headerName !== undefined) {
    if (!HTTP_TOKEN.test(c.headerName)) return "injectionConfig.headerName must be a valid HTTP header name";
    if (c.valueFormat !== undefined && !c.valueFormat.includes("{value}")) return "valueFormat must contain {value}";
    if (c.valueFormat !== undefined && !HEADER_SAFE.test(c.valueFormat)) return "valueFormat must contain only printable ASCII characters";
  }
  if (c.paramName !== undefined) {
    if (c.paramName.trim() === "") return "injectionConfig.paramName is required";
    if (c.paramFormat !== undefined && !c.paramFormat.includes("{value}")) return "paramFormat must contain {value}";
  }
  if (c.pathTemplate !== undefined) {
    if (!c.pathTemplate.startsWith("/")) return "Path template must start with /";
    if (c.pathTemplate.split("{value}").length !== 2) return "Path template must contain {value} exactly once";
  }
  if (c.pathRegex !== undefined) {
    try {
      new RegExp(c.pathRegex);
    } catch {
      return "Invalid regular expression";
    }
    if (!c.pathReplacement!.includes("{value}")) return "Replacement must include {value} (where the secret goes)";
  }
  if (c.placeholder !== undefined) return placeholderError(c.placeholder) ?? (c.surfaces === undefined ? null : surfacesError(c.surfaces));
  return null;
}

/** A checked injectionConfig: exactly one of the variants, or the first failure's message. */
export function parseInjectionConfig(raw: unknown): { ok: true; value: InjectionConfig } | { ok: false; message: string } {
  const message = injectionConfigError(raw);
  return message === null ? { ok: true, value: raw as InjectionConfig } : { ok: false, message };
}

/** The stored form of a valid injectionConfig: header and param formats default to `{value}`, surfaces to all five. */
export function normalizeInjectionConfig(cfg: InjectionConfig): InjectionConfig {
  if (cfg.placeholder !== undefined) return { placeholder: cfg.placeholder, surfaces: normalizeSurfaces(cfg.surfaces) };
  if (cfg.awsSigV4 !== undefined) {
    const { accessKeyId, region, service } = cfg.awsSigV4;
    return { awsSigV4: { accessKeyId, ...(region !== undefined ? { region } : {}), ...(service !== undefined ? { service } : {}) } };
  }
  if (cfg.githubApp !== undefined) {
    return { githubApp: { appId: positiveId(cfg.githubApp.appId)!, installationId: positiveId(cfg.githubApp.installationId)! } };
  }
  if (cfg.gcpServiceAccount !== undefined) return { gcpServiceAccount: normalizeGcp(cfg.gcpServiceAccount) };
  if (cfg.azureClientSecret !== undefined) return { azureClientSecret: normalizeAzure(cfg.azureClientSecret) };
  if (cfg.database !== undefined) return { database: normalizeDatabaseConfig(cfg.database) };
  if (cfg.ssh !== undefined) return { ssh: normalizeSshConfig(cfg.ssh) };
  if (cfg.headerName !== undefined) return { headerName: cfg.headerName, valueFormat: cfg.valueFormat ?? "{value}" };
  if (cfg.paramName !== undefined) return { paramName: cfg.paramName, paramFormat: cfg.paramFormat ?? "{value}" };
  if (cfg.pathTemplate !== undefined) return { pathTemplate: cfg.pathTemplate };
  return { pathRegex: cfg.pathRegex, pathReplacement: cfg.pathReplacement };
}

/** A value that goes into headers: the LLM types, the header variant and placeholders (docs/injection.md#secrets). */
export function injectsIntoHeader(type: SecretTypeName, cfg: InjectionConfigShape | null | undefined): boolean {
  return type !== "generic" || cfg?.headerName !== undefined || cfg?.placeholder !== undefined;
}

/** A signed or minted variant: the value is a key that makes the credential, never sent as it is (docs/injection.md#signed-and-minted-credentials). */
export function isSignedOrMinted(cfg: InjectionConfigShape | null | undefined): boolean {
  return !!cfg && (cfg.awsSigV4 !== undefined || cfg.githubApp !== undefined || isCloudIdentity(cfg));
}

/** A Google service account or an Azure client secret: tokens minted at the gateway (docs/cloud-identities.md). */
export function isCloudIdentity(cfg: InjectionConfigShape | null | undefined): boolean {
  return !!cfg && (cfg.gcpServiceAccount !== undefined || cfg.azureClientSecret !== undefined);
}

/** The value of a GitHub App secret: an RSA private key in PEM (PKCS#1 or PKCS#8). */
export function isGithubAppKey(value: string): boolean {
  try {
    return createPrivateKey({ key: value, format: "pem" }).asymmetricKeyType === "rsa";
  } catch {
    return false;
  }
}

/** A database secret (docs/databases.md#the-database-secret): its value is a password for the database listener, never sent over HTTP. */
export function isDatabase(cfg: InjectionConfigShape | null | undefined): boolean {
  return cfg?.database !== undefined;
}

/** An SSH key (docs/ssh.md#the-ssh-secret): used by the gateway's SSH interception only, never sent over HTTP. */
export function isSshKey(cfg: InjectionConfigShape | null | undefined): boolean {
  return cfg?.ssh !== undefined;
}

export function injectsIntoPath(cfg: InjectionConfigShape | null | undefined): boolean {
  return !!cfg && (cfg.pathTemplate !== undefined || cfg.pathRegex !== undefined);
}

/** A value that may be spliced into a URL path: no `/ ? # %`, whitespace or control characters. */
export function isPathSafeValue(value: string): boolean {
  return !/[/?#%\s\u0000-\u001f\u007f]/.test(value);
}

/** A value that may go into a header: printable ASCII only (no control characters, nothing beyond U+007E). */
export function isHeaderSafeValue(value: string): boolean {
  return HEADER_SAFE.test(value);
}

export const OP_REF_MESSAGE = "opRef must look like op://vault/item/field";

export function opRefError(ref: string): string | null {
  return /^op:\/\/[^/]+\/[^/]+\/[^/]+$/.test(ref.trim()) && ref.trim().split("/").slice(2).every((s) => s.trim() !== "") ? null : OP_REF_MESSAGE;
}

export interface NormalizedLlmValue {
  value: string | null;
  authMode: AuthMode;
  accountId?: string;
}

function parseJsonObject(value: string): Record<string, any> | null {
  if (!value.trimStart().startsWith("{")) return null;
  try {
    const v = JSON.parse(value);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

/**
 * LLM normalisation (docs/injection.md#secrets). llm_a: `sk-ant-oat…` means OAuth. llm_b: a Codex auth.json with
 * `tokens.access_token` is OAuth (the access token is what gets stored and injected, with its account id);
 * `{auth_mode:"apikey", OPENAI_API_KEY}` yields that key. An explicit authMode wins for both types.
 */
export function normalizeLlmValue(type: "llm_a" | "llm_b", value: string | null, explicit: AuthMode | undefined): NormalizedLlmValue {
  if (type === "llm_a") {
    const detected: AuthMode = value?.startsWith("sk-ant-oat") ? "oauth" : "api-key";
    return { value, authMode: explicit ?? detected };
  }
  const json = value === null ? null : parseJsonObject(value);
  if (json && typeof json.tokens?.access_token === "string") {
    const accountId = typeof json.tokens.account_id === "string" ? json.tokens.account_id : undefined;
    return { value: json.tokens.access_token, authMode: explicit ?? "oauth", ...(accountId ? { accountId } : {}) };
  }
  if (json && json.auth_mode === "apikey" && typeof json.OPENAI_API_KEY === "string") {
    return { value: json.OPENAI_API_KEY, authMode: explicit ?? "api-key" };
  }
  return { value, authMode: explicit ?? "api-key" };
}

export function defaultLlmHost(type: "llm_a" | "llm_b", authMode: AuthMode): string {
  if (type === "llm_a") return "api.anthropic.com";
  return authMode === "oauth" ? "chatgpt.com" : "api.openai.com";
}

export const TYPE_LABELS: Record<SecretTypeName, string> = {
  llm_a: "Anthropic-compatible API Key",
  llm_b: "OpenAI-compatible API Key",
  generic: "Generic Secret",
};

/** Masked preview: under 16 characters fully masked, else first 4 + mask + last 4. */
export function previewOf(value: string): string {
  const mask = "••••••••";
  return value.length < 16 ? mask : `${value.slice(0, 4)}${mask}${value.slice(-4)}`;
}
