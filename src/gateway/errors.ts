// Agent-facing gateway errors (docs/agent-errors.md#summary): JSON `{error, message, …}`. 403/404/409 and guidance
// rewrites carry `x-should-retry: false`; 429 and 503 carry `Retry-After` instead.
import { randomUUID } from "node:crypto";

export const PROXY_AUTH_BODY = {
  error: "proxy_authentication_required",
  message: "credgate requires a valid agent token: set the proxy URL to http://x:<agent token>@<gateway>.",
};

export function gatewayJson(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): Response {
  const noRetry = status === 403 || status === 404 || status === 409 ? { "x-should-retry": "false" } : {};
  const text = JSON.stringify(body);
  // The length is known: the answer goes out with Content-Length, not chunked.
  return new Response(text, {
    status,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...noRetry, ...headers },
  });
}

export function proxyAuthRequired(closeConnection: boolean): Response {
  return gatewayJson(407, PROXY_AUTH_BODY, {
    "proxy-authenticate": 'Basic realm="credgate"',
    ...(closeConnection ? { connection: "close" } : {}),
  });
}

/** The raw 407 written on a CONNECT, before any tunnel exists. */
export function proxyAuthRequiredRaw(requestId: string): string {
  const body = JSON.stringify(PROXY_AUTH_BODY);
  return [
    "HTTP/1.1 407 Proxy Authentication Required",
    'Proxy-Authenticate: Basic realm="credgate"',
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}

/** An answer written straight on the socket (before a tunnel, or to a request that could not be read). */
export function rawResponse(status: number, reason: string, body: Record<string, unknown>, requestId: string = randomUUID()): string {
  const text = JSON.stringify(body);
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${text}`;
}

/** `reason`, when given, is appended to the docs/agent-errors.md#summary message: what the operator must fix (never a value). */
export const credentialUnavailable = (host: string, reason?: string): Response =>
  gatewayJson(502, {
    error: "credential_unavailable",
    message: `credgate could not obtain the credential for ${host}, so the request was not forwarded.${reason ? ` ${reason}` : ""}`,
  });

export const upstreamUnreachable = (host: string, port: number, reason: string): Response =>
  gatewayJson(502, { error: "upstream_unreachable", message: `credgate could not connect to ${host}:${port}: ${reason}` });

export const upstreamTimeout = (host: string, seconds: number): Response =>
  gatewayJson(504, { error: "upstream_timeout", message: `${host} did not send response headers within ${seconds} seconds.` });

export const badGateway = (): Response => gatewayJson(502, { error: "bad_gateway", message: "credgate gateway internal error." });

export const egressDeniedBody = (host: string, address: string) => ({
  error: "egress_denied",
  message: `credgate does not connect to ${address} (${host}): the destination is an internal or reserved address.`,
  host,
  address,
});

export const egressDenied = (host: string, address: string): Response => gatewayJson(403, egressDeniedBody(host, address));

export const insecureTransport = (host: string): Response =>
  gatewayJson(403, {
    error: "insecure_transport",
    message: `credgate does not send credentials over plain HTTP to ${host}. Use https://, or list the host in CREDGATE_PLAINTEXT_HOSTS.`,
    host,
  });
