// Where the OAuth callback sends the browser (`/app-connect/{provider}?status=…`): a small page that says
// whether the app is connected, so a self-hoster without a dashboard does not land on a JSON 404.
import { findApp } from "../apps/index.ts";

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function appConnectPage(provider: string, query: URLSearchParams): Response {
  const name = findApp(provider)?.name ?? provider;
  const ok = query.get("status") === "success";
  const title = ok ? `${name} is connected` : `${name} could not be connected`;
  const detail = ok
    ? `Connection <code>${escape(query.get("connectionId") ?? "")}</code> is ready${query.get("agent_name") ? ` and granted to agent <code>${escape(query.get("agent_name")!)}</code>` : ""}. You can close this window.`
    : escape(query.get("message") ?? "The provider did not complete the authorization.");
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · credgate</title>
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}code{background:#f3f3f3;padding:0 .25rem}</style>
</head><body><h1>${escape(title)}</h1><p>${detail}</p></body></html>`;
  return new Response(html, {
    status: ok ? 200 : 400,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'" },
  });
}
