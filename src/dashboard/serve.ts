// Serves the dashboard on the API port: the single-page shell for every page path (so deep links such as
// `/p/<id>/secrets?create=generic` survive a reload), and its script and stylesheet, embedded at build time.
// Every answer carries a strict CSP (no inline script or style) and refuses framing.
import { dashboardScript, dashboardStyle } from "./bundle.ts" with { type: "macro" };

const SCRIPT = dashboardScript();
const STYLE = dashboardStyle();
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f4e8c"/><path d="M4 8h8M8 4v8" stroke="#fff" stroke-width="2"/></svg>`;

const version = (text: string) => Bun.hash(text).toString(36);
const SCRIPT_PATH = `/assets/app.js`;
const STYLE_PATH = `/assets/app.css`;
const ICON_PATH = `/assets/icon.svg`;

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** Headers every dashboard answer shares. `no-referrer`: claim and connect links carry tokens in their query. */
export const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** Paths answered with the shell; the browser-side router decides what each shows. */
const PAGE_PATHS = [/^\/$/, /^\/(sign-in|sign-up|accept-invite|claim)$/, /^\/app-connect\/[^/]+$/, /^\/mcp-servers(\/[^/]+)?$/, /^\/p\/[^/]+(\/.*)?$/, /^\/partner(\/.*)?$/];

/** Text made safe for HTML content and attribute values. */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's stylesheet and icon, for pages the server renders itself (the approval link's). */
export const STYLESHEET_HREF = `${STYLE_PATH}?v=${version(STYLE)}`;
export const ICON_HREF = `${ICON_PATH}?v=${version(ICON)}`;

function shell(publicUrl: string, mode: string): string {
  // The public URL lets the page warn when it is opened on another origin, where the API's cross-site
  // check rejects every change (docs/api.md#how-a-request-is-authenticated).
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>credgate</title>
<meta name="credgate-public-url" content="${escapeHtml(publicUrl)}"><meta name="credgate-mode" content="${escapeHtml(mode)}">
<link rel="icon" href="${ICON_PATH}?v=${version(ICON)}" type="image/svg+xml">
<link rel="stylesheet" href="${STYLE_PATH}?v=${version(STYLE)}">
<script type="module" src="${SCRIPT_PATH}?v=${version(SCRIPT)}"></script>
</head><body><div id="app" aria-live="polite"><p class="loading">Loading…</p></div></body></html>`;
}

function asset(body: string, type: string): Response {
  return new Response(body, { headers: { ...SECURITY_HEADERS, "content-type": type, "cache-control": "no-cache", etag: `"${version(body)}"` } });
}

export interface DashboardOptions {
  publicUrl: string;
  mode: string;
}

/** The dashboard's answer to a GET, or null when the path is not one of its own. */
export function dashboardResponse(method: string, pathname: string, opts: DashboardOptions): Response | null {
  if (method !== "GET" && method !== "HEAD") return null;
  if (pathname === SCRIPT_PATH) return asset(SCRIPT, "text/javascript; charset=utf-8");
  if (pathname === STYLE_PATH) return asset(STYLE, "text/css; charset=utf-8");
  if (pathname === ICON_PATH) return asset(ICON, "image/svg+xml");
  if (!PAGE_PATHS.some((re) => re.test(pathname))) return null;
  return new Response(method === "HEAD" ? null : shell(opts.publicUrl, opts.mode), {
    headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}
