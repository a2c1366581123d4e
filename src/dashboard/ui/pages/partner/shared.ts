// What the partner portal's pages share: the status texts of a partner organization, and the gate for
// people who are not members of a partner.
import { notice } from "../../components.ts";
import { h } from "../../h.ts";
import type { PageCtx } from "../../types.ts";
import type { PartnerOrganization } from "../../api-types.ts";

export const STATUS_TEXT: Record<PartnerOrganization["status"], string> = {
  unclaimed: "Waiting for the customer to claim it",
  claimed: "Claimed by the customer",
  detached: "Detached: your partner secrets no longer apply",
};

/** The page's content, or why this person cannot see the partner portal. */
export function partnerGate(ctx: PageCtx, title: string): HTMLElement[] | null {
  if (ctx.mode !== "cloud") return [h("h1", { tabindex: "-1" }, title), notice("info", "The partner portal belongs to credgate cloud.")];
  if (!ctx.session?.partner) return [h("h1", { tabindex: "-1" }, title), notice("info", "You are not a member of a partner. A partner's owner or admin can add you.")];
  return null;
}

/** Owners and admins manage members and budgets (docs/api.md#roles partner roles). */
export const managesPartner = (ctx: PageCtx) => ctx.session?.partner?.role === "owner" || ctx.session?.partner?.role === "admin";
