// The read-time half of the cloud prefix rule (docs/secret-stores.md#cloud-mode): a secret whose storeRef names
// something outside its organization's prefix — stored before the rule, or while the instance was self-hosted — gets
// no reference in the gateway's snapshot, so the request that needs it is answered 502 credential_unavailable and
// credgate's shared store identity never reads it. Decided when the snapshot is built: nothing per request.
import { parseStoreRef } from "../core/storeRefs.ts";
import { storeRefUnderPrefix } from "../core/storeRefTenancy.ts";
import type { Mode } from "../runtime/config.ts";
import { log } from "../observability/log.ts";
import type { SecretRow } from "../services/secrets.ts";

/** Secrets already reported, so that each snapshot rebuild does not log them again. */
const reported = new Set<string>();

/** The row's `op://` or store reference as the gateway may use it; null for a store reference outside its organization's prefix in cloud mode. */
export function usableValueRef(row: Pick<SecretRow, "id" | "opRef" | "storeRef" | "organizationId">, mode: Mode): string | null {
  if (row.storeRef === null || mode !== "cloud") return row.opRef ?? row.storeRef;
  const parsed = parseStoreRef(row.storeRef);
  if (typeof parsed !== "string" && row.organizationId !== null && storeRefUnderPrefix(parsed, row.organizationId)) return row.storeRef;
  if (!reported.has(row.id)) {
    reported.add(row.id);
    log.warn("secret store reference outside the organization's prefix: not read", { secretId: row.id, storeRef: row.storeRef, organizationId: row.organizationId });
  }
  return null;
}
