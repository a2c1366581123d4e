// The guidance rewrite (docs/gateway.md#guidance-rewrite): when nothing was injected and the upstream refuses the
// request for lack of credentials, the agent gets JSON that says what the user has to do. Credentialed
// responses, and 400s that do not look like an auth failure, pass through byte-identical.
import { appsServingHost, hostRuleFor } from "../../apps/match.ts";
import { gatewayJson } from "../errors.ts";
import { peekStream } from "../peek.ts";
import { Reply } from "../reply.ts";
import type { ProxyRequest } from "../request.ts";
import { matchingCredentials } from "../snapshot.ts";
import { INJECTIONS, type Stage } from "../stage.ts";

export interface GuidanceDeps {
  /** The dashboard's base URL, for the links the agent is given. */
  publicUrl: string;
}

const SCAN_BYTES = 8 * 1024;
const AUTH_WORDS = [
  "api key",
  "api_key",
  "apikey",
  "unauthorized",
  "unauthenticated",
  "authentication",
  "credentials",
  "access denied",
  "permission denied",
  "invalid token",
  "token expired",
  "not authenticated",
];

export function looksLikeAuthFailure(text: string): boolean {
  const lower = text.toLowerCase();
  return AUTH_WORDS.some((w) => lower.includes(w));
}

export function guidanceStage({ publicUrl }: GuidanceDeps): Stage {
  const base = publicUrl.replace(/\/+$/, "");
  return {
    name: "guidance",
    reads: ["agent", "connection", ...INJECTIONS],
    provides: [],
    response(rq, reply) {
      // Synchronous for every answer it leaves alone: no promise on every request's path. A gRPC client cannot
      // read JSON: its origin's answer always passes (docs/gateway.md#http2-and-grpc).
      if (rq.injectionCount > 0 || !rq.forwarded || rq.websocket || rq.grpc) return reply;
      const status = reply.status;
      return status === 400 || status === 401 || status === 403 ? rewrite(rq, base, reply, status) : reply;
    },
  };
}

async function rewrite(rq: ProxyRequest, base: string, reply: Reply, status: number): Promise<Reply> {
  if (status === 400) {
    if (!reply.body) return reply;
    const response = reply.toResponse();
    const { head, stream } = await peekStream(response.body!, SCAN_BYTES);
    if (!looksLikeAuthFailure(new TextDecoder().decode(head))) {
      return Reply.of(new Response(stream, { status, statusText: reply.statusText, headers: reply.headers }));
    }
    await stream.cancel().catch(() => {});
  } else if (status === 401 || status === 403) {
    reply.body?.cancel();
  } else {
    return reply;
  }
  return Reply.of(gatewayJson(status, guidanceBody(rq, base), { "x-should-retry": "false" }));
}

function guidanceBody(rq: ProxyRequest, base: string): Record<string, unknown> {
  const { agent } = rq;
  const injectable = new Set(rq.credentials.injectable.map((s) => s.id));
  // A database secret on this host is no HTTP credential: "attach it to this agent" would not make the request work.
  const restricted = matchingCredentials(rq.credentials.visible, rq.host, rq.pathReadings).find((s) => !injectable.has(s.id) && s.injection?.database === undefined && s.injection?.ssh === undefined);
  const usable = new Set(rq.credentials.connections.map((c) => c.id));
  const restrictedConnection = rq.credentials.visibleConnections.find((c) => c.usable && !usable.has(c.id) && hostRuleFor(c.app, rq.host, rq.pathReadings));
  if (restricted || restrictedConnection) {
    const manageUrl = `${base}/p/${agent.projectId}/agents/${agent.id}`;
    const display = restricted ? restricted.name : restrictedConnection!.displayName;
    return {
      error: "access_restricted",
      message: `${display} credentials exist in credgate but this agent does not have access. Ask the user to attach them to this agent: ${manageUrl}`,
      provider: restricted ? (rq.provider ?? rq.host) : restrictedConnection!.provider,
      manage_url: manageUrl,
    };
  }
  // A registered MCP server credgate has no token for (its login not done, or revoked): connecting it is the fix,
  // not a secret (docs/gateway.md#mcp-servers). A body sent elsewhere on its origin was given no token on purpose.
  const mcp = rq.mcp;
  if (mcp !== null && mcp.via !== "host") {
    const connectUrl = `${base}/p/${agent.projectId}/mcp-servers/${encodeURIComponent(mcp.server.id)}`;
    return {
      error: "app_not_connected",
      message: `The MCP server ${mcp.server.name} is not connected in credgate. Ask the user to open this URL to connect it: ${connectUrl}`,
      provider: mcp.server.name,
      connect_url: connectUrl,
    };
  }
  const app = appsServingHost(rq.host)[0];
  if (app) {
    const connectUrl = `${base}/p/${agent.projectId}/apps?connect=${encodeURIComponent(app.app.id)}&agent_name=${encodeURIComponent(agent.identifier)}`;
    return {
      error: "app_not_connected",
      message: `${app.app.name} is not connected in credgate. Ask the user to open this URL to connect it: ${connectUrl}`,
      provider: app.app.id,
      connect_url: connectUrl,
    };
  }
  const secretUrl = `${base}/p/${agent.projectId}/secrets?create=generic&host=${encodeURIComponent(rq.host)}`;
  return {
    error: "credential_not_found",
    message: `No credentials configured for ${rq.host} in credgate. Ask the user to add a secret: ${secretUrl}`,
    hostname: rq.host,
    path: rq.path,
    secret_url: secretUrl,
  };
}
