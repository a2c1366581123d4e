// Partner secrets: credentials (typically LLM keys) injected for every organization of the partner that is
// not detached, with the lowest precedence (docs/injection.md#precedence). Values are stored by credgate (no external vault).
import { h } from "../../h.ts";
import type { PageFn } from "../../types.ts";
import { secretsView } from "../secrets.ts";
import { partnerGate } from "./shared.ts";

export const partnerSecretsPage: PageFn = async (ctx) =>
  partnerGate(ctx, "Partner secrets") ?? [
    h("h1", { tabindex: "-1" }, "Partner secrets"),
    h("p", { class: "lead" }, "Injected for every organization you run that is not detached; an organization's or project's own secret on the same header wins. Spend budgets per organization are set on each organization's page."),
    ...(await secretsView(ctx, "partner")),
  ];
