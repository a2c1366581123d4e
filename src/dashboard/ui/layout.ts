// The frame around every signed-in page: a skip link, the project switcher, the navigation, sign-out, and a
// warning when the page is open on another origin than CREDGATE_PUBLIC_URL (every change would be rejected).
import { call } from "./api.ts";
import { button, notice } from "./components.ts";
import { h, type Child } from "./h.ts";
import type { RouteDef } from "./router.ts";
import type { OrganizationInfo, ProjectInfo, Session } from "./types.ts";

export interface LayoutInput {
  session: Session | null;
  project: ProjectInfo | null;
  organization: OrganizationInfo | null;
  route: RouteDef;
  navigate(path: string, opts?: { replace?: boolean }): void;
  mode: string;
}

const NAV: [key: string, label: string, rest: string][] = [
  ["overview", "Overview", ""],
  ["agents", "Agents", "/agents"],
  ["secrets", "Secrets", "/secrets"],
  ["apps", "Apps", "/apps"],
  ["mcp-servers", "MCP servers", "/mcp-servers"],
  ["policy", "Policy", "/policy"],
  ["approvals", "Approvals", "/approvals"],
  ["logs", "Logs", "/logs"],
  ["budgets", "Budgets", "/budgets"],
  ["notifications", "Notifications", "/notifications"],
  ["organization", "Organization", "/org"],
];

function originWarning(): HTMLElement | null {
  const publicUrl = document.querySelector<HTMLMetaElement>('meta[name="credgate-public-url"]')?.content;
  if (!publicUrl) return null;
  let origin = "";
  try {
    origin = new URL(publicUrl).origin;
  } catch {
    return null;
  }
  if (origin === location.origin) return null;
  return notice("error", "This dashboard is configured for ", h("a", { href: publicUrl }, publicUrl), `. Changes made from ${location.origin} are rejected by credgate's cross-site check; open the configured address instead (or set CREDGATE_PUBLIC_URL).`);
}

function projectSwitcher(input: LayoutInput): HTMLElement | null {
  const projects = input.session?.projects ?? [];
  if (projects.length === 0) return null;
  const select = h(
    "select",
    { id: "project-switcher", "aria-label": "Project" },
    ...projects.map((p) => {
      const org = input.session?.organizations.find((o) => o.id === p.organizationId);
      const label = (input.session?.organizations.length ?? 0) > 1 && org ? `${org.name} / ${p.name}` : p.name;
      return h("option", { value: p.id, selected: p.id === input.project?.id }, label);
    }),
  );
  select.addEventListener("change", () => {
    // The same page in the other project (a record's own page would not exist there: go to its list).
    const rest = location.pathname.split("/").slice(3, 4).join("/");
    input.navigate(`/p/${select.value}${rest ? `/${rest}` : ""}`);
  });
  return h("div", { class: "switcher" }, h("label", { for: "project-switcher" }, "Project"), select);
}

const PARTNER_NAV: [key: string, label: string, path: string][] = [
  ["partner-orgs", "Organizations", "/partner"],
  ["partner-secrets", "Partner secrets", "/partner/secrets"],
  ["partner-members", "Members", "/partner/members"],
];

/** The entries of the main navigation: the project's pages, or the partner portal's. */
function navEntries(input: LayoutInput, base: string): [key: string, label: string, href: string][] {
  if (input.route.area === "partner") return PARTNER_NAV;
  return input.session?.projects.length ? NAV.map(([key, label, rest]) => [key, label, base + rest]) : [];
}

/** Switches between the projects and the partner portal, for people who have both. */
function areaLink(input: LayoutInput, base: string): HTMLElement | null {
  if (!input.session?.partner) return null;
  if (input.route.area !== "partner") return h("a", { href: "/partner", class: "area" }, `Partner portal: ${input.session.partner.name}`);
  return input.session.projects.length ? h("a", { href: base, class: "area" }, "Projects") : null;
}

/**
 * What the session reaches, when it is less than the person (docs/api.md#accounts-and-sessions): signed in with a
 * project key, that project only; with an organization key, that organization only. Nothing for a password's.
 */
function scopeLabel(session: Session | null): HTMLElement | null {
  const kind = session?.scope.kind;
  if (kind !== "project" && kind !== "organization") return null;
  const [text, title] =
    kind === "project"
      ? ["Project key session", "Signed in with a project API key: this session reaches that project only, and ends when the key is regenerated (12 hours at most)."]
      : ["Organization key session", "Signed in with an organization API key: this session reaches that organization only, and ends when the key is regenerated (12 hours at most)."];
  return h("span", { class: "badge scope", id: "session-scope", title }, text);
}

/** Shows the projects of a session read again (a project created, renamed or deleted) without redrawing the page. */
export function redrawSwitcher(input: LayoutInput): void {
  document.querySelector(".switcher-slot")?.replaceChildren(...[projectSwitcher(input)].filter((x) => x !== null));
}

export function layout(input: LayoutInput, ...content: Child[]): HTMLElement {
  const base = `/p/${input.project?.id ?? input.session?.projects[0]?.id ?? ""}`;
  const signOut = button("Sign out", async () => {
    signOut.disabled = true;
    try {
      await call("POST", "/auth/logout");
    } catch {
      // Signed out already (or the session expired): the sign-in page is where to go either way.
    }
    location.assign("/sign-in");
  });
  return h(
    "div",
    { class: "frame" },
    h("a", { href: "#main", class: "skip" }, "Skip to content"),
    h(
      "header",
      { class: "top" },
      h("a", { href: input.route.area === "partner" ? "/partner" : base, class: "brand" }, "credgate"),
      input.route.area === "partner" ? h("span", { class: "area-name" }, `Partner: ${input.session?.partner?.name ?? ""}`) : h("div", { class: "switcher-slot" }, projectSwitcher(input)),
      areaLink(input, base),
      h("div", { class: "who" }, scopeLabel(input.session), input.session ? h("span", { class: "email" }, input.session.user.email) : null, signOut),
    ),
    h(
      "div",
      { class: "body" },
      h(
        "nav",
        { "aria-label": "Main" },
        h("ul", null, ...navEntries(input, base).map(([key, label, href]) => h("li", null, h("a", { href, "aria-current": input.route.nav === key ? "page" : null }, label)))),
      ),
      h("main", { id: "main" }, originWarning(), ...content),
    ),
  );
}
