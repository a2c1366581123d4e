// Pure parts of the audit log (docs/operations.md#audit-log): canonical JSON, the changed fields with their
// redaction, the chain hash, and the action and fallback target a route's path names.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { actionOf, pathTarget } from "../../src/api/auditedWrite.ts";
import { diffChanges, REDACTED, redactValue } from "../../src/core/auditChanges.ts";
import { canonicalJson } from "../../src/core/canonicalJson.ts";
import { chainHash, GENESIS_HASH } from "../../src/services/auditChain.ts";

describe("canonicalJson", () => {
  test("sorted keys at every depth, no whitespace, arrays in order, undefined members left out", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: null }], c: "x" }, u: undefined })).toBe('{"a":{"c":"x","d":[3,{"y":null,"z":1}]},"b":1}');
    expect(canonicalJson([undefined, 1])).toBe("[null,1]");
    expect(canonicalJson("é\n\"")).toBe('"é\\n\\""');
    expect(canonicalJson(null)).toBe("null");
    expect(canonicalJson({ B: 1, a: 2, _: 3 })).toBe('{"B":1,"_":3,"a":2}');
  });

  test("the same value in any key order has one text", () => {
    expect(canonicalJson({ x: 1, y: [1, 2], z: { q: true, p: false } })).toBe(canonicalJson({ z: { p: false, q: true }, y: [1, 2], x: 1 }));
  });

  test("no JSON form: refused", () => {
    expect(() => canonicalJson(undefined)).toThrow();
    expect(() => canonicalJson(() => 1)).toThrow();
  });
});

describe("diffChanges", () => {
  test("create: every field [null, value]; delete: [value, null]; bookkeeping fields left out", () => {
    expect(diffChanges(null, { id: "1", name: "a", createdAt: "t", updatedAt: "t", mode: "all" })).toEqual({ mode: [null, "all"], name: [null, "a"] });
    expect(diffChanges({ id: "1", name: "a", empty: null }, null)).toEqual({ name: ["a", null] });
  });

  test("update: only the fields that differ, nested values compared whole", () => {
    expect(diffChanges({ name: "a", cfg: { h: "x" }, same: [1] }, { name: "b", cfg: { h: "y" }, same: [1] })).toEqual({ cfg: [{ h: "x" }, { h: "y" }], name: ["a", "b"] });
    expect(diffChanges({ a: 1 }, { a: 1 })).toEqual({});
  });

  test("secret fields read <redacted> on the side where they are set, and a change of them is kept", () => {
    expect(diffChanges({ valueSealed: "v1:aaa", tokenHash: "h1", name: "n" }, { valueSealed: "v1:bbb", tokenHash: "h1", name: "n" })).toEqual({ valueSealed: [REDACTED, REDACTED] });
    expect(diffChanges(null, { password: "hunter2", clientSecret: "cs", apiKey: "k", masterKey: "m", signingSecret: "s", private_key: "p" })).toEqual({
      apiKey: [null, REDACTED],
      clientSecret: [null, REDACTED],
      masterKey: [null, REDACTED],
      password: [null, REDACTED],
      private_key: [null, REDACTED],
      signingSecret: [null, REDACTED],
    });
    expect(diffChanges({ value: "x" }, { value: null })).toEqual({ value: [REDACTED, null] });
  });

  test("identifiers of secrets are not secrets; nested secret fields and credential-shaped strings are redacted", () => {
    expect(diffChanges(null, { secretIds: ["a"], secretId: "b" })).toEqual({ secretId: [null, "b"], secretIds: [null, ["a"]] });
    expect(diffChanges(null, { config: { clientId: "id", clientSecret: "cs" } })).toEqual({ config: [null, { clientId: "id", clientSecret: REDACTED }] });
    expect(redactValue({ note: `token agt_${"a".repeat(64)}`, list: ["svc_org_" + "b".repeat(64), "plain"] })).toEqual({ note: REDACTED, list: [REDACTED, "plain"] });
  });
});

describe("chainHash", () => {
  test("SHA-256 (lowercase hex) of the previous hash followed by the event's canonical JSON", () => {
    const event = { id: "e1", at: "2025-01-01T00:00:00.000Z", organizationId: "o", partnerId: null, projectId: null, actor: { kind: "cli", id: "root", email: null }, action: "credgate x", targetType: "t", targetId: null, address: null, changes: {} };
    const expected = createHash("sha256").update(GENESIS_HASH + canonicalJson(event)).digest("hex");
    expect(chainHash(GENESIS_HASH, event)).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
    expect(chainHash(expected, event)).not.toBe(expected);
  });
});

describe("the action and fallback target of a route", () => {
  test("actionOf: /v1 and the OpenAPI parameter names", () => {
    expect(actionOf("PATCH", "/secrets/:secretId")).toBe("PATCH /v1/secrets/{secretId}");
    expect(actionOf("POST", "/partner/orgs/:orgId/secrets/:secretId/budget")).toBe("POST /v1/partner/orgs/{orgId}/secrets/{secretId}/budget");
  });

  test("pathTarget: the resource before the last parameter, else the first resource segment and the answer's id", () => {
    expect(pathTarget("/agents/:agentId/regenerate-token", { agentId: "a1" }, null)).toEqual({ targetType: "agent", targetId: "a1" });
    expect(pathTarget("/policy/rules/:ruleId", { ruleId: "r1" }, null)).toEqual({ targetType: "rule", targetId: "r1" });
    expect(pathTarget("/org/api-key/regenerate", {}, { apiKey: "svc_x" })).toEqual({ targetType: "api_key", targetId: null });
    expect(pathTarget("/secrets", {}, { status: 201, body: { id: "s1" } })).toEqual({ targetType: "secret", targetId: "s1" });
    expect(pathTarget("/policies", {}, { id: "p1" })).toEqual({ targetType: "policy", targetId: "p1" });
    expect(pathTarget("/auth/login", {}, new Response("{}"))).toEqual({ targetType: "auth", targetId: null });
  });
});
