// A secret's store reference, checked when written (docs/injection.md#secret-stores): the checks that need the
// instance or the secret, after the route's parse (flat 400s). Secret stores serve project and organization
// secrets alike (partners are refused by the route).
import { ApiError } from "../core/errors.ts";
import type { InjectionConfigShape } from "../core/secretRules.ts";
import { parseStoreRef, type StoreRef } from "../core/storeRefs.ts";
import { outsidePrefixMessage, storeRefUnderPrefix } from "../core/storeRefTenancy.ts";

export const STORE_REF_REQUIRED_MESSAGE = "storeRef is required when valueSource is vault";
export const VAULT_DB_DATABASE_ONLY_MESSAGE = "vault-db:// references are only for database secrets (injectionConfig.database)";

/** Which secret stores this instance can read (the resolver answers: services/index.ts wires it). */
export interface StoreAvailability {
  /** The 400 message when `ref`'s store is not configured here; null when it is. */
  unavailable(ref: StoreRef): string | null;
}

/**
 * The trimmed reference, once its store is configured here, on a cloud instance under the organization's prefix
 * (`tenant`: the secret's organization id in cloud mode, null self-hosted; docs/secret-stores.md#cloud-mode), and —
 * a `vault-db://` lease giving user and password — only on a database secret.
 */
export function checkStoreRef(ref: string, cfg: InjectionConfigShape | null, stores: StoreAvailability | null, tenant: string | null = null): string {
  const parsed = parseStoreRef(ref.trim());
  if (typeof parsed === "string") throw ApiError.flat(400, parsed);
  const message = stores?.unavailable(parsed) ?? null;
  if (message !== null) throw ApiError.flat(400, message);
  if (tenant !== null && !storeRefUnderPrefix(parsed, tenant)) throw ApiError.flat(400, outsidePrefixMessage(tenant));
  if (parsed.kind === "vault-db" && cfg?.database === undefined) throw ApiError.flat(400, VAULT_DB_DATABASE_ONLY_MESSAGE);
  return ref.trim();
}
