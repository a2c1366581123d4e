// Route-level validation: request schemas are TypeBox schemas, walked here field by field in
// declaration order so the first failure yields the contract's wording (docs/api.md#validation-messages). Extra schema
// options understood here: `trim` (trim before checking, store trimmed), `error` (one message for every
// failure of the field), `refine` (a further check returning a message or null), `label` (the field name
// used in messages, when it differs from the key), and for fields whose rules depend on earlier fields of
// the same object: `requiredWhen`, `skipWhen` (ignore the field), `blankIsAbsent`, `missing` (the failure,
// message or ApiError, when a required field is absent).
import { Kind, OptionalKind, Type, type Static, type TSchema } from "@sinclair/typebox";
import { ApiError } from "../core/errors.ts";

type Body = Record<string, any>;
export type Refine = (value: any, body: Body) => string | ApiError | null;

export interface FieldOptions {
  trim?: boolean;
  error?: string;
  refine?: Refine;
  label?: string;
  requiredWhen?: (body: Body) => boolean;
  skipWhen?: (body: Body) => boolean;
  blankIsAbsent?: boolean;
  missing?: string | ApiError;
}

/** A field of any JSON value that its `refine` checks to be a `V` (shapes the walker cannot say, e.g. a union of objects). */
export const refined = <V>(options: FieldOptions & { refine: Refine }) => Type.Unsafe<V>(Type.Unknown(options));

