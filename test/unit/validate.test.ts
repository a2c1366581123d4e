// The route-level validator (docs/api.md#validation-messages): only the first failure is reported — fields in declaration
// order, each field's checks in order — with the generic wording of the docs/api.md#validation-messages table.
import { describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ApiError } from "../../src/core/errors.ts";
import { validate } from "../../src/api/validate.ts";

const Target = T.Object(
  {
    kind: T.Union([T.Literal("network"), T.Literal("app")]),
    hostPattern: T.String({ minLength: 1, maxLength: 255 }),
    method: T.Optional(T.Union([T.Literal("GET"), T.Literal("POST")])),
  },
  { additionalProperties: false },
);

const Rule = T.Object({
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  description: T.Optional(T.Union([T.String({ maxLength: 1000 }), T.Null()])),
  enabled: T.Optional(T.Boolean()),
  action: T.Union([T.Literal("allow"), T.Literal("block")]),
  rateLimit: T.Optional(T.Integer({ minimum: 1, maximum: 1000000 })),
  email: T.Optional(T.String({ format: "email" })),
  url: T.Optional(T.String({ format: "uri" })),
  options: T.Optional(T.Object({ a: T.Optional(T.String()) })),
  targets: T.Array(Target, { minItems: 1, maxItems: 100 }),
});

const good = () => ({ name: "r", action: "allow", targets: [{ kind: "network", hostPattern: "api.x.com" }] });

function fails(schema: Parameters<typeof validate>[0], value: unknown): string | ApiError {
  const r = validate(schema, value);
  if (r.ok) throw new Error(`expected a failure for ${JSON.stringify(value)}`);
  return r.message;
}

