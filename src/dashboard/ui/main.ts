// The dashboard's entry: finds the page for the URL, makes sure there is a session (else sign-in, returning to
// the page asked for), and shows the page inside the layout. Links inside the app change the page without a
// reload; the back button works through popstate.
import { call, projectApi, setUnauthorizedHandler } from "./api.ts";
import { errorText, notice } from "./components.ts";
import { h, replace } from "./h.ts";
import { layout, redrawSwitcher } from "./layout.ts";
import { ROUTES } from "./routes.ts";
import { matchRoute } from "./router.ts";
import type { PageCtx, Session } from "./types.ts";

const root = document.getElementById("app")!;
const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
const MODE = meta("credgate-mode");

let session: Session | null = null;
let current: AbortController | null = null;
let firstRender = true;

async function loadSession(): Promise<Session | null> {
  try {
    session = await call<Session>("GET", "/auth/session");
  } catch {
    session = null;
  }
  return session;
}

function navigate(path: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  void render();
}

function toSignIn(): void {
  const here = location.pathname + location.search;
  session = null;
  navigate(`/sign-in${here === "/" ? "" : `?next=${encodeURIComponent(here)}`}`, { replace: true });
}
setUnauthorizedHandler(toSignIn);

async function render(): Promise<void> {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const url = new URL(location.href);
  const matched = matchRoute(ROUTES, url.pathname);
  if (!matched) {
    document.title = "Not found · credgate";
    replace(root, h("main", { id: "main", class: "standalone" }, h("h1", { tabindex: "-1" }, "Page not found"), h("p", null, h("a", { href: "/" }, "Go to the dashboard"))));
    return;
  }
  const { route, params } = matched;
  // Public pages (sign-in, the OAuth landing) read the session too: signed in, they move on.
  if (!session) await loadSession();
  if (!session && !route.public) return toSignIn();
  if (controller.signal.aborted) return;
  if (url.pathname === "/") {
    // The first project; a partner member without an organization of their own starts in the partner portal.
    const first = session?.projects[0];
    if (first) return navigate(`/p/${first.id}`, { replace: true });
    if (session?.partner) return navigate("/partner", { replace: true });
  }
  const project = params.project ? (session?.projects.find((p) => p.id === params.project) ?? null) : null;
  if (params.project && !project) {
    document.title = "Project not found · credgate";
    replace(root, layout({ session, project: null, organization: null, route, navigate, mode: MODE }, h("h1", { tabindex: "-1" }, "Project not found"), notice("error", "This project does not exist or you are not a member of it. Choose a project above.")));
    return;
  }
  const organization = project ? (session?.organizations.find((o) => o.id === project.organizationId) ?? null) : (session?.organizations[0] ?? null);
  const ctx: PageCtx = {
    session,
    params,
    query: url.searchParams,
    project,
    organization,
    // The partner portal's calls name no project or organization: the partner is the session's own.
    api: route.area === "partner" ? projectApi(null, null, controller.signal) : projectApi(project?.id ?? null, organization?.id ?? null, controller.signal),
    signal: controller.signal,
    link: (rest) => `/p/${project?.id ?? session?.projects[0]?.id ?? ""}${rest}`,
    navigate,
    setQuery(values) {
      const u = new URL(location.href);
      for (const [k, v] of Object.entries(values)) v === null ? u.searchParams.delete(k) : u.searchParams.set(k, v);
      history.replaceState(null, "", u.pathname + u.search);
    },
    async signedIn() {
      const s = await loadSession();
      redrawSwitcher({ session: s, project, organization, route, navigate, mode: MODE });
      return s;
    },
    mode: MODE,
  };
  document.title = `${route.title} · credgate`;
  let content;
  try {
    content = await route.page(ctx);
  } catch (err) {
    if ((err as Error).name === "AbortError") return;
    content = [h("h1", { tabindex: "-1" }, route.title), notice("error", errorText(err))];
  }
  if (controller.signal.aborted) return;
  replace(root, route.public && !project ? h("main", { id: "main", class: "standalone" }, content) : layout({ session, project, organization, route, navigate, mode: MODE }, content));
  // Keyboard and screen-reader users land on the new page's heading, not at the top of the old one.
  if (!firstRender) root.querySelector<HTMLElement>("h1")?.focus();
  firstRender = false;
}

document.addEventListener("click", (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = (ev.target as Element).closest?.("a");
  if (!a || a.target || a.hasAttribute("download") || a.origin !== location.origin) return;
  if (!matchRoute(ROUTES, a.pathname)) return; // /v1/… (CA download, OAuth start) is the API's.
  ev.preventDefault();
  navigate(a.pathname + a.search);
});
window.addEventListener("popstate", () => void render());
void render();
