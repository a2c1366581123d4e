// Holds real API responses to the published OpenAPI document: every response an API test receives is
// checked against the schema /v1/openapi.json documents for its route and status (success bodies), or
// against the two error shapes of docs/api.md#error-shapes (every 4xx/5xx JSON body). Objects are checked strictly here
// (no undocumented fields), though the document itself lets clients ignore unknown fields.
import Ajv2020 from "ajv/dist/2020.js";

type Json = Record<string, any>;

interface Operation {
  method: string;
  pattern: RegExp;
  literals: number;
  responses: Json;
}

let checker: { ops: Operation[]; validate(ref: Json, body: unknown): string | null; validateError(body: unknown): string | null } | null = null;

/** Every object with properties and no word on extra fields gets `additionalProperties: false`. */
function strict(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strict);
  if (typeof node !== "object" || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) out[k] = strict(v);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

async function build(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  ajv.addFormat("date-time", /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  ajv.addFormat("uuid", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addSchema(strict(JSON.parse(JSON.stringify({ components: doc.components }).replaceAll('"#/components/', '"doc#/components/'))) as Json, "doc");
  // Error bodies may carry more than the shape (e.g. `code` on container-config's 404): checked as documented.
  ajv.addSchema(JSON.parse(JSON.stringify({ components: doc.components }).replaceAll('"#/components/', '"loose#/components/')) as Json, "loose");
  const errorShape = ajv.compile({ oneOf: [{ $ref: "loose#/components/schemas/FlatError" }, { $ref: "loose#/components/schemas/EnvelopeError" }] });
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    const source = "^(?:/v1|/api)" + path.replace(/\{[^}]+\}/g, "[^/]+") + "$";
    const literals = path.split("/").filter((s) => s && !s.startsWith("{")).length;
    for (const [method, op] of Object.entries(item)) ops.push({ method: method.toUpperCase(), pattern: new RegExp(source), literals, responses: (op as Json).responses });
  }
  ops.sort((a, b) => b.literals - a.literals);
  return {
    ops,
    validate(ref: Json, body: unknown): string | null {
      const key = JSON.stringify(ref);
      let fn = compiled.get(key);
      if (!fn) {
        fn = ajv.compile(strict(JSON.parse(key.replaceAll('"#/components/', '"doc#/components/'))) as Json);
        compiled.set(key, fn);
      }
      return fn(body) ? null : ajv.errorsText(fn.errors);
    },
    validateError(body: unknown): string | null {
      return errorShape(body) ? null : ajv.errorsText(errorShape.errors);
    },
  };
}

/**
 * Throws when `body` (the parsed JSON of a response to `method path`) breaks the document: a success body
 * not matching its route's schema, or an error body of neither shape. Non-JSON answers are left alone.
 * `loadDocument` fetches /v1/openapi.json from the API under test (the first call only).
 */
export async function checkResponse(loadDocument: () => Promise<unknown>, method: string, path: string, status: number, headers: Headers, body: unknown): Promise<void> {
  // Every credgate of the test run serves the same document (one code base): built once.
  checker ??= await build((await loadDocument()) as Json);
  if (!(headers.get("content-type") ?? "").startsWith("application/json")) return;
  // As the client sent it (dot segments resolved, like fetch does), and the router serves `/v1/agents/` as
  // `/v1/agents` (one trailing slash is ignored, src/api/router.ts).
  const pathname = new URL(path, "http://localhost").pathname.replace(/(.)\/$/, "$1");
  const where = `${method} ${pathname} → ${status}`;
  if (status >= 400) {
    const problem = checker.validateError(body);
    if (problem) throw new Error(`${where}: the error body is neither shape of docs/api.md#error-shapes (${problem}): ${JSON.stringify(body)}`);
    return;
  }
  const op = checker.ops.find((o) => o.method === method && o.pattern.test(pathname));
  if (!op) throw new Error(`${where}: answered ${status} but /v1/openapi.json has no such operation`);
  const documented = op.responses[String(status)];
  if (!documented) throw new Error(`${where}: status ${status} is not documented for this operation`);
  const schema = documented.content?.["application/json"]?.schema;
  if (!schema) throw new Error(`${where}: a JSON body, but the document gives none for ${status}`);
  const problem = checker.validate(schema, body);
  if (problem) throw new Error(`${where}: the body does not match the documented schema (${problem}): ${JSON.stringify(body).slice(0, 2000)}`);
}
