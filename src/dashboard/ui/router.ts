// The dashboard's pages by path. The server answers the same shell for all of them, so each is a deep link
// that survives a reload; the path names the project (`/p/<projectId>/…`), as the gateway's guidance links do.
import type { PageFn } from "./types.ts";

export interface RouteDef {
  path: string;
  title: string;
  page: PageFn;
  /** Shown without a session (sign-in, the OAuth landing page). */
  public?: boolean;
  /** The navigation entry highlighted on this page. */
  nav?: string;
  /** The partner portal's pages have their own navigation (no project). */
  area?: "partner";
}

export interface Matched {
  route: RouteDef;
  params: Record<string, string>;
}

export function matchRoute(routes: RouteDef[], pathname: string): Matched | null {
  const parts = pathname.replace(/\/+$/, "").split("/").slice(1);
  for (const route of routes) {
    const want = route.path === "/" ? [] : route.path.split("/").slice(1);
    if (want.length !== (pathname === "/" ? 0 : parts.length)) continue;
    const params: Record<string, string> = {};
    let ok = true;
    want.forEach((seg, i) => {
      const got = parts[i]!;
      if (seg.startsWith(":")) params[seg.slice(1)] = decodeURIComponent(got);
      else if (seg !== got) ok = false;
    });
    if (ok) return { route, params };
  }
  return null;
}

/** A `next` target after sign-in: only a path of this site (never `//host` or a scheme). */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/";
}