type Failure = string | ApiError;
export type ValidationResult<T> = { ok: true; value: T } | { ok: false; message: Failure };

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function typeName(kind: string): string {
  switch (kind) {
    case "String":
      return "a string";
    case "Integer":
      return "an integer";
    case "Number":
      return "a number";
    case "Boolean":
      return "a boolean";
    case "Array":
      return "an array";
    default:
      return "an object";
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function literalValues(schema: TSchema): unknown[] | null {
  if (schema[Kind] !== "Union") return null;
  const values: unknown[] = [];
  for (const s of schema.anyOf as TSchema[]) {
    if (s[Kind] === "Literal") values.push(s.const);
    else if (s[Kind] !== "Null") return null;
  }
  return values;
}

function allowsNull(schema: TSchema): boolean {
  return schema[Kind] === "Union" && (schema.anyOf as TSchema[]).some((s) => s[Kind] === "Null");
}

/** The non-null member of a `T | null` union, or the schema itself. */
function withoutNull(schema: TSchema): TSchema {
  if (schema[Kind] !== "Union") return schema;
  const rest = (schema.anyOf as TSchema[]).filter((s) => s[Kind] !== "Null");
  return rest.length === 1 ? rest[0]! : schema;
}

type Check = { ok: true; value: unknown } | { ok: false; message: Failure };

function checkValue(schema: TSchema, value: unknown, path: string, body: Body = {}): Check {
  const opts = schema as TSchema & FieldOptions;
  const result = checkShape(schema, value, path);
  if (!result.ok) return opts.error ? { ok: false, message: opts.error } : result;
  if (opts.refine && result.value !== null) {
    const message = opts.refine(result.value, body);
    if (message) return { ok: false, message };
  }
  return result;
}

function checkShape(schema: TSchema, value: unknown, path: string): Check {
  const enumValues = literalValues(schema);
  if (enumValues) {
    if (value === null && allowsNull(schema)) return { ok: true, value: null };
    if (!enumValues.includes(value)) return { ok: false, message: `${path} must be one of: ${enumValues.join(", ")}` };
    return { ok: true, value };
  }
  if (value === null && allowsNull(schema)) return { ok: true, value: null };
  const inner = withoutNull(schema);
  if (inner !== schema) {
    // A nullable field: its own options (trim, refine…) live on the union, its shape on the member.
    const own = schema as TSchema & FieldOptions;
    return checkShape({ ...inner, trim: own.trim ?? (inner as FieldOptions).trim } as TSchema, value, path);
  }
  const kind = schema[Kind] as string;
  switch (kind) {
    case "Unknown":
    case "Any":
      return { ok: true, value };
    case "String": {
      if (typeof value !== "string") return { ok: false, message: `${path} must be a string` };
      const v = (schema as FieldOptions).trim ? value.trim() : value;
      const { minLength: min, maxLength: max } = schema as { minLength?: number; maxLength?: number };
      if ((min !== undefined && v.length < min) || (max !== undefined && v.length > max)) {
        if (min !== undefined && max !== undefined) return { ok: false, message: `${path} must be ${min}-${max} characters` };
        if (max !== undefined) return { ok: false, message: `${path} must be at most ${max} characters` };
        return { ok: false, message: `${path} must be at least ${min} characters` };
      }
      if (schema.pattern && !new RegExp(schema.pattern).test(v)) return { ok: false, message: `${path} is invalid` };
      if (schema.format === "email" && !EMAIL.test(v)) return { ok: false, message: `${path} must be a valid email address` };
      if (schema.format === "uri") {
        try {
          new URL(v);
        } catch {
          return { ok: false, message: `${path} must be a valid URL` };
        }
      }
      return { ok: true, value: v };
    }
    case "Integer":
    case "Number": {
      if (typeof value !== "number" || !Number.isFinite(value) || (kind === "Integer" && !Number.isInteger(value))) {
        return { ok: false, message: `${path} must be ${typeName(kind)}` };
      }
      const { minimum: min, maximum: max } = schema as { minimum?: number; maximum?: number };
      if ((min !== undefined && value < min) || (max !== undefined && value > max)) {
        if (min !== undefined && max !== undefined) return { ok: false, message: `${path} must be between ${min} and ${max}` };
        return { ok: false, message: min !== undefined ? `${path} must be at least ${min}` : `${path} must be at most ${max}` };
      }
      return { ok: true, value };
    }
    case "Literal":
      return value === schema.const ? { ok: true, value } : { ok: false, message: `${path} must be one of: ${schema.const}` };
    case "Boolean":
      return typeof value === "boolean" ? { ok: true, value } : { ok: false, message: `${path} must be a boolean` };
    case "Array": {
      if (!Array.isArray(value)) return { ok: false, message: `${path} must be an array` };
      const { minItems: min, maxItems: max } = schema as { minItems?: number; maxItems?: number };
      if ((min !== undefined && value.length < min) || (max !== undefined && value.length > max)) {
        if (min !== undefined && max !== undefined) return { ok: false, message: `${path} must have ${min}-${max} items` };
        return { ok: false, message: min !== undefined ? `${path} must have at least ${min} items` : `${path} must have at most ${max} items` };
      }
      const out: unknown[] = [];
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        if (item === null || item === undefined) return { ok: false, message: `${path}[${i}] is required` };
        const r = checkValue(schema.items as TSchema, item, `${path}[${i}]`);
        if (!r.ok) return r;
        out.push(r.value);
      }
      return { ok: true, value: out };
    }
    case "Record":
      return isPlainObject(value) ? { ok: true, value } : { ok: false, message: `${path} must be an object` };
    case "Object":
      return checkObject(schema, value, path);
    default:
      throw new Error(`validate: unsupported schema kind ${kind} at ${path}`);
  }
}

function checkObject(schema: TSchema, value: unknown, path: string): Check {
  if (!isPlainObject(value)) return { ok: false, message: path ? `${path} must be an object` : "Request body must be a JSON object" };
  const properties = (schema.properties ?? {}) as Record<string, TSchema>;
  const out: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries(properties)) {
    const opts = prop as FieldOptions;
    if (opts.skipWhen?.(value)) continue;
    const label = opts.label ?? (path ? `${path}.${key}` : key);
    const required = prop[OptionalKind] !== "Optional" || (opts.requiredWhen?.(value) ?? false);
    const raw = value[key];
    const blank = opts.blankIsAbsent && typeof raw === "string" && raw.trim() === "";
    if (raw === undefined || blank || (raw === null && !allowsNull(prop))) {
      if (required) return { ok: false, message: opts.missing ?? opts.error ?? `${label} is required` };
      continue;
    }
    const r = checkValue(prop, raw, label, value);
    if (!r.ok) return r;
    out[key] = r.value;
  }
  if (schema.additionalProperties === false) {
    const unknown = Object.keys(value).find((k) => !(k in properties));
    if (unknown !== undefined) return { ok: false, message: `${path || "body"} has unknown field "${unknown}"` };
  }
  return { ok: true, value: out };
}

/** Validates a value found at `path` inside a larger body (messages name that path). */
export function validateAt<T extends TSchema>(schema: T, value: unknown, path: string): ValidationResult<Static<T>> {
  const r = checkValue(schema, value, path);
  return r.ok ? { ok: true, value: r.value as Static<T> } : r;
}

/** Validates a parsed JSON body (or query object) against a schema; the first failure wins. */
export function validate<T extends TSchema>(schema: T, value: unknown): ValidationResult<Static<T>> {
  const r = checkValue(schema, value, "");
  return r.ok ? { ok: true, value: r.value as Static<T> } : r;
}
