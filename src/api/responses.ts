// What a route answers when it succeeds, as data next to its handler: the status, the body schema (from
// src/api/schemas.ts) or a non-JSON content type. src/api/openapi.ts publishes it; the API tests hold every
// real response to it (test/support/openapiCheck.ts).
import type { TSchema } from "@sinclair/typebox";

export interface ResponseDoc {
  status: 200 | 201 | 204 | 302;
  description: string;
  /** The JSON body; absent for 204 and redirects. */
  schema?: TSchema;
  /** A non-JSON body (its schema is a string). */
  contentType?: string;
}

export const returns = (schema: TSchema, description = "OK"): ResponseDoc => ({ status: 200, description, schema });
export const returnsCreated = (schema: TSchema, description = "Created"): ResponseDoc => ({ status: 201, description, schema });
export const returnsNothing = (description = "Done; no body"): ResponseDoc => ({ status: 204, description });
export const redirects = (description: string): ResponseDoc => ({ status: 302, description });
export const returnsText = (contentType: string, description: string): ResponseDoc => ({ status: 200, description, contentType });
