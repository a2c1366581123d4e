// The dashboard's API types are generated from the OpenAPI document (scripts/gen-dashboard-types.ts): the
// committed src/dashboard/ui/api-types.ts must be what the generator writes today, so it cannot drift from
// the records the API answers with. On failure: `npm run gen:dashboard-types` and commit the result.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { allRoutes, caRoutes } from "../../src/api/app.ts";
import { openApiDocument } from "../../src/api/openapi.ts";
import { VERSION } from "../../src/runtime/version.ts";
import { generate, OUTPUT } from "../../scripts/gen-dashboard-types.ts";

test("src/dashboard/ui/api-types.ts is what the generator writes from today's OpenAPI document", () => {
  expect(readFileSync(OUTPUT, "utf8")).toBe(generate());
});

test("every component schema of the document is one exported type, and the translation is faithful", () => {
  const generated = generate();
  const names = Object.keys(openApiDocument([...allRoutes(), ...caRoutes("")], VERSION).components.schemas).sort();
  expect([...generated.matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1])).toEqual(names);
  // Required and optional fields, nullable unions, literal unions, arrays of records, records of strings.
  expect(generated).toContain(`export interface Agent {
  id: string;
  name: string;
  identifier: string;
  mode: "all" | "grants";
  isDefault: boolean;
  /** agt_…; only in the list, /agents/default and token regeneration */
  accessToken?: string;`);
  expect(generated).toContain("  lastSeenAt: string | null;\n");
  expect(generated).toContain("export interface PendingApprovals {\n  requests: ApprovalRequest[];\n  timeoutSeconds: number;\n}");
  expect(generated).toContain("  env: Record<string, string>;\n");
  expect(generated).toContain("  rateLimitWindow: \"minute\" | \"hour\" | \"day\" | null;\n");
  expect(generated).toContain("  targets: RuleTarget[];\n");
});
