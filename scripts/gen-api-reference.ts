// `npm run docs:api`: renders docs/api-reference.md from the OpenAPI document the server publishes at
// `GET /v1/openapi.json` (built in-process by describeApi, from the same route table the server mounts), so the
// reference cannot drift from what is served. `--check` compares instead of writing and exits 1 on a
// difference; test/api/apiReference.test.ts does the same in the suite.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeApi } from "../src/api/app.ts";

type Json = Record<string, any>;

export const REFERENCE_PATH = join(import.meta.dir, "..", "docs", "api-reference.md");

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** GitHub's heading anchor: lowercase, punctuation other than `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** `org/secrets` → `org secrets`: a tag as a heading whose anchor reads well. */
const tagHeading = (tag: string) => tag.replace(/\//g, " ");

const schemaHeading = (name: string) => `${name} (schema)`;
const refName = (ref: string) => ref.slice(ref.lastIndexOf("/") + 1);

function refLink(ref: string): string {
  const name = refName(ref);
  return `[${name}](#${slug(schemaHeading(name))})`;
}

/** Table cells hold no pipes or line breaks. */
const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n+/g, " ");

function isInlineObject(s: Json): boolean {
  return s.type === "object" && s.properties !== undefined && s.$ref === undefined;
}

/** A schema as a short type expression: `string`, `"a" | "b"`, `[Agent](#…)[]`, `object`. */
export function typeOf(s: Json | undefined): string {
  if (s === undefined || Object.keys(s).length === 0 || (Object.keys(s).length === 1 && s.description !== undefined)) return "any";
  if (s.$ref) return refLink(s.$ref);
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return (s.enum as unknown[]).map((v) => JSON.stringify(v)).join(" \\| ");
  const union = s.anyOf ?? s.oneOf;
  if (union) return [...new Set((union as Json[]).map(typeOf))].join(" \\| ");
  if (s.allOf) return (s.allOf as Json[]).map(typeOf).join(" & ");
  switch (s.type) {
    case "array": {
      const item = typeOf(s.items);
      return item.includes("\\|") ? `(${item})[]` : `${item}[]`;
    }
    case "object":
      if (s.properties) return "object";
      if (s.additionalProperties && typeof s.additionalProperties === "object") return `{ [key]: ${typeOf(s.additionalProperties)} }`;
      if (s.patternProperties) return `{ [key]: ${typeOf(Object.values(s.patternProperties)[0] as Json)} }`;
      return "object";
    case "string":
      if (s.format === "date-time") return "timestamp";
      return s.format ? `string (${s.format})` : "string";
    case undefined:
      return "any";
    default:
      return Array.isArray(s.type) ? s.type.join(" \\| ") : String(s.type);
  }
}

function range(min: number | undefined, max: number | undefined, unit: string): string | null {
  if (min !== undefined && max !== undefined) return min === max ? `exactly ${min}${unit}` : `${min}-${max}${unit}`;
  // "at least 1 character", not "1 characters".
  const one = (n: number) => (n === 1 ? unit.replace(/s$/, "") : unit);
  if (min !== undefined) return `at least ${min}${one(min)}`;
  if (max !== undefined) return `at most ${max}${one(max)}`;
  return null;
}

/** The constraints and description of a schema, as a sentence fragment. */
export function notesOf(s: Json): string {
  const notes: string[] = [];
  const branches: Json[] = [s, ...((s.anyOf ?? s.oneOf ?? []) as Json[])];
  for (const b of branches) {
    const chars = range(b.minLength, b.maxLength, " characters");
    if (chars) notes.push(chars);
    const value = range(b.minimum, b.maximum, "");
    if (value) notes.push(value);
    const items = range(b.minItems, b.maxItems, " items");
    if (items) notes.push(items);
    if (b.pattern) notes.push(`matches \`${b.pattern}\``);
    if (b.default !== undefined) notes.push(`default \`${JSON.stringify(b.default)}\``);
    if (b.description && b !== s && !(s.description && s.description === b.description)) notes.push(b.description);
  }
  if (s.description) notes.unshift(s.description);
  return [...new Set(notes.map((n) => n.replace(/\.$/, "")))].join("; ");
}

/** A small object on one line, TypeScript-like: `{ headerName: string, valueFormat?: string }`. */
export function shapeOf(s: Json, inTable = false): string {
  const required = new Set<string>(s.required ?? []);
  const fields = Object.entries<Json>(s.properties ?? {}).map(([name, f]) => `${name}${required.has(name) ? "" : "?"}: ${isInlineObject(f) ? shapeOf(f, true) : typeOf(f)}`);
  const shape = `{ ${fields.join(", ")} }`;
  // Outside a table a pipe in a code span needs no escape.
  return inTable ? shape : shape.replace(/\\\|/g, "|");
}

