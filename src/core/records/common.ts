// The building blocks of the API's records (docs/api.md#records): TypeBox schemas are the one declaration of
// each record; services type their views as `Static<>` of them, the API publishes them in /v1/openapi.json
// and the dashboard's types are generated from that document (scripts/gen-dashboard-types.ts).
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";

export const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()]);
/** One of these strings; its static type is their union. */
export const Enum = <const V extends string>(...values: V[]) => T.Union(values.map((v) => T.Literal(v)));
export const Timestamp = T.String({ format: "date-time", description: "ISO 8601 UTC with milliseconds" });
export const Uuid = T.String({ format: "uuid" });
export const AnyObject = T.Object({}, { additionalProperties: true });
export const StringMap = T.Record(T.String(), T.String());
export const Role = Enum("owner", "admin", "member");

export const Success = T.Object({ success: T.Literal(true) }, { $id: "Success" });
export type Success = Static<typeof Success>;
/** The `{success: true}` answer. */
export const SUCCESS: Success = { success: true };
