// Which store names an organization may use on a cloud instance (docs/secret-stores.md#cloud-mode): credgate's
// store identities are the operator's, shared by every organization, so a reference must name something under
// the organization's own prefix — its id — or any organization could read what those identities can read.
import type { StoreRef } from "./storeRefs.ts";

/** The 400 message for a reference outside the organization's prefix on a cloud instance. */
export function outsidePrefixMessage(organizationId: string): string {
  return `In cloud mode a storeRef must name a secret under this organization's prefix "${organizationId}"`;
}

/**
 * Whether `ref` names something under `organizationId`'s prefix: the first segment of a Vault KV path
 * (`vault://<mount>/<org>/…#field`), or a name that starts with `<org>-` (a Vault database role, a Google secret id,
 * an Azure secret) or `<org>/` (an AWS secret name). Something must follow the prefix. A command has no prefix
 * (commands are self-hosted only).
 */
export function storeRefUnderPrefix(ref: StoreRef, organizationId: string): boolean {
  if (organizationId === "") return false;
  switch (ref.kind) {
    case "vault":
      return ref.path.startsWith(`${organizationId}/`);
    case "vault-db":
      return startsWithThenMore(ref.role, `${organizationId}-`);
    case "aws-sm":
      return startsWithThenMore(ref.name, `${organizationId}/`);
    case "gcp-sm":
      return startsWithThenMore(ref.secret, `${organizationId}-`);
    case "azure-kv":
      return startsWithThenMore(ref.secret, `${organizationId}-`);
    case "cmd":
      return false;
  }
}

const startsWithThenMore = (name: string, prefix: string): boolean => name.length > prefix.length && name.startsWith(prefix);
