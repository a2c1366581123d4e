// Request targets inside a tunnel (docs/gateway.md#request-targets): a tunnel goes to one host, so a request
// in it may name a path on that host and nothing else — origin-form (`/…`), `OPTIONS *`, or absolute-form
// whose authority is the tunnel's own. Anything else (a CONNECT inside the tunnel, a target without a leading
// `/`, `//host/…`, `@host/…`, another authority) is answered 400 and nothing is forwarded. After the auth
// stage, so the refusal is logged.
import { normalizeHost } from "../../core/patterns.ts";
import { gatewayJson } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

const SLASH = 0x2f;
const ABSOLUTE = /^(https?):\/\/([^/?#]*)/i;

/** Whether `target` (as the agent sent it) names something on the tunnel's own host and port. */
export function isTunnelTarget(method: string, target: string, host: string, port: number): boolean {
  if (method === "CONNECT") return false;
  if (target.charCodeAt(0) === SLASH) return target.charCodeAt(1) !== SLASH;
  if (target === "*") return method === "OPTIONS";
  const m = ABSOLUTE.exec(target);
  // Userinfo (`https://user@host/`) is not the tunnel's authority either.
  if (!m || m[2]!.includes("@")) return false;
  let url: URL;
  try {
    url = new URL(`${m[1]!.toLowerCase()}://${m[2]}/`);
  } catch {
    return false;
  }
  const urlPort = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
  return normalizeHost(url.hostname) === host && urlPort === port;
}

function refused(rq: ProxyRequest): RequestVerdict {
  return answer(
    "blocked",
    gatewayJson(400, {
      error: "bad_request",
      message: `A request inside the tunnel to ${rq.displayHost} must target a path on it ("/…", "*" for OPTIONS, or a URL on ${rq.displayHost}); "${rq.agentTarget}" is not one.`,
    }),
  );
}

export function targetStage(): Stage {
  return {
    name: "target",
    reads: [],
    provides: [],
    request(rq) {
      const tunnel = rq.tunnel;
      if (tunnel === null || isTunnelTarget(rq.method, rq.agentTarget, tunnel.host, tunnel.port)) return PASS;
      return refused(rq);
    },
  };
}
