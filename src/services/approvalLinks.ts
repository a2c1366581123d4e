// Approval links (docs/policy.md#approval-links): one random token per approval, stored as its SHA-256 only,
// that lets whoever holds it decide without another credential while the approval is pending.
import { timingSafeEqual } from "node:crypto";
import { eq } from "drizzle-orm";
import { ApiError } from "../core/errors.ts";
import { tokenHash } from "../crypto/hash.ts";
import { clockNow } from "../runtime/clock.ts";
import type { ApprovalRow } from "../store/rows.ts";
import type { Store } from "../store/store.ts";

export type Decision = "approve" | "deny";

export const linkNotFound = () => ApiError.envelope(404, "Approval not found");
export const linkGone = () => ApiError.envelope(410, "Approval is no longer pending");

/** What an approval link's page shows: the request while it is pending, or why not. */
/** `unsettled`: still pending in the store although past its expiresAt (no timer settled it yet). */
export type LinkState = { state: "pending"; row: ApprovalRow } | { state: "gone"; unsettled: boolean } | { state: "not_found" };

/** `<CREDGATE_PUBLIC_URL>/approve/<id>?t=<token>`, with `&d=deny` for the deny link. */
export function approvalLinkUrl(publicUrl: string, id: string, token: string, decision: Decision): string {
  return `${publicUrl}/approve/${id}?t=${token}${decision === "deny" ? "&d=deny" : ""}`;
}

/** What the approval link `id` + `token` opens; the token is compared in constant time (as its hash). */
export async function approvalLinkState(store: Store, id: string, token: string): Promise<LinkState> {
  const [row] = await store.db.select().from(store.t.approvals).where(eq(store.t.approvals.id, id)).limit(1);
  if (!row?.linkTokenHash || !timingSafeEqual(Buffer.from(tokenHash(token), "hex"), Buffer.from(row.linkTokenHash, "hex"))) return { state: "not_found" };
  if (row.status !== "pending") return { state: "gone", unsettled: false };
  return Date.parse(row.expiresAt) > clockNow() ? { state: "pending", row } : { state: "gone", unsettled: true };
}
