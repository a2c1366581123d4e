// docs/api-reference.md is generated (scripts/gen-api-reference.ts, `npm run docs:api`) from the OpenAPI
// document: the committed page must be what the script renders now, from the document the server really
// serves, and it must name every operation of that document.
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { describeApi } from "../../src/api/app.ts";
import { REFERENCE_PATH, renderApiReference, renderSchema, slug, typeOf } from "../../scripts/gen-api-reference.ts";
import { createTestApi, type TestApi } from "../support/app.ts";

let api: TestApi;

beforeAll(async () => {
  api = await createTestApi();
});

describe("docs/api-reference.md", () => {
  test("is built from the document GET /v1/openapi.json serves", async () => {
    const served = await api.call("GET", "/v1/openapi.json", { key: null });
    expect(served.status).toBe(200);
    expect(served.body).toEqual(describeApi());
  });

  test("is what `npm run docs:api` generates now (run it after changing a route)", () => {
    const committed = readFileSync(REFERENCE_PATH, "utf8");
    const fresh = renderApiReference(describeApi());
    if (committed !== fresh) {
      const a = committed.split("\n");
      const b = fresh.split("\n");
      const at = a.findIndex((line, i) => line !== b[i]);
      throw new Error(`docs/api-reference.md is out of date (first difference at line ${at + 1}: ${JSON.stringify(a[at])} vs ${JSON.stringify(b[at])}); run \`npm run docs:api\``);
    }
  });

  test("has one heading per operation and one per schema, each reachable from the contents", () => {
    const doc = describeApi() as { paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } };
    const page = readFileSync(REFERENCE_PATH, "utf8");
    const headings = page.split("\n").filter((l) => l.startsWith("### "));
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) {
        operations++;
        const heading = `### ${method.toUpperCase()} ${path}`;
        expect(headings).toContain(heading);
        expect(page).toContain(`](#${slug(heading.slice(4))})`);
      }
    }
    expect(operations).toBeGreaterThan(100);
    for (const name of Object.keys(doc.components.schemas)) expect(headings).toContain(`### ${name} (schema)`);
    // Anchors are unique, as GitHub would otherwise number duplicates.
    const anchors = page.split("\n").filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, "")));
    expect(new Set(anchors).size).toBe(anchors.length);
  });
});

describe("rendering", () => {
  test("types read like TypeScript: literals, unions, arrays, references, nullable", () => {
    expect(typeOf({ anyOf: [{ const: "all", type: "string" }, { const: "grants", type: "string" }] })).toBe('"all" \\| "grants"');
    expect(typeOf({ type: "array", items: { $ref: "#/components/schemas/Agent" } })).toBe("[Agent](#agent-schema)[]");
    expect(typeOf({ anyOf: [{ type: "string", format: "date-time" }, { type: "null" }] })).toBe("timestamp \\| null");
    expect(typeOf({})).toBe("any");
  });

  test("an object becomes a field table with optional fields, constraints and nested fields", () => {
    const table = renderSchema({
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string", minLength: 1, maxLength: 255, description: "Trimmed." },
        opDisplay: { type: "object", properties: { vault: { type: "string", maxLength: 255 } } },
      },
    });
    expect(table.split("\n")).toEqual([
      "| Field | Type | Notes |",
      "|---|---|---|",
      "| `name` | string | Trimmed; 1-255 characters |",
      "| `opDisplay` | object | optional |",
      "| `opDisplay.vault` | string | optional; at most 255 characters |",
    ]);
  });

  test("headings get GitHub's anchors", () => {
    expect(slug("GET /agents/{agentId}")).toBe("get-agentsagentid");
    expect(slug("Agent (schema)")).toBe("agent-schema");
    expect(slug("org secrets")).toBe("org-secrets");
  });
});
