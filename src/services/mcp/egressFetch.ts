// credgate's own requests to MCP servers and their authorization servers (docs/mcp.md#the-login): every URL
// here comes from a user or from a server's answer (metadata can name any host), so each request is judged by the
// egress guard and dialled at the address it judged, through the outbound door (pins, upstream proxy, CAs).
// Redirects are never followed: one would carry a token or a client secret elsewhere.
import { readBounded } from "../../core/boundedRead.ts";
import type { Outbound } from "../outbound.ts";
import type { EgressCheck } from "../notifications/send.ts";

/** How long one request may take, to the end of its head; bodies are read under their own bounds. */
export const MCP_REQUEST_MS = 15_000;

/** A request credgate refused to send, or that failed before an answer; the message is for the user. */
export class OutboundRefused extends Error {}

export type McpFetch = (url: URL, init: BunFetchRequestInit) => Promise<Response>;

export function egressFetch(outbound: Outbound, egress: EgressCheck): McpFetch {
  return async (url, init) => {
    const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
    const verdict = await egress.check(url.hostname, port);
    if (verdict.kind === "denied") throw new OutboundRefused(`credgate does not connect to ${verdict.address} (${url.hostname}): the destination is an internal or reserved address`);
    if (verdict.kind === "unresolved") throw new OutboundRefused(`${url.hostname} could not be resolved: ${verdict.reason}`);
    try {
      return await outbound.fetchAt(url, verdict.target, { signal: AbortSignal.timeout(MCP_REQUEST_MS), ...init, redirect: "manual" });
    } catch (err) {
      const e = err as { name?: string; message?: string };
      if (e.name === "TimeoutError") throw new OutboundRefused(`${url.host} did not answer within ${MCP_REQUEST_MS / 1000} s`);
      throw new OutboundRefused(`${url.host} could not be reached: ${e.message ?? String(err)}`);
    }
  };
}

/** A body read as text up to `max` bytes; more is an error (a server cannot make credgate hold an endless answer). */
export async function boundedText(res: Response, max: number): Promise<string> {
  const text = await readBounded(res.body, max);
  if (text === null) throw new OutboundRefused(`the answer is larger than ${max} bytes`);
  return text;
}

/** A JSON object body (bounded), or an error saying what came instead. */
export async function boundedJson(res: Response, max: number, what: string): Promise<Record<string, unknown>> {
  const text = await boundedText(res, max);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new OutboundRefused(`${what} is not JSON`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new OutboundRefused(`${what} is not a JSON object`);
  return value as Record<string, unknown>;
}
