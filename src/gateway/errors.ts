// Agent-facing gateway errors (docs/agent-errors.md): JSON `{error, message, …}`. 403/404/409 and guidance
// rewrites carry `x-should-retry: false`; 429 and 503 carry `Retry-After` instead. Every answer is described
// once (a JsonAnswer) and written one of two ways: as a Response for the pipeline's reply writer, or as raw
// bytes by `rawAnswer` for what has no Reply (a refused CONNECT, a head that could not be read).
import { STATUS_CODES } from "node:http";
import { REQUEST_ID_HEADER } from "../observability/requestId.ts";
import { answer, type RequestVerdict } from "./verdict.ts";

/** An answer of the gateway's own, before it is written. */
export interface JsonAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  /** Beyond content-type, content-length and x-should-retry (lowercase names). */
  readonly headers?: Record<string, string>;
}

export const PROXY_AUTH_BODY = {
  error: "proxy_authentication_required",
  message: "credgate requires a valid agent token: set the proxy URL to http://x:<agent token>@<gateway>.",
};

const PROXY_AUTHENTICATE = 'Basic realm="credgate"';

const noRetry = (status: number): boolean => status === 403 || status === 404 || status === 409;

export function gatewayJson(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(body);
  // The length is known: the answer goes out with Content-Length, not chunked.
  return new Response(text, {
    status,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...(noRetry(status) ? { "x-should-retry": "false" } : {}), ...headers },
  });
}

/**
 * The one writer of raw answers: status line, JSON body, `x-request-id` always, and `connection: close`, for
 * the socket is ended after it.
 */
export function rawAnswer(answer: JsonAnswer, requestId: string): string {
  const text = JSON.stringify(answer.body);
  let head = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n`;
  if (noRetry(answer.status)) head += "x-should-retry: false\r\n";
  if (answer.headers) for (const name in answer.headers) head += `${name}: ${answer.headers[name]}\r\n`;
  return `${head}${REQUEST_ID_HEADER}: ${requestId}\r\nconnection: close\r\n\r\n${text}`;
}

/** 407 on a CONNECT, before any tunnel exists. */
export const PROXY_AUTH_REQUIRED: JsonAnswer = { status: 407, body: PROXY_AUTH_BODY, headers: { "proxy-authenticate": PROXY_AUTHENTICATE } };

/** 407 inside a tunnel closes the tunnel (its token no longer holds); on a proxy connection it does not. */
export function proxyAuthRequired(closeConnection: boolean): Response {
  return gatewayJson(407, PROXY_AUTH_BODY, { "proxy-authenticate": PROXY_AUTHENTICATE, ...(closeConnection ? { connection: "close" } : {}) });
}

export const malformedRequest = (): JsonAnswer => ({ status: 400, body: { error: "bad_request", message: "Malformed HTTP request." } });

export const headTooLarge = (): JsonAnswer => ({ status: 431, body: { error: "bad_request", message: "Request head too large." } });

export const invalidConnectTarget = (target: string): JsonAnswer => ({ status: 400, body: { error: "bad_request", message: `Invalid CONNECT target "${target}".` } });

/**
 * `reason`, when given, is appended to the message: what the operator must fix (never a value). `secretName`: the
 * secret whose value could not be read from its vault or store (docs/agent-errors.md#credential_unavailable).
 */
export const credentialUnavailable = (host: string, reason?: string, secretName?: string): Response =>
  gatewayJson(502, {
    error: "credential_unavailable",
    message: `credgate could not obtain the credential for ${host}, so the request was not forwarded.${reason ? ` ${reason}` : ""}`,
    ...(secretName !== undefined ? { secret_name: secretName } : {}),
  });

/**
 * The request is answered 502 `credential_unavailable` and logged as an error; nothing goes upstream. Shared by
 * every stage that makes or fetches a credential (inject, inject-connection, github-app, aws-check, aws-sign).
 */
export function credentialUnavailableFor(rq: { readonly host: string }, reason?: string, secretName?: string): RequestVerdict {
  return answer("error", credentialUnavailable(rq.host, reason, secretName));
}

const upstreamUnreachableBody = (host: string, port: number, reason: string) => ({ error: "upstream_unreachable", message: `credgate could not connect to ${host}:${port}: ${reason}` });

export const upstreamUnreachable = (host: string, port: number, reason: string): Response => gatewayJson(502, upstreamUnreachableBody(host, port, reason));

export const upstreamUnreachableAnswer = (host: string, port: number, reason: string): JsonAnswer => ({ status: 502, body: upstreamUnreachableBody(host, port, reason) });

export const upstreamTimeout = (host: string, seconds: number): Response =>
  gatewayJson(504, { error: "upstream_timeout", message: `${host} did not send response headers within ${seconds} seconds.` });

const BAD_GATEWAY_BODY = { error: "bad_gateway", message: "credgate gateway internal error." };

export const badGateway = (): Response => gatewayJson(502, BAD_GATEWAY_BODY);

export const BAD_GATEWAY: JsonAnswer = { status: 502, body: BAD_GATEWAY_BODY };

const egressDeniedBody = (host: string, address: string) => ({
  error: "egress_denied",
  message: `credgate does not connect to ${address} (${host}): the destination is an internal or reserved address.`,
  host,
  address,
});

export const egressDenied = (host: string, address: string): Response => gatewayJson(403, egressDeniedBody(host, address));

export const egressDeniedAnswer = (host: string, address: string): JsonAnswer => ({ status: 403, body: egressDeniedBody(host, address) });

/** `host` without its port (docs/guards.md#credential-leak-guard). */
export const credentialLeakBlocked = (host: string, secretName: string): Response =>
  gatewayJson(403, {
    error: "credential_leak_blocked",
    message: `This request carries the value of the credgate secret "${secretName}", which is not for ${host}. credgate does not send a credential to another host.`,
    host,
    secret_name: secretName,
  });

/** A request body the leak guard cannot read (docs/guards.md#credential-leak-guard). */
export const unsupportedContentEncoding = (coding: string): Response =>
  gatewayJson(415, {
    error: "unsupported_content_encoding",
    message: `credgate cannot read a request body encoded as ${coding}; send it uncompressed or as gzip`,
  });

export const insecureTransport = (host: string): Response =>
  gatewayJson(403, {
    error: "insecure_transport",
    message: `credgate does not send credentials over plain HTTP to ${host}. Use https://, or list the host in CREDGATE_PLAINTEXT_HOSTS.`,
    host,
  });
