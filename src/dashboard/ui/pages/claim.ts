// `/claim?token=…`: a customer claims an organization a partner set up for them (cloud). Signing in first
// returns here with the token; the claim itself is POST /v1/claim.
import { call } from "../api.ts";
import { button, errorText, notice } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageFn } from "../types.ts";
import type { Claimed } from "../api-types.ts";

export const claimPage: PageFn = (ctx) => {
  const token = ctx.query.get("token") ?? "";
  const status = h("div", { role: "status" });
  if (ctx.mode !== "cloud") {
    return [h("h1", { tabindex: "-1" }, "Claim an organization"), notice("info", "Claim links belong to credgate cloud; this self-hosted instance has none.")];
  }
  if (!token) return [h("h1", { tabindex: "-1" }, "Claim an organization"), notice("error", "This claim link has no token. Open the full link you were given.")];
  const claim = button(
    "Claim organization",
    async () => {
      claim.disabled = true;
      try {
        const r = await call<Claimed>("POST", "/claim", { body: { token } });
        await ctx.signedIn();
        ctx.navigate(`/p/${r.projectId}`, { replace: true });
      } catch (err) {
        replace(status, notice("error", errorText(err)));
        claim.disabled = false;
      }
    },
    { kind: "primary" },
  );
  return [
    h("h1", { tabindex: "-1" }, "Claim an organization"),
    h("p", null, `You are signed in as ${ctx.session?.user.email}. Claiming makes you the owner of the organization this link was issued for.`),
    claim,
    status,
  ];
};
