// What a route answers when it succeeds, as data next to its handler: the status, the body schema (a record
// of src/core/records or a route's own) or a non-JSON content type. src/api/openapi.ts publishes it; the
// handler's answer is typed from it (src/api/route.ts, HandlerAnswer); the API tests hold every real response to it
// (test/support/openapiCheck.ts).
import type { TSchema } from "@sinclair/typebox";

/** A JSON body of schema `S`. */
export interface JsonDoc<S extends TSchema, Status extends 200 | 201> {
  status: Status;
  description: string;
  schema: S;
}
/** No body (204). */
export interface EmptyDoc {
  status: 204;
  description: string;
}
/** A redirect (302): the handler answers with a Response carrying its Location. */
export interface RedirectDoc {
  status: 302;
  description: string;
}
/** A body that is not JSON: the handler answers with a Response of this content type. */
export interface TextDoc {
  status: 200;
  description: string;
  contentType: string;
}
export type ResponseDoc = JsonDoc<TSchema, 200 | 201> | EmptyDoc | RedirectDoc | TextDoc;

export const returns = <S extends TSchema>(schema: S, description = "OK"): JsonDoc<S, 200> => ({ status: 200, description, schema });
export const returnsCreated = <S extends TSchema>(schema: S, description = "Created"): JsonDoc<S, 201> => ({ status: 201, description, schema });
export const returnsNothing = (description = "Done; no body"): EmptyDoc => ({ status: 204, description });
export const redirects = (description: string): RedirectDoc => ({ status: 302, description });
export const returnsText = (contentType: string, description: string): TextDoc => ({ status: 200, description, contentType });
