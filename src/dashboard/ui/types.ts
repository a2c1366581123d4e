// What a page receives: the session, the page's project and organization, its URL parameters and an API
// client bound to that project (the session cookie authenticates; the project travels in X-Project-Id).
import type { Api } from "./api.ts";
import type { Child } from "./h.ts";
import type { Session } from "./api-types.ts";

export type { Session };
export type ProjectInfo = Session["projects"][number];
export type OrganizationInfo = Session["organizations"][number];

export interface PageCtx {
  session: Session | null;
  params: Record<string, string>;
  query: URLSearchParams;
  project: ProjectInfo | null;
  organization: OrganizationInfo | null;
  api: Api;
  /** Aborted when the page is left (long-polls stop with it). */
  signal: AbortSignal;
  /** `/p/<project><rest>` of the current project. */
  link(rest: string): string;
  navigate(path: string, opts?: { replace?: boolean }): void;
  /** Rewrites the query of the current URL without showing the page again (a dialog closed, a filter set). */
  setQuery(params: Record<string, string | null>): void;
  /** Reads the session again (after signing in, or a change to its projects) and returns it. */
  signedIn(): Promise<Session | null>;
  mode: string;
}

export type PageFn = (ctx: PageCtx) => Child | Promise<Child>;
