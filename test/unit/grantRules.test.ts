// Grants compiled to managed project-scope rules (docs/policy.md#managed-rules), pure: names, ids, order,
// actions, approval flags and targets of a secret grant, a `full` and a `custom` connection grant.
import { describe, expect, test } from "bun:test";
import { connectionGrantRules, secretGrantRule, type ConnectionGrantRef } from "../../src/core/grantRules.ts";

const agent = { id: "agent-1", name: "Build bot" };
const common = {
  scope: "project",
  enabled: true,
  isDefault: false,
  source: "grant",
  rateLimit: null,
  rateLimitWindow: null,
  conditions: null,
  identities: [{ id: "agent-1" }],
};
const conn = (over: Partial<ConnectionGrantRef>): ConnectionGrantRef => ({ connectionId: "conn-9", display: "octocat", access: "full", allow: [], ask: [], ...over });
const target = (tools: string[]) => [{ kind: "connection" as const, connectionId: "conn-9", tools }];

describe("secret grant", () => {
  test("one allow rule targeting the secret, named after the agent and the secret, for that agent only", async () => {
    expect(secretGrantRule(agent, { secretId: "sec-1", name: "OPENAI_KEY" })).toEqual({
      ...common,
      id: "grant:agent-1:sec-1",
      logicalId: "grant:agent-1:sec-1",
      name: "Grant: Build bot · OPENAI_KEY",
      action: "allow",
      requireApproval: false,
      targets: [{ kind: "secret", secretId: "sec-1" }],
    } as never);
  });
});

describe("connection grant", () => {
  test("full: one allow rule on the whole connection (empty tools)", async () => {
    expect(connectionGrantRules(agent, conn({}))).toEqual([
      {
        ...common,
        id: "grant:agent-1:conn-9",
        logicalId: "grant:agent-1:conn-9",
        name: "Grant: Build bot · octocat",
        action: "allow",
        requireApproval: false,
        targets: target([]),
      } as never,
    ]);
  });

  test("full ignores allow and ask lists", async () => {
    const rules = connectionGrantRules(agent, conn({ allow: ["list_issues"], ask: ["create_issue"] }));
    expect(rules.length).toBe(1);
    expect(rules[0]!).toMatchObject({ action: "allow", requireApproval: false, targets: target([]) });
  });

  test("the display is the connection's label, or its provider (the caller passes it)", async () => {
    expect(connectionGrantRules(agent, conn({ display: "github" }))[0]!.name).toBe("Grant: Build bot · github");
  });

  test("custom: allowed, needs approval, everything else — in this order, with distinct ids", async () => {
    const rules = connectionGrantRules(agent, conn({ access: "custom", allow: ["list_issues", "get_issue"], ask: ["create_issue"] }));
    expect(rules).toEqual([
      {
        ...common,
        id: "grant:agent-1:conn-9:allow",
        logicalId: "grant:agent-1:conn-9:allow",
        name: "Grant: Build bot · octocat — allowed",
        action: "allow",
        requireApproval: false,
        targets: target(["list_issues", "get_issue"]),
      },
      {
        ...common,
        id: "grant:agent-1:conn-9:ask",
        logicalId: "grant:agent-1:conn-9:ask",
        name: "Grant: Build bot · octocat — needs approval",
        action: "allow",
        requireApproval: true,
        targets: target(["create_issue"]),
      },
      {
        ...common,
        id: "grant:agent-1:conn-9:rest",
        logicalId: "grant:agent-1:conn-9:rest",
        name: "Grant: Build bot · octocat — everything else",
        action: "block",
        requireApproval: false,
        targets: target([]),
      },
    ] as never);
    expect(new Set(rules.map((r) => r.id)).size).toBe(3);
  });

  test("custom with an empty ask list: allowed, then everything else", async () => {
    const rules = connectionGrantRules(agent, conn({ access: "custom", allow: ["list_issues"], ask: [] }));
    expect(rules.map((r) => [r.name, r.action, r.requireApproval, r.targets])).toEqual([
      ["Grant: Build bot · octocat — allowed", "allow", false, target(["list_issues"])],
      ["Grant: Build bot · octocat — everything else", "block", false, target([])],
    ]);
  });

  test("custom with an empty allow list: needs approval, then everything else", async () => {
    const rules = connectionGrantRules(agent, conn({ access: "custom", allow: [], ask: ["create_issue", "merge_pull"] }));
    expect(rules.map((r) => [r.id, r.action, r.requireApproval, r.targets])).toEqual([
      ["grant:agent-1:conn-9:ask", "allow", true, target(["create_issue", "merge_pull"])],
      ["grant:agent-1:conn-9:rest", "block", false, target([])],
    ]);
  });

  test("custom with both lists empty compiles to the block alone (the API refuses it before compiling)", async () => {
    const rules = connectionGrantRules(agent, conn({ access: "custom" }));
    expect(rules.map((r) => r.id)).toEqual(["grant:agent-1:conn-9:rest"]);
    expect(rules[0]!.action).toBe("block");
  });

  test("rule ids are per agent and per connection: another agent or connection never collides", async () => {
    const a = connectionGrantRules(agent, conn({ access: "custom", allow: ["x"], ask: ["y"] })).map((r) => r.id);
    const b = connectionGrantRules({ id: "agent-2", name: "Build bot" }, conn({ access: "custom", allow: ["x"], ask: ["y"] })).map((r) => r.id);
    const c = connectionGrantRules(agent, conn({ connectionId: "conn-10", access: "custom", allow: ["x"], ask: ["y"] })).map((r) => r.id);
    expect(new Set([...a, ...b, ...c]).size).toBe(9);
    expect(secretGrantRule(agent, { secretId: "conn-9", name: "s" }).id).toBe("grant:agent-1:conn-9");
  });
});
