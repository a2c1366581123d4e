// Sign-up (cloud): an email and a password make an account with its own organization, a Default project and a
// Default agent, and sign in. A `next` page (a claim link, say) is kept through the detour, as on sign-in.
import { call } from "../api.ts";
import { form, notice } from "../components.ts";
import { h } from "../h.ts";
import { safeNext } from "../router.ts";
import type { PageFn } from "../types.ts";

export const signUpPage: PageFn = (ctx) => {
  const next = safeNext(ctx.query.get("next"));
  const title = h("h1", { tabindex: "-1" }, "Create your credgate account");
  if (ctx.mode !== "cloud") return [title, notice("info", "Accounts with a password belong to credgate cloud. On this self-hosted instance, sign in with an API key."), h("p", null, h("a", { href: "/sign-in" }, "Sign in"))];
  if (ctx.session) {
    queueMicrotask(() => ctx.navigate(next, { replace: true }));
    return h("p", null, "Signed in; opening the dashboard…");
  }
  const signInLink = `/sign-in${next === "/" ? "" : `?next=${encodeURIComponent(next)}`}`;
  return h(
    "div",
    { class: "signin" },
    title,
    next.startsWith("/claim") ? h("p", { class: "hint" }, "Create an account, then claim the organization you were given.") : null,
    form({
      fields: [
        { name: "name", label: "Your name", autocomplete: "name", hint: "Optional.", match: /^name/i },
        { name: "email", label: "Email", type: "email", required: true, autocomplete: "username", match: /email/i },
        { name: "password", label: "Password", type: "password", required: true, autocomplete: "new-password", hint: "At least 8 characters.", match: /password/i },
      ],
      submitLabel: "Create account",
      async onSubmit(v) {
        const name = String(v.name).trim();
        await call("POST", "/auth/signup", { body: { email: String(v.email).trim(), password: v.password, ...(name ? { name } : {}) } });
        await ctx.signedIn();
        ctx.navigate(next, { replace: true });
      },
    }),
    h("p", { class: "account-links" }, "Already have an account? ", h("a", { href: signInLink }, "Sign in")),
  );
};
