// Stage 11 — forward upstream (CONTRACT §6.14): Bun fetch through the outbound client, no redirects
// followed, no decompression, bodies streamed both ways, hop-by-hop headers stripped, a header timeout.
import type { GatewayContext } from "../context.ts";
import { upstreamTimeout, upstreamUnreachable } from "../errors.ts";
import { responseHeadersForAgent } from "../headers.ts";
import type { ProxyRequest } from "../request.ts";

export async function forward(rq: ProxyRequest, g: GatewayContext): Promise<Response> {
  const unreachable = await g.reachability.check(rq.host, rq.port);
  if (unreachable !== null) {
    rq.decision = "error";
    return upstreamUnreachable(rq.host, rq.port, unreachable);
  }
  const seconds = g.config.upstreamHeaderTimeoutSeconds;
  const headerTimer = new AbortController();
  const timer = setTimeout(() => headerTimer.abort(), seconds * 1000);
  try {
    const up = await g.services.outbound.fetch(`${rq.scheme}://${rq.authority}${rq.upstreamTarget}`, {
      method: rq.method,
      headers: rq.headers,
      body: rq.body,
      redirect: "manual",
      decompress: false,
      timeout: false,
      signal: AbortSignal.any([headerTimer.signal, rq.request.signal]),
    });
    return new Response(up.body, { status: up.status, statusText: up.statusText, headers: responseHeadersForAgent(up.headers) });
  } catch (err) {
    rq.decision = "error";
    if (headerTimer.signal.aborted) return upstreamTimeout(rq.host, seconds);
    const e = err as NodeJS.ErrnoException;
    return upstreamUnreachable(rq.host, rq.port, e.code ?? e.message);
  } finally {
    clearTimeout(timer);
  }
}
