// `/accept-invite?token=…` (cloud): a person invited to a partner (or made owner of a new one) chooses a
// password; the API signs them in, and the dashboard opens where they belong (the partner portal).
import { call } from "../api.ts";
import { form, notice } from "../components.ts";
import { h } from "../h.ts";
import type { PageFn } from "../types.ts";

export const acceptInvitePage: PageFn = (ctx) => {
  const token = ctx.query.get("token") ?? "";
  const title = h("h1", { tabindex: "-1" }, "Accept your invitation");
  if (ctx.mode !== "cloud") return [title, notice("info", "Invitations belong to credgate cloud; this self-hosted instance sends none.")];
  if (!token) return [title, notice("error", "This invitation link has no token. Open the full link you were given.")];
  return h(
    "div",
    { class: "signin" },
    title,
    h("p", null, "Choose a password for your account. You will sign in with your email and this password."),
    form({
      fields: [
        { name: "password", label: "Password", type: "password", required: true, autocomplete: "new-password", hint: "At least 8 characters.", match: /password/i },
        { name: "confirm", label: "Repeat the password", type: "password", required: true, autocomplete: "new-password", match: /passwords differ/ },
      ],
      submitLabel: "Set password and sign in",
      async onSubmit(v) {
        if (v.password !== v.confirm) throw new Error("The two passwords differ; type the same password twice.");
        await call("POST", "/auth/accept-invite", { body: { token, password: v.password } });
        const session = await ctx.signedIn();
        ctx.navigate(session?.partner ? "/partner" : "/", { replace: true });
      },
    }),
  );
};
