// Request ids (docs/operations.md#request-ids): every API response and gateway answer carries `x-request-id`, and so does every
// log line written while the request is handled. A client's own id is kept when it is sane (1-128 characters
// of `[A-Za-z0-9._-]`: nothing that could forge a log field or a header); otherwise a new uuid is minted.
import { randomUUID } from "node:crypto";
import { log } from "./log.ts";

export const REQUEST_ID_HEADER = "x-request-id";

const SANE = /^[A-Za-z0-9._-]{1,128}$/;

/** The id of a request that sent `sent` as its `x-request-id` (null when it sent none). */
export function requestIdFor(sent: string | null | undefined): string {
  return sent !== null && sent !== undefined && SANE.test(sent) ? sent : randomUUID();
}

/** `response` with the `x-request-id` header set (a copy when its headers are immutable, e.g. a redirect). */
export function withRequestIdHeader(response: Response, id: string): Response {
  try {
    response.headers.set(REQUEST_ID_HEADER, id);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set(REQUEST_ID_HEADER, id);
    return copy;
  }
}

/**
 * Answers `request` with `handle`, inside a log context carrying its id, and stamps the id on the answer.
 * Used by the API app for every response (also the ones the gateway port serves from it).
 */
export async function answerWithRequestId(request: Request, handle: (request: Request, requestId: string) => Promise<Response>): Promise<Response> {
  const id = requestIdFor(request.headers.get(REQUEST_ID_HEADER));
  const response = await log.withContext({ requestId: id }, () => handle(request, id));
  return withRequestIdHeader(response, id);
}
