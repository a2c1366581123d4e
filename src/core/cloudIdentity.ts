// Cloud identities (docs/cloud-identities.md): the `gcpServiceAccount` and `azureClientSecret` variants' rules —
// what a valid key and config are, which Azure resource a host implies, and which vendor-run domains a wildcard
// host pattern of such a secret may cover. Pure: no I/O.
import { createPrivateKey } from "node:crypto";

export const GCP_KEY_MESSAGE = "value must be a Google service-account JSON key";
export const GCP_SCOPES_MESSAGE = "gcpServiceAccount.scopes must be a non-empty array of scope strings";
export const AZURE_TENANT_MESSAGE = "azureClientSecret.tenantId must be a GUID";
export const AZURE_CLIENT_MESSAGE = "azureClientSecret.clientId must be a GUID";
export const AZURE_SCOPE_MESSAGE = "azureClientSecret.scope must be a scope such as https://management.azure.com/.default";

export const GCP_DEFAULT_SCOPES: readonly string[] = ["https://www.googleapis.com/auth/cloud-platform"];
export const GCP_DEFAULT_HOST = "*.googleapis.com";

/** The placeholder tokens the SDKs are given (docs/cloud-identities.md#placeholders). */
export const GCP_PLACEHOLDER_TOKEN = "credgate-managed-gcp";
export const AZURE_PLACEHOLDER_TOKEN = "credgate-managed-azure";

export interface GcpServiceAccountConfig {
  scopes?: string[];
}

export interface AzureClientSecretConfig {
  tenantId: string;
  clientId: string;
  scope?: string;
}

/** The parts of a service-account key the gateway uses. */
export interface GcpKey {
  clientEmail: string;
  privateKey: string;
  privateKeyId: string;
  tokenUri: string;
  projectId: string | null;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A scope string: printable ASCII without spaces (OAuth scope tokens), at most 1000 characters. */
const SCOPE = /^[\x21-\x7e]{1,1000}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The first failure of a `{gcpServiceAccount: …}` or `{azureClientSecret: …}` config, or null; `shape` for a wrong shape. */
export function cloudVariantError(cfg: Record<string, unknown>, shape: string): string | null {
  if ("gcpServiceAccount" in cfg) {
    const v = cfg.gcpServiceAccount;
    if (!isObject(v) || Object.keys(v).some((k) => k !== "scopes")) return shape;
    if (v.scopes === undefined) return null;
    if (!Array.isArray(v.scopes) || v.scopes.length === 0 || v.scopes.length > 50 || !v.scopes.every((s) => typeof s === "string" && SCOPE.test(s))) return GCP_SCOPES_MESSAGE;
    return null;
  }
  const v = cfg.azureClientSecret;
  if (!isObject(v) || Object.keys(v).some((k) => !["tenantId", "clientId", "scope"].includes(k))) return shape;
  if (typeof v.tenantId !== "string" || !GUID.test(v.tenantId)) return AZURE_TENANT_MESSAGE;
  if (typeof v.clientId !== "string" || !GUID.test(v.clientId)) return AZURE_CLIENT_MESSAGE;
  if (v.scope !== undefined && (typeof v.scope !== "string" || !SCOPE.test(v.scope))) return AZURE_SCOPE_MESSAGE;
  return null;
}

/** The stored form: GUIDs lowercase, scopes kept as given (GCP: each once, in order). */
export function normalizeGcp(cfg: GcpServiceAccountConfig): GcpServiceAccountConfig {
  return cfg.scopes === undefined ? {} : { scopes: [...new Set(cfg.scopes)] };
}

export function normalizeAzure(cfg: AzureClientSecretConfig): AzureClientSecretConfig {
  return { tenantId: cfg.tenantId.toLowerCase(), clientId: cfg.clientId.toLowerCase(), ...(cfg.scope !== undefined ? { scope: cfg.scope } : {}) };
}

/** The service-account key in a secret's value, or null when it is not one (type, email, RSA key, https token_uri). */
export function parseGcpKey(value: string): GcpKey | null {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return null;
  }
  if (!isObject(json) || json.type !== "service_account") return null;
  const { client_email: email, private_key: pem, token_uri: uri, private_key_id: keyId, project_id: project } = json;
  if (typeof email !== "string" || !/^[^\s@]+@[^\s@]+$/.test(email) || typeof pem !== "string" || typeof uri !== "string") return null;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  // The signed assertion is a credential for an hour: it goes only over TLS.
  if (url.protocol !== "https:") return null;
  try {
    if (createPrivateKey({ key: pem, format: "pem" }).asymmetricKeyType !== "rsa") return null;
  } catch {
    return null;
  }
  return {
    clientEmail: email,
    privateKey: pem,
    privateKeyId: typeof keyId === "string" ? keyId : "",
    tokenUri: uri,
    projectId: typeof project === "string" && project !== "" ? project : null,
  };
}

/**
 * The Azure resource a request's host implies, as a `.default` scope (docs/cloud-identities.md#minting), or null
 * when the host implies none (then the secret's `scope` must say).
 */
export function azureScopeForHost(host: string): string | null {
  if (host === "management.azure.com") return "https://management.azure.com/.default";
  if (host === "graph.microsoft.com") return "https://graph.microsoft.com/.default";
  if (/\.(blob|queue|table)\.core\.windows\.net$/.test(host)) return "https://storage.azure.com/.default";
  if (host.endsWith(".vault.azure.net")) return "https://vault.azure.net/.default";
  if (host.endsWith(".openai.azure.com") || host.endsWith(".cognitiveservices.azure.com")) return "https://cognitiveservices.azure.com/.default";
  return null;
}

/**
 * Domains every host of which the vendor itself serves, which the Public Suffix List lists (so a wildcard over them
 * is refused for other secrets): a cloud identity's token may cover them, since it only ever reaches the vendor.
 */
const VENDOR_SUFFIXES = ["googleapis.com", "blob.core.windows.net"];

/** Whether `pattern` is a wildcard over a vendor-served public suffix (`*.googleapis.com`, `*.blob.core.windows.net`). */
export function coversVendorSuffix(pattern: string): boolean {
  const p = pattern.trim().toLowerCase().replace(/\.$/, "");
  return p.startsWith("*.") && VENDOR_SUFFIXES.includes(p.slice(2));
}