describe("validate: success", () => {
  test("a valid body passes, trimmed fields are stored trimmed, unknown keys are dropped", async () => {
    const r = validate(Rule, { ...good(), name: "  spaced  ", extra: "ignored" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.name).toBe("spaced");
    expect("extra" in r.value).toBe(false);
    expect(r.value.targets[0]!.hostPattern).toBe("api.x.com");
  });

  test("nullable optional fields accept null", async () => {
    const r = validate(Rule, { ...good(), description: null });
    expect(r.ok).toBe(true);
  });
});

describe("validate: generic messages (docs/api.md#validation-messages table)", () => {
  test.each([
    ["required field absent", { action: "allow", targets: [] }, "name is required"],
    ["required field null", { ...good(), name: null }, "name is required"],
    ["wrong type: string", { ...good(), name: 5 }, "name must be a string"],
    ["wrong type: integer (fraction)", { ...good(), rateLimit: 1.5 }, "rateLimit must be an integer"],
    ["wrong type: integer (string)", { ...good(), rateLimit: "5" }, "rateLimit must be an integer"],
    ["wrong type: boolean", { ...good(), enabled: "true" }, "enabled must be a boolean"],
    ["wrong type: array", { ...good(), targets: {} }, "targets must be an array"],
    ["wrong type: object", { ...good(), options: "x" }, "options must be an object"],
    ["wrong type: object (array given)", { ...good(), options: [] }, "options must be an object"],
    ["string length with min and max", { ...good(), name: "" }, "name must be 1-255 characters"],
    ["string length over max", { ...good(), name: "x".repeat(256) }, "name must be 1-255 characters"],
    ["blank after trimming", { ...good(), name: "   " }, "name must be 1-255 characters"],
    ["string length with only a max", { ...good(), description: "x".repeat(1001) }, "description must be at most 1000 characters"],
    ["enum", { ...good(), action: "deny" }, "action must be one of: allow, block"],
    ["enum with wrong type", { ...good(), action: 1 }, "action must be one of: allow, block"],
    ["integer bounds (low)", { ...good(), rateLimit: 0 }, "rateLimit must be between 1 and 1000000"],
    ["integer bounds (high)", { ...good(), rateLimit: 1000001 }, "rateLimit must be between 1 and 1000000"],
    ["array size (empty)", { ...good(), targets: [] }, "targets must have 1-100 items"],
    ["array size (too many)", { ...good(), targets: Array.from({ length: 101 }, () => ({ kind: "network", hostPattern: "a.b" })) }, "targets must have 1-100 items"],
    ["email format", { ...good(), email: "not-an-email" }, "email must be a valid email address"],
    ["URL format", { ...good(), url: "not a url" }, "url must be a valid URL"],
  ] as [string, unknown, string][])("%s", (_label, body, message) => {
    expect(fails(Rule, body)).toBe(message);
  });

  test("nested paths use dots and indexes", async () => {
    expect(fails(Rule, { ...good(), targets: [{ kind: "network", hostPattern: "a.b" }, { kind: "network" }] })).toBe("targets[1].hostPattern is required");
    expect(fails(Rule, { ...good(), targets: [{ kind: "nope", hostPattern: "a.b" }] })).toBe("targets[0].kind must be one of: network, app");
    expect(fails(Rule, { ...good(), targets: [{ kind: "app", hostPattern: 7 }] })).toBe("targets[0].hostPattern must be a string");
    expect(fails(Rule, { ...good(), targets: [{ kind: "app", hostPattern: "a", method: "PUT" }] })).toBe("targets[0].method must be one of: GET, POST");
    expect(fails(Rule, { ...good(), options: { a: 1 } })).toBe("options.a must be a string");
  });

  test("unknown key in a strict object", async () => {
    expect(fails(Rule, { ...good(), targets: [{ kind: "network", hostPattern: "a.b", port: 1 }] })).toBe('targets[0] has unknown field "port"');
  });

  test("the body must be a JSON object", async () => {
    for (const body of [null, [], [good()], "x", 1, true]) expect(fails(Rule, body)).toBe("Request body must be a JSON object");
  });
});

describe("validate: only the first failure, in field order", () => {
  test("the earliest field wins whatever else is wrong", async () => {
    const allBad = { name: "", description: 5, enabled: "x", action: "deny", rateLimit: 0, targets: "x" };
    expect(fails(Rule, allBad)).toBe("name must be 1-255 characters");
    expect(fails(Rule, { ...allBad, name: "ok" })).toBe("description must be a string");
    expect(fails(Rule, { ...allBad, name: "ok", description: null })).toBe("enabled must be a boolean");
    expect(fails(Rule, { ...allBad, name: "ok", description: null, enabled: true })).toBe("action must be one of: allow, block");
    expect(fails(Rule, { ...allBad, name: "ok", description: null, enabled: true, action: "block" })).toBe("rateLimit must be between 1 and 1000000");
    expect(fails(Rule, { ...allBad, name: "ok", description: null, enabled: true, action: "block", rateLimit: 3 })).toBe("targets must be an array");
  });

  test("field order is the schema's, not the body's key order", async () => {
    // Keys listed in reverse: the schema's first field is still reported first.
    expect(fails(Rule, { targets: [], action: "x", name: 1 })).toBe("name must be a string");
  });

  test("within an array, the first bad item is reported", async () => {
    const targets = [{ kind: "network", hostPattern: "ok" }, { kind: "bad", hostPattern: "" }, { kind: "bad" }];
    expect(fails(Rule, { ...good(), targets })).toBe("targets[1].kind must be one of: network, app");
  });

  test("within one field, the type check precedes the length check", async () => {
    expect(fails(Rule, { ...good(), name: ["x".repeat(300)] })).toBe("name must be a string");
  });
});

describe("validate: field options used by routes", () => {
  const Schema = T.Object({
    kind: T.Union([T.Literal("a"), T.Literal("b")]),
    code: T.Optional(T.String({ pattern: "^[a-z]+$", error: "Code must be lowercase letters" })),
    value: T.Optional(T.String({ trim: true, blankIsAbsent: true, requiredWhen: (b: any) => b.kind === "a", missing: "value is required" })),
    extra: T.Optional(T.Unknown({ skipWhen: (b: any) => b.kind === "b", refine: (v: unknown) => (v === "bad" ? "extra is bad" : null) })),
    envelope: T.Optional(T.Unknown({ requiredWhen: (b: any) => b.kind === "b", missing: new ApiError(400, "Envelope failure") })),
  });

  test("`error` replaces every message of the field, including 'required'", async () => {
    expect(fails(Schema, { kind: "b", code: "ABC", envelope: 1 })).toBe("Code must be lowercase letters");
    expect(fails(Schema, { kind: "b", code: 5, envelope: 1 })).toBe("Code must be lowercase letters");
  });

  test("requiredWhen + blankIsAbsent + missing", async () => {
    expect(fails(Schema, { kind: "a" })).toBe("value is required");
    expect(fails(Schema, { kind: "a", value: "   " })).toBe("value is required");
    expect(validate(Schema, { kind: "a", value: " v " })).toEqual({ ok: true, value: { kind: "a", value: "v" } });
  });

  test("skipWhen ignores the field, refine adds a check", async () => {
    expect(fails(Schema, { kind: "a", value: "v", extra: "bad" })).toBe("extra is bad");
    const r = validate(Schema, { kind: "b", extra: "bad", envelope: 1 });
    expect(r.ok).toBe(true);
  });

  test("a `missing` ApiError is returned as is (service-shaped failure)", async () => {
    const m = fails(Schema, { kind: "b" });
    expect(m).toBeInstanceOf(ApiError);
    expect((m as ApiError).message).toBe("Envelope failure");
  });
});
