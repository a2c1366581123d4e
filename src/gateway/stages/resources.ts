// Stage 6 — resources guard (CONTRACT §6.8): a grant limited to some GitHub repositories or Dropbox folders
// lets through only requests that name one of them (requests naming none pass; GitHub GraphQL is denied).
import { checkFolders, checkRepositories, dropboxPaths, type GuardVerdict } from "../../core/resources.ts";
import { BODY_PEEK_BYTES } from "../../core/policy.ts";
import { gatewayJson } from "../errors.ts";
import { peekStream } from "../peek.ts";
import type { ProxyRequest } from "../request.ts";

export async function guardResources(rq: ProxyRequest): Promise<Response | undefined> {
  const connection = rq.connection;
  const resources = connection?.grant?.resources;
  const kind = connection?.app.app.resources;
  if (!connection || !resources || !kind) return undefined;
  const allowed = resources[kind];
  if (!allowed) return undefined;
  const method = rq.websocket ? "GET" : rq.method;
  let verdict: GuardVerdict;
  if (kind === "repositories") {
    verdict = checkRepositories(allowed, rq.host, method, rq.path);
  } else {
    // Dropbox names paths in a JSON body (RPC endpoints) or in the Dropbox-API-Arg header (content endpoints).
    let body: string | null = null;
    if (rq.body && (rq.request.headers.get("content-type") ?? "").toLowerCase().includes("json")) {
      const { head, stream } = await peekStream(rq.body, BODY_PEEK_BYTES);
      rq.body = stream;
      body = new TextDecoder().decode(head);
    }
    verdict = checkFolders(allowed, dropboxPaths(body, rq.request.headers.get("dropbox-api-arg")));
  }
  if (verdict.ok) return undefined;
  rq.decision = "blocked";
  return gatewayJson(403, {
    error: "resource_access_denied",
    message: `This ${connection.displayName} connection is limited to specific ${kind}; ${verdict.resource} is not one of them.`,
    provider: connection.provider,
    allowed,
  });
}
