// Sign-in: with an API key (both modes) or, on cloud, with an email and password. The key is sent once to
// POST /v1/auth/login, which answers with an HttpOnly session cookie; the page keeps nothing.
import { call } from "../api.ts";
import { form, type FieldSpec } from "../components.ts";
import { h } from "../h.ts";
import { safeNext } from "../router.ts";
import type { PageFn } from "../types.ts";

export const signInPage: PageFn = (ctx) => {
  const next = safeNext(ctx.query.get("next"));
  if (ctx.session) {
    queueMicrotask(() => ctx.navigate(next, { replace: true }));
    return h("p", null, "Signed in; opening the dashboard…");
  }
  const done = async () => {
    await ctx.signedIn();
    ctx.navigate(next, { replace: true });
  };
  const keyFields: FieldSpec[] = [
    { name: "apiKey", label: "API key", type: "password", required: true, hint: "A project or organization key (svc_…). `credgate keys` prints the keys of this instance.", match: /key/i },
  ];
  const keyForm = form({
    fields: keyFields,
    submitLabel: "Sign in",
    async onSubmit(v) {
      await call("POST", "/auth/login", { body: { apiKey: String(v.apiKey).trim() } });
      await done();
    },
  });
  const passwordForm =
    ctx.mode === "cloud"
      ? form({
          fields: [
            { name: "email", label: "Email", type: "email", required: true, autocomplete: "username", match: /email/i },
            { name: "password", label: "Password", type: "password", required: true, autocomplete: "current-password", match: /password/i },
          ],
          submitLabel: "Sign in with email",
          async onSubmit(v) {
            await call("POST", "/auth/login", { body: { email: v.email, password: v.password } });
            await done();
          },
        })
      : null;
  return h(
    "div",
    { class: "signin" },
    h("h1", { tabindex: "-1" }, "Sign in to credgate"),
    next.startsWith("/claim") && ctx.mode === "cloud"
      ? h("p", { class: "hint" }, "Sign in, or create an account, to claim the organization you were given.")
      : next !== "/" ? h("p", { class: "hint" }, "Sign in to continue to the page you asked for.") : null,
    passwordForm ? [h("h2", null, "With your email"), passwordForm, h("h2", null, "With an API key")] : null,
    keyForm,
    ctx.mode === "cloud" ? h("p", { class: "account-links" }, "New to credgate? ", h("a", { href: `/sign-up${next === "/" ? "" : `?next=${encodeURIComponent(next)}`}` }, "Create an account")) : null,
  );
};
