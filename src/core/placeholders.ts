// Placeholder secrets, pure (docs/injection.md#placeholders): what a placeholder may look like, the surfaces of a
// request it is replaced on, and how its value is written into each of them.
import { formEncode, jsonEscape, percentEncode } from "./valueForms.ts";

export const SURFACES = ["header", "query", "path", "body", "websocket"] as const;
export type Surface = (typeof SURFACES)[number];

export const PLACEHOLDER_MESSAGE = "placeholder must be 8-128 characters of A-Z a-z 0-9 . _ ~ -";
export const SURFACES_MESSAGE = "surfaces must be a non-empty list of: header, query, path, body, websocket";

/** Unreserved URL characters only, so a placeholder reads the same raw and percent-encoded. */
const PLACEHOLDER = /^[A-Za-z0-9._~-]{8,128}$/;

export function placeholderError(placeholder: unknown): string | null {
  return typeof placeholder === "string" && PLACEHOLDER.test(placeholder) ? null : PLACEHOLDER_MESSAGE;
}

export function surfacesError(surfaces: unknown): string | null {
  const ok =
    Array.isArray(surfaces) &&
    surfaces.length > 0 &&
    surfaces.every((s) => typeof s === "string" && (SURFACES as readonly string[]).includes(s));
  return ok ? null : SURFACES_MESSAGE;
}

/** The surfaces as stored: each once, in the documented order. */
export function normalizeSurfaces(surfaces: readonly string[] | undefined): Surface[] {
  return surfaces === undefined ? [...SURFACES] : SURFACES.filter((s) => surfaces.includes(s));
}

export function placeholderTakenMessage(secretName: string): string {
  return `placeholder is already used by secret "${secretName}"`;
}

/** Two placeholders clash when one contains the other: a request could not say which was meant. */
export function placeholdersClash(a: string, b: string): boolean {
  return a.includes(b) || b.includes(a);
}

/** How a body is written, by its Content-Type (docs/injection.md#placeholders). */
export type BodyKind = "json" | "form" | "raw";

export function bodyKindOf(contentType: string | null): BodyKind {
  if (contentType === null) return "raw";
  const semi = contentType.indexOf(";");
  const media = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (media === "application/json" || media.endsWith("+json")) return "json";
  if (media === "application/x-www-form-urlencoded") return "form";
  return "raw";
}

/** The value as it is written in place of the placeholder in a body of that kind. */
export function bodyValue(kind: BodyKind, value: string): string {
  return kind === "json" ? jsonEscape(value) : kind === "form" ? formEncode(value) : value;
}

/** The value as it goes into a URL path or query: percent-encoded, every byte outside `[A-Za-z0-9._~-]`. */
export const urlValue = percentEncode;