/** The items of an array field (also when the field is `array | null`). */
function arrayItemsOf(s: Json): Json | null {
  if (s.type === "array" && s.items) return s.items;
  for (const b of (s.anyOf ?? s.oneOf ?? []) as Json[]) if (b.type === "array" && b.items) return b.items;
  return null;
}

/** The branch of a field that is an inline object (for `object | null`), if any. */
function inlineObjectOf(s: Json): Json | null {
  if (isInlineObject(s)) return s;
  for (const b of (s.anyOf ?? s.oneOf ?? []) as Json[]) if (isInlineObject(b)) return b;
  return null;
}

/** Rows of an object's fields; inline objects (also inside arrays) continue as `parent.child` rows. */
function fieldRows(s: Json, prefix: string, depth: number, out: string[]): void {
  const required = new Set<string>(s.required ?? []);
  for (const [name, field] of Object.entries<Json>(s.properties ?? {})) {
    const path = `${prefix}${name}`;
    const notes = [required.has(name) ? "" : "optional", notesOf(field)].filter(Boolean).join("; ");
    out.push(`| \`${path}\` | ${typeOf(field)} | ${cell(notes)} |`);
    if (depth >= 4) continue;
    const nested = inlineObjectOf(field);
    const items = arrayItemsOf(field);
    if (nested) fieldRows(nested, `${path}.`, depth + 1, out);
    else if (items && isInlineObject(items)) fieldRows(items, `${path}[].`, depth + 1, out);
    else if (items) {
      // An array of variants (policy targets): one row per variant.
      for (const variant of (items.anyOf ?? items.oneOf ?? []) as Json[]) {
        if (isInlineObject(variant)) out.push(`| \`${path}[]\` | one of | \`${shapeOf(variant, true)}\` |`);
      }
    }
  }
}

