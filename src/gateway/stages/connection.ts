// The winning app connection (docs/injection.md#app-connections): the connections whose app serves this host
// and path are the candidates; the `x-credgate-connection-id` header picks one, a single candidate wins on its
// own, several are a 409. Any failure is swallowed when a secret already serves the path. On the way back a
// forwarded request's reply lists the candidates in `x-credgate-connections`.
import { appsServingHost, hostRuleFor } from "../../apps/match.ts";
import { gatewayJson } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { matchingCredentials, type CompiledConnection } from "../snapshot.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

export const CONNECTION_HEADER = "x-credgate-connection-id";

export function describeConnections(list: readonly CompiledConnection[]) {
  return list.map((c) => ({ id: c.id, label: c.label, provider: c.provider, display_name: c.displayName }));
}

/** The chosen connection (null: none), or the answer that says why none can be chosen. */
function choose(candidates: readonly CompiledConnection[], wanted: string | null): CompiledConnection | null | Response {
  const header = CONNECTION_HEADER;
  if (wanted !== null) {
    const chosen = candidates.find((c) => c.id === wanted);
    if (chosen) return chosen;
    return gatewayJson(404, {
      error: "connection_not_found",
      message: `Connection '${wanted}' was not found or has been removed. Choose from the available connections.`,
      connections: describeConnections(candidates),
      header,
    });
  }
  if (candidates.length <= 1) return candidates[0] ?? null;
  const providers = new Set(candidates.map((c) => c.provider));
  const several = providers.size === 1;
  return gatewayJson(409, {
    error: several ? "multiple_connections" : "multiple_providers",
    message: several
      ? "Multiple connections exist for this provider. Specify which one to use with the x-credgate-connection-id header."
      : "Several apps can serve this request. Specify which connection to use with the x-credgate-connection-id header.",
    connections: describeConnections(candidates),
    header,
    example: `${header}: ${candidates[0]!.id}`,
  });
}

function select(rq: ProxyRequest): RequestVerdict {
  const connections = rq.credentials.connections;
  const candidates = connections.length === 0 ? connections : connections.filter((c) => hostRuleFor(c.app, rq.host, rq.pathReadings) !== null);
  const servingApp = appsServingHost(rq.host).find((a) => hostRuleFor(a, rq.host, rq.pathReadings)) ?? null;
  // The header picks among an app's connections; on a host no app serves there is nothing to pick.
  const wanted = servingApp ? rq.agentHeaders.get(CONNECTION_HEADER)?.trim() || null : null;
  const choice = choose(candidates, wanted);
  const chosen = choice instanceof Response ? null : choice;
  rq.connectionCandidates = candidates;
  rq.connection = chosen;
  rq.provider = chosen?.provider ?? candidates[0]?.provider ?? servingApp?.app.id ?? null;
  if (!(choice instanceof Response)) return PASS;
  // A secret serving this path makes the connection optional: proceed on the secret alone.
  if (matchingCredentials(rq.credentials.injectable, rq.host, rq.pathReadings).length > 0) return PASS;
  return answer("error", choice);
}

export function connectionStage(): Stage {
  return {
    name: "connection",
    reads: ["agent"],
    provides: ["connection"],
    request: select,
    response(rq, reply) {
      if (rq.forwarded && !rq.websocket && rq.connectionCandidates.length > 0) {
        reply.headers.set("x-credgate-connections", JSON.stringify(describeConnections(rq.connectionCandidates)));
      }
      return reply;
    },
  };
}
