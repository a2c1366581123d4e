// The approval link's page (docs/policy.md#approval-links): `GET /approve/<id>?t=<token>` shows the held request
// (method, host, path, agent, summary — all HTML-escaped) with Approve / Deny buttons, and changes nothing (link
// previewers fetch URLs). The buttons post a plain HTML form to `POST /approve/<id>`, which decides like
// `POST /v1/approvals/{id}/link-decision` and shows the outcome: no script, under the dashboard's strict CSP.
import { ApiError } from "../core/errors.ts";
import { log } from "../observability/log.ts";
import { requestTarget } from "./requestTarget.ts";
import { escapeHtml as e, ICON_HREF, SECURITY_HEADERS, STYLESHEET_HREF } from "../dashboard/serve.ts";
import type { ApprovalRow } from "../store/rows.ts";
import type { Services } from "../services/index.ts";

const PATH = /^\/approve\/([^/]+)$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A form post is a token and a choice: anything bigger is not one. */
const FORM_MAX = 4096;

/** The buttons' choices: the decision and, for "approve for …", the minutes to remember it. */
const CHOICES: Record<string, { decision: "approve" | "deny"; minutes?: number }> = {
  approve: { decision: "approve" },
  "approve-15": { decision: "approve", minutes: 15 },
  "approve-60": { decision: "approve", minutes: 60 },
  deny: { decision: "deny" },
};

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${e(title)} · credgate</title>
<link rel="icon" href="${ICON_HREF}" type="image/svg+xml"><link rel="stylesheet" href="${STYLESHEET_HREF}">
</head><body><main class="standalone approval-link">${body}</main></body></html>`;
  return new Response(html, {
    status,
    headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-robots-tag": "noindex" },
  });
}

const notFoundPage = () => page(404, "Approval not found", `<h1>Approval not found</h1><p class="lead">This approval link is not valid. Check that you opened the whole link.</p>`);
const gonePage = () =>
  page(410, "No longer pending", `<h1>This approval is no longer pending</h1><p class="lead">It was already decided, or it expired or was cancelled. Nothing was changed.</p>`);

function requestPage(row: ApprovalRow, token: string, denyLink: boolean): Response {
  const details = (row.summary?.details ?? []).map((d) => `<dt>${e(d.label)}</dt><dd>${e(d.value)}</dd>`).join("");
  const remember = row.ruleName
    ? `<button class="btn plain" name="choice" value="approve-15">Approve for 15 min</button>
<button class="btn plain" name="choice" value="approve-60">Approve for 1 h</button>`
    : "";
  const approve = `<button class="btn ${denyLink ? "plain" : "primary"}" name="choice" value="approve">Approve</button>`;
  const deny = `<button class="btn ${denyLink ? "primary danger-fill" : "danger"}" name="choice" value="deny">Deny</button>`;
  const pathOnly = row.path.split("?")[0]!;
  return page(
    200,
    "Approval needed",
    `<h1>${denyLink ? "Deny this request?" : "Approval needed"}</h1>
<p class="lead">Agent <strong>${e(row.agentName)}</strong> (${e(row.agentIdentifier)}) is waiting for a decision on this request.</p>
<h2 class="request"><span class="method">${e(row.method)}</span> <span class="host">${e(row.host)}</span><span class="path">${e(pathOnly)}</span></h2>
${row.summary ? `<p>${e(row.summary.action)}</p><dl class="details">${details}</dl>` : ""}
${row.ruleName ? `<p class="meta">Held by the rule “${e(row.ruleName)}”.</p>` : ""}
<p class="meta">Expires at <time datetime="${e(row.expiresAt)}">${e(row.expiresAt)}</time> (UTC).</p>
<form method="post" action="/approve/${e(row.id)}">
<input type="hidden" name="t" value="${e(token)}">
<div class="actions">${denyLink ? `${deny}${approve}` : `${approve}${deny}`}${remember}</div>
</form>
${row.ruleName ? `<p class="hint">“Approve for …” also lets this agent’s later requests that the same rule would hold pass without asking, until then.</p>` : ""}`,
  );
}

function decidedPage(decision: "approve" | "deny", rememberedUntil: string | null): Response {
  const until = rememberedUntil
    ? `<p class="lead">Later requests of this agent that the same rule would hold pass without asking until <time datetime="${e(rememberedUntil)}">${e(rememberedUntil)}</time> (UTC).</p>`
    : "";
  return decision === "approve"
    ? page(200, "Approved", `<h1>Approved</h1><p class="lead">The agent’s request is on its way.</p>${until}`)
    : page(200, "Denied", `<h1>Denied</h1><p class="lead">The agent was told the request was denied.</p>`);
}

async function decide(services: Services, id: string, request: Request): Promise<Response> {
  const text = await request.text();
  if (text.length > FORM_MAX) return page(413, "Too large", `<h1>Request too large</h1>`);
  const form = new URLSearchParams(text);
  const choice = CHOICES[form.get("choice") ?? ""];
  if (!choice) return page(400, "Choose a decision", `<h1>Choose Approve or Deny</h1><p class="lead">Go back and press one of the buttons.</p>`);
  try {
    const until = await services.approvals.decideByLink(id, form.get("t") ?? "", choice.decision, choice.minutes);
    return decidedPage(choice.decision, until);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return notFoundPage();
    if (err instanceof ApiError && err.status === 410) return gonePage();
    throw err;
  }
}

/** The answer for `/approve/<id>`, or null when the path is another one. */
export async function approvalLinkResponse(services: Services, request: Request, pathname: string): Promise<Response | null> {
  const id = PATH.exec(pathname)?.[1];
  if (id === undefined) return null;
  try {
    return await answer(services, request, id);
  } catch (err) {
    const unavailable = services.deps.store.isUnavailable(err);
    log.error("approval link page failed", { error: (err as Error).message });
    return page(unavailable ? 503 : 500, "Try again", `<h1>Something went wrong</h1><p class="lead">credgate could not ${unavailable ? "reach its database" : "handle this approval link"}. Try again in a moment.</p>`);
  }
}

async function answer(services: Services, request: Request, id: string): Promise<Response | null> {
  if (request.method === "POST") return UUID.test(id) ? decide(services, id, request) : notFoundPage();
  if (request.method !== "GET" && request.method !== "HEAD") return null;
  const query = requestTarget(request.url).searchParams;
  const token = query.get("t") ?? "";
  if (!UUID.test(id) || token === "") return notFoundPage();
  const link = await services.approvals.linkState(id, token);
  if (link.state === "not_found") return notFoundPage();
  if (link.state === "gone") return gonePage();
  return requestPage(link.row, token, query.get("d") === "deny");
}
