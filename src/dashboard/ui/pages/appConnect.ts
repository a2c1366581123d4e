// Where the OAuth callback lands (`/app-connect/<provider>?status=…`): with a session it goes straight on to
// the app's page in the project the connect started from, which says whether it worked; without one it says
// so here and offers sign-in.
import { h } from "../h.ts";
import { notice } from "../components.ts";
import type { PageFn } from "../types.ts";

/** Set by the apps page before it leaves for the provider's consent screen. */
export const CONNECT_PROJECT_KEY = "credgate.connectProject";

export const appConnectPage: PageFn = (ctx) => {
  const provider = ctx.params.provider!;
  const ok = ctx.query.get("status") === "success";
  const message = ctx.query.get("message") ?? "The provider did not complete the authorization.";
  const projects = ctx.session?.projects ?? [];
  if (projects.length > 0) {
    const remembered = sessionStorage.getItem(CONNECT_PROJECT_KEY);
    sessionStorage.removeItem(CONNECT_PROJECT_KEY);
    const project = projects.find((p) => p.id === remembered) ?? projects[0]!;
    const q = new URLSearchParams(ok ? { connected: ctx.query.get("connectionId") ?? "" } : { error: message });
    // credgate's callback granted the connection to the agent the guidance link named.
    const agent = ctx.query.get("agent_name");
    if (ok && agent) q.set("agent", agent);
    queueMicrotask(() => ctx.navigate(`/p/${project.id}/apps/${encodeURIComponent(provider)}?${q}`, { replace: true }));
    return h("p", { role: "status" }, "Opening the app…");
  }
  return [
    h("h1", { tabindex: "-1" }, ok ? `${provider} is connected` : `${provider} could not be connected`),
    ok ? notice("success", `Connection ${ctx.query.get("connectionId") ?? ""} is ready.`) : notice("error", message),
    h("p", null, h("a", { href: `/sign-in?next=${encodeURIComponent(`/`)}` }, "Sign in to the dashboard")),
  ];
};
