// The gateway's outgoing request headers (src/gateway/http1/headerList.ts): edited by name as a Headers object
// is, kept as the agent sent them, and never able to hold what would break the head it is written into.
import { describe, expect, test } from "bun:test";
import { applyInjection } from "../../src/core/inject.ts";
import { HeaderList } from "../../src/gateway/http1/headerList.ts";

const sent = (): [string, string][] => [
  ["User-Agent", "agent/1"],
  ["Accept", "text/plain"],
  ["X-API-Key", "placeholder"],
  ["accept", "application/json"],
];

describe("HeaderList", () => {
  test("reads by name in any case; repeated fields joined as Headers.get joins them", () => {
    const h = new HeaderList(sent());
    expect(h.get("accept")).toBe("text/plain, application/json");
    expect(h.get("x-api-key")).toBe("placeholder");
    expect(h.get("X-Missing")).toBeNull();
    expect(h.has("USER-AGENT")).toBe(true);
    expect(h.has("cookie")).toBe(false);
  });

  test("iterates the lines as sent: names in their case, repeats separate, in order", () => {
    expect([...new HeaderList(sent())]).toEqual(sent());
  });

  test("set replaces the first field of the name in place and drops the others; a new name goes last", () => {
    const h = new HeaderList(sent());
    h.set("ACCEPT", "*/*");
    h.set("authorization", "Bearer v");
    expect([...h]).toEqual([
      ["User-Agent", "agent/1"],
      ["ACCEPT", "*/*"],
      ["X-API-Key", "placeholder"],
      ["authorization", "Bearer v"],
    ]);
  });

  test("delete drops every field of the name", () => {
    const h = new HeaderList(sent());
    h.delete("Accept");
    expect([...h]).toEqual([
      ["User-Agent", "agent/1"],
      ["X-API-Key", "placeholder"],
    ]);
  });

  test("refuses a name that is not a token and a value with NUL, CR or LF, as Headers does, leaving the list unchanged", () => {
    const h = new HeaderList(sent());
    expect(() => h.set("x-evil", "a\r\nx-injected: 1")).toThrow(TypeError);
    expect(() => h.set("X-API-Key", "a\nb")).toThrow(TypeError);
    expect(() => h.set("bad name", "v")).toThrow(TypeError);
    expect(() => h.set("x-nul", "a\0b")).toThrow(TypeError);
    expect([...h]).toEqual(sent());
    // A tab and non-ASCII bytes are legal field content.
    h.set("x-tab", "a\tb");
    expect(h.get("x-tab")).toBe("a\tb");
  });

  test("injection edits it as it edits a Headers object (llm_a api key: x-api-key set, Authorization removed)", () => {
    const h = new HeaderList([["Authorization", "Bearer ph"], ["X-Api-Key", "ph"], ["Anthropic-Version", "2023-06-01"]]);
    const out = applyInjection({ type: "llm_a", authMode: "api-key", injection: null }, "sk-ant-api03-K", h, "/v1/messages");
    expect(out).toEqual({ ok: true, pathAndQuery: "/v1/messages", count: 2 });
    expect([...h]).toEqual([["x-api-key", "sk-ant-api03-K"], ["Anthropic-Version", "2023-06-01"]]);
  });
});