/** A schema as Markdown: a field table for an object, else its type (with notes). */
export function renderSchema(s: Json): string {
  const branches = (s.anyOf ?? s.oneOf ?? []) as Json[];
  if (branches.filter(isInlineObject).length > 1) {
    return ["One of:", "", ...branches.map((b) => `- ${isInlineObject(b) ? `\`${shapeOf(b)}\`` : typeOf(b)}`)].join("\n");
  }
  const object = inlineObjectOf(s);
  if (object && !s.$ref) {
    const rows = ["| Field | Type | Notes |", "|---|---|---|"];
    fieldRows(object, "", 0, rows);
    const other = ((s.anyOf ?? s.oneOf ?? []) as Json[]).filter((b) => b !== object).map(typeOf);
    const lead = other.length > 0 ? `An object, or ${other.join(" or ")}:\n\n` : "";
    return rows.length === 2 ? "An object (no fixed fields)." : lead + rows.join("\n");
  }
  if (s.type === "array" && s.items && isInlineObject(s.items)) {
    const rows = ["| Field | Type | Notes |", "|---|---|---|"];
    fieldRows(s.items, "[].", 0, rows);
    return `An array of objects:\n\n${rows.join("\n")}`;
  }
  const notes = notesOf(s);
  return `${typeOf(s)}${notes ? ` — ${notes}` : ""}`;
}

function resolve(doc: Json, item: Json): Json {
  if (!item.$ref) return item;
  const parts = (item.$ref as string).replace(/^#\//, "").split("/");
  let node: any = doc;
  for (const p of parts) node = node?.[p];
  return node ?? {};
}

interface Operation {
  method: string;
  path: string;
  op: Json;
}

function operationsByTag(doc: Json): Map<string, Operation[]> {
  const byTag = new Map<string, Operation[]>();
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = (op.tags?.[0] as string | undefined) ?? "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method: method.toUpperCase(), path, op });
    }
  }
  return byTag;
}

const opHeading = (o: Operation) => `${o.method} ${o.path}`;

/** The parts of `op.description` after its access sentence (availability notes). */
function accessLine(op: Json): string {
  const access = op["x-credgate-access"] as string;
  const modes = op["x-credgate-modes"] as string[] | undefined;
  const text = (op.description as string).replace(/^Access: [^—]+— /, "");
  const lines = [`**Access:** \`${access}\` — ${text.replace(/ Available in .*$/, "")}`];
  if (modes) lines.push(`**Modes:** ${modes.join(", ")} only; elsewhere the path answers 404 like an unknown route.`);
  return lines.join("  \n");
}

function renderParameters(doc: Json, op: Json): string | null {
  const rows: string[] = [];
  for (const raw of (op.parameters ?? []) as Json[]) {
    const p = resolve(doc, raw);
    if (p.in === "header") continue;
    const notes = [p.required ? "" : "optional", p.description ?? "", notesOf(p.schema ?? {})].filter(Boolean).join("; ");
    rows.push(`| \`${p.name}\` | ${p.in} | ${typeOf(p.schema)} | ${cell(notes)} |`);
  }
  return rows.length === 0 ? null : ["| Parameter | In | Type | Notes |", "|---|---|---|---|", ...rows].join("\n");
}

function renderSuccess(op: Json): string {
  const [status, response] = Object.entries<Json>(op.responses).find(([s]) => /^[23]\d\d$/.test(s))!;
  const head = `**Response ${status}** — ${response.description}`;
  const content = response.content as Json | undefined;
  if (!content) return response.headers?.Location ? `${head} (redirect; \`Location\` header)` : head;
  const [type, media] = Object.entries<Json>(content)[0]!;
  if (type !== "application/json") return `${head} (\`${type}\`)`;
  return `${head}\n\n${renderSchema(media.schema)}`;
}

function renderErrors(op: Json): string {
  const statuses = Object.keys(op.responses).filter((s) => /^[45]\d\d$/.test(s));
  return `**Errors:** ${statuses.join(", ")} — in the [two error shapes](api.md#error-shapes).`;
}

function renderOperation(doc: Json, o: Operation): string {
  const parts = [`### ${opHeading(o)}`, accessLine(o.op)];
  const params = renderParameters(doc, o.op);
  if (params) parts.push(`**Parameters**\n\n${params}`);
  const body = o.op.requestBody as Json | undefined;
  if (body) {
    const schema = body.content["application/json"].schema as Json;
    parts.push(`**Request body** (JSON${body.required ? "" : ", optional"})\n\n${renderSchema(schema)}`);
  }
  parts.push(renderSuccess(o.op), renderErrors(o.op));
  return parts.join("\n\n");
}

/** The whole reference page for an OpenAPI document. */
export function renderApiReference(doc: Json): string {
  const byTag = operationsByTag(doc);
  const description = String(doc.info.description ?? "")
    .replace(/^credgate \S+\.\s*/, "")
    .trim();
  const out: string[] = [
    "# API reference",
    "",
    "<!-- Generated by `npm run docs:api` (scripts/gen-api-reference.ts) from the document served at",
    "     GET /v1/openapi.json. Do not edit: change the routes in src/api/ and run it again. -->",
    "",
    `Every endpoint of the management API (OpenAPI ${doc.openapi}, API version ${doc.info.version}), grouped by area. Paths are`,
    `below \`${doc.servers[0].url}\`. Authentication, contexts (the **access** markers \`project\`, \`project-explicit\`, \`organization\`, \`partner\`), roles and the`,
    "error shapes are explained in [api.md](api.md); the behaviour behind each area is described on the pages",
    "listed in [README.md](README.md).",
    "",
    description,
    "",
    "## Contents",
    "",
  ];
  for (const [tag, ops] of byTag) {
    const links = ops.map((o) => `[${opHeading(o)}](#${slug(opHeading(o))})`).join(" · ");
    out.push(`- **[${tagHeading(tag)}](#${slug(tagHeading(tag))})**: ${links}`);
  }
  out.push("- [Schemas](#schemas)", "");
  for (const [tag, ops] of byTag) {
    out.push(`## ${tagHeading(tag)}`, "");
    for (const o of ops) out.push(renderOperation(doc, o), "");
  }
  out.push("## Schemas", "", "The named records the endpoints above refer to.", "");
  for (const [name, schema] of Object.entries<Json>(doc.components.schemas)) {
    out.push(`### ${schemaHeading(name)}`, "", renderSchema(schema), "");
  }
  return out.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd() + "\n";
}

if (import.meta.main) {
  const text = renderApiReference(describeApi());
  if (process.argv.includes("--check")) {
    let current = "";
    try {
      current = readFileSync(REFERENCE_PATH, "utf8");
    } catch {}
    if (current !== text) {
      process.stderr.write("docs/api-reference.md is out of date: run `npm run docs:api`\n");
      process.exit(1);
    }
    process.stdout.write("docs/api-reference.md is up to date\n");
  } else {
    writeFileSync(REFERENCE_PATH, text);
    process.stdout.write(`wrote ${REFERENCE_PATH}\n`);
  }
}
