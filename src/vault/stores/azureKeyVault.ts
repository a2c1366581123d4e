// Azure Key Vault (docs/secret-stores.md#azure-key-vault): `azure-kv://<vault name>/<secret>` is one
// `GET https://<vault>.vault.azure.net/secrets/<secret>?api-version=7.4` (the secret's current version) with a
// bearer token minted by client credentials for credgate's own app (CREDGATE_AZURE_TENANT_ID / _CLIENT_ID /
// _CLIENT_SECRET) for https://vault.azure.net/.default. The token is sent on the first request: the tenant is
// configured, so Key Vault's 401 challenge (which the SDK asks for to learn the tenant) would only cost a round trip.
import { AZURE_SECRET_NAME, AZURE_VAULT_NAME, type StoreRef } from "../../core/storeRefs.ts";
import { azureTokenRequest } from "../../core/tokenExchange.ts";
import { AccessToken } from "./accessToken.ts";
import { allSet, codeOf, storeRequest } from "./cloudRequest.ts";
import { StoreError, type SecretStore, type StoreContext } from "./types.ts";

const LABEL = "Azure Key Vault";
/** Key Vault's REST API version: GA since 2023 in every Azure cloud, and GetSecret's answer is the same in later ones. */
export const KEY_VAULT_API_VERSION = "7.4";
const SCOPE = "https://vault.azure.net/.default";

export function azureKeyVaultFrom(ctx: StoreContext): SecretStore | null {
  const { azureTenantId, azureClientId, azureClientSecret } = ctx.config;
  const set = allSet({ CREDGATE_AZURE_TENANT_ID: azureTenantId, CREDGATE_AZURE_CLIENT_ID: azureClientId, CREDGATE_AZURE_CLIENT_SECRET: azureClientSecret });
  if (set === null) return null;
  const tenant = set.CREDGATE_AZURE_TENANT_ID;
  const token = new AccessToken("Azure AD", () => azureTokenRequest(tenant, set.CREDGATE_AZURE_CLIENT_ID, set.CREDGATE_AZURE_CLIENT_SECRET, SCOPE), ctx.fetch, ctx.now);

  return {
    async read(ref: StoreRef, signal: AbortSignal): Promise<string> {
      if (ref.kind !== "azure-kv") throw new StoreError("wrong_store", `${LABEL} cannot read ${ref.kind}:// references`);
      // Checked when written too (core/storeRefs.ts); again here for a reference stored before: the vault name becomes
      // a DNS label, so nothing else may reach the URL's host.
      if (!AZURE_VAULT_NAME.test(ref.vault)) throw new StoreError("bad_reference", `"${ref.vault}" is not a Key Vault name (3 to 24 letters, digits and single hyphens)`);
      if (!AZURE_SECRET_NAME.test(ref.secret)) throw new StoreError("bad_reference", `"${ref.secret}" is not a Key Vault secret name (letters, digits and hyphens)`);
      const bearer = await token.get(signal);
      const url = new URL(`https://${ref.vault.toLowerCase()}.vault.azure.net/secrets/${ref.secret}?api-version=${KEY_VAULT_API_VERSION}`);
      const answer = await storeRequest(ctx.fetch, LABEL, url, { method: "GET", headers: { authorization: `Bearer ${bearer}`, accept: "application/json" }, signal });
      if (answer.status === 401) token.drop(bearer);
      if (answer.status !== 200) throw refusal(answer.status, answer.headers, answer.json, ref, tenant);
      const value = (answer.json as { value?: unknown } | null)?.value;
      if (typeof value !== "string") throw new StoreError("bad_response", `${LABEL} answered without a value for ${ref.secret} in ${ref.vault}`);
      if (value === "") throw new StoreError("empty_value", `secret ${ref.secret} in Key Vault ${ref.vault} is empty`);
      return value;
    },
  };
}

/** Key Vault's error code (`error.code`, `error.innererror.code`) as a StoreError; its message is not repeated. */
function refusal(status: number, headers: Headers, json: unknown, ref: { vault: string; secret: string }, tenant: string): StoreError {
  const error = (json as { error?: { code?: unknown; innererror?: { code?: unknown } } } | null)?.error;
  const code = codeOf(error?.innererror?.code) ?? codeOf(error?.code);
  const where = `secret ${ref.secret} in Key Vault ${ref.vault}`;
  if (status === 404) return new StoreError("not_found", `${LABEL} has no ${where}${code ? ` (${code})` : ""}`);
  if (status === 403) return new StoreError("access_denied", `${LABEL} denied credgate's Azure identity access to ${where}${code ? ` (${code})` : ""}`);
  if (status === 401) {
    // The challenge names the vault's tenant: a vault in another tenant than credgate's app is worth saying.
    const challenged = /authorization(?:_uri)?="?https:\/\/[^/"]+\/([^/",\s]+)/i.exec(headers.get("www-authenticate") ?? "")?.[1];
    const other = challenged && challenged.toLowerCase() !== tenant.toLowerCase() && codeOf(challenged) ? `; the vault belongs to tenant ${challenged}` : "";
    return new StoreError("credentials_refused", `${LABEL} refused credgate's token for ${ref.vault} (401${code ? ` ${code}` : ""})${other}`);
  }
  return new StoreError("store_error", `${LABEL} answered ${status}${code ? ` ${code}` : ""} for ${where}`);
}
