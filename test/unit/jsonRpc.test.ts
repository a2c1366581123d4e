// core/jsonRpc.ts: reading an MCP client's JSON-RPC body strictly, as an attacker would try to confuse it.
import { describe, expect, test } from "bun:test";
import { jsonRpcError, MAX_JSON_DEPTH, parseStrictJson, readJsonRpcBody, sseMessageEvent, toolCallOf } from "../../src/core/jsonRpc.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("parseStrictJson", () => {
  test("reads what JSON.parse reads", () => {
    for (const text of ['{"a":[1,-2.5e3,true,false,null,"x\\u00e9\\n"]}', "[]", "  0 ", '"\\ud83d\\ude00"', '{"":{}}']) {
      const r = parseStrictJson(text);
      expect(r.ok).toBe(true);
      if (r.ok) expect(JSON.stringify(r.value)).toBe(JSON.stringify(JSON.parse(text)));
    }
  });

  test("refuses duplicate keys, at any depth and however the key is spelled", () => {
    expect(parseStrictJson('{"name":"read","name":"delete"}')).toEqual({ ok: false, reason: 'duplicate key "name" (keys are compared ignoring case) at offset 15' });
    const r = parseStrictJson('{"params":{"name":"read","n\\u0061me":"delete"}}');
    expect(r.ok).toBe(false);
    expect(parseStrictJson('[{"a":1},{"a":2}]').ok).toBe(true);
  });

  test("refuses keys that are the same ignoring case, as Go's encoding/json reads them (Unicode folding included)", () => {
    for (const text of ['{"name":"read","NAME":"delete"}', '{"Name":"read","nAME":"delete"}', '{"arguments":{},"argumentſ":{"path":"/etc"}}', '{"k":1,"\u212a":2}']) {
      expect(parseStrictJson(text).ok).toBe(false);
    }
    expect(parseStrictJson('{"name":"read","names":"delete"}').ok).toBe(true);
  });

  test("__proto__ is an ordinary key, not the prototype", () => {
    const r = parseStrictJson('{"__proto__":{"admin":true}}');
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(Object.keys(r.value as object)).toEqual(["__proto__"]);
      expect((r.value as Record<string, unknown>)["admin"]).toBeUndefined();
    }
  });

  test("refuses what lenient parsers accept", () => {
    for (const text of ["{'a':1}", '{"a":1,}', "[1,]", "01", "1.", ".5", "+1", "NaN", '{"a":1} x', '"\t"', '"\\x41"', "", "\ufeff{}", '{"a" 1}', "tru", '"abc']) {
      expect(parseStrictJson(text).ok).toBe(false);
    }
  });

  test("refuses nesting deeper than the bound without spending the stack", () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const r = parseStrictJson(deep);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(`deeper than ${MAX_JSON_DEPTH}`);
    expect(parseStrictJson("[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH)).ok).toBe(true);
  });
});

describe("readJsonRpcBody", () => {
  test("one message", () => {
    const r = readJsonRpcBody(bytes('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'));
    expect(r.ok && !r.batch && r.messages.length === 1).toBe(true);
    if (!r.ok) return;
    expect(r.messages[0]!.kind).toBe("tools/call");
    expect(r.messages[0]!.id).toBe(7);
  });

  test("a batch mixing calls, lists, notifications and responses is read message by message", () => {
    const r = readJsonRpcBody(
      bytes(
        JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: {} } },
          { jsonrpc: "2.0", id: "b", method: "tools/list" },
          { jsonrpc: "2.0", method: "notifications/initialized" },
          { jsonrpc: "2.0", id: 9, result: {} },
          42,
        ]),
      ),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.batch).toBe(true);
    expect(r.messages.map((m) => [m.kind, m.id])).toEqual([
      ["tools/call", 1],
      ["tools/list", "b"],
      ["other", null],
      ["other", 9],
      ["other", null],
    ]);
  });

  test("tools/call spelled with odd case or whitespace is still judged as a call", () => {
    for (const method of ["Tools/Call", " tools/call", "tools/call\n", "TOOLS/CALL", "tools/c\\u0061ll"]) {
      const r = readJsonRpcBody(bytes(`{"jsonrpc":"2.0","id":1,"method":${JSON.stringify(method).replace("\\\\u", "\\u")},"params":{"name":"x"}}`));
      expect(r.ok && r.messages[0]!.kind).toBe("tools/call");
    }
    const list = readJsonRpcBody(bytes('{"jsonrpc":"2.0","id":1,"method":" Tools/List"}'));
    expect(list.ok && list.messages[0]!.kind).toBe("tools/list");
  });

  test("the message's own fields are found whatever their case: a Go server reads METHOD and NAME", () => {
    const r = readJsonRpcBody(bytes('{"JSONRPC":"2.0","ID":4,"METHOD":"tools/call","PARAMS":{"NAME":"delete_all","ARGUMENTS":{"x":1}}}'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.messages[0]!.kind).toBe("tools/call");
    expect(r.messages[0]!.id).toBe(4);
    const c = toolCallOf(r.messages[0]!);
    expect(c.ok && c.call.name).toBe("delete_all");
    expect(c.ok && c.call.arguments).toEqual({ x: 1 });
    const folded = readJsonRpcBody(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","argumentſ":{"path":"/etc"}}}'));
    expect(folded.ok).toBe(true);
    if (folded.ok) {
      const f = toolCallOf(folded.messages[0]!);
      expect(f.ok && f.call.arguments).toEqual({ path: "/etc" });
    }
  });

  test("a batch inside a batch is refused", () => {
    expect(readJsonRpcBody(bytes('[[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_all"}}]]'))).toEqual({
      ok: false,
      code: -32600,
      message: "credgate: a JSON-RPC batch must not hold another batch",
    });
  });

  test("unicode escapes in a tool name are read as the server reads them", () => {
    const r = readJsonRpcBody(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete\\u005frepo"}}'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = toolCallOf(r.messages[0]!);
    expect(c.ok && c.call.name).toBe("delete_repo");
  });

  test("duplicate keys, invalid UTF-8 and broken JSON are refused with a parse error", () => {
    const dup = readJsonRpcBody(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","name":"evil"}}'));
    expect(dup).toEqual({ ok: false, code: -32700, message: expect.stringContaining('duplicate key "name"') });
    const dupMethod = readJsonRpcBody(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"evil"}}'));
    expect(dupMethod.ok).toBe(false);
    expect(readJsonRpcBody(new Uint8Array([0x7b, 0xff, 0x7d]))).toEqual({ ok: false, code: -32700, message: "credgate: the MCP request body is not UTF-8" });
    expect(readJsonRpcBody(bytes('{"jsonrpc":"2.0",')).ok).toBe(false);
  });

  test("non-object params, a missing name and non-object arguments cannot be judged", () => {
    const msg = (params: string) => {
      const r = readJsonRpcBody(bytes(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${params}}`));
      if (!r.ok) throw new Error("not read");
      return toolCallOf(r.messages[0]!);
    };
    expect(msg('["echo"]')).toEqual({ ok: false, message: "credgate: tools/call params must be an object" });
    expect(msg('"echo"')).toEqual({ ok: false, message: "credgate: tools/call params must be an object" });
    expect(msg("{}")).toEqual({ ok: false, message: "credgate: tools/call params.name must be a string" });
    expect(msg('{"name":["echo"]}')).toEqual({ ok: false, message: "credgate: tools/call params.name must be a string" });
    expect(msg('{"name":"echo","arguments":[1]}')).toEqual({ ok: false, message: "credgate: tools/call arguments of echo must be an object" });
    expect(msg('{"name":"echo","arguments":"{}"}').ok).toBe(false);
    const none = msg('{"name":"echo"}');
    expect(none.ok && Object.keys(none.call.arguments)).toEqual([]);
    const nul = msg('{"name":"echo","arguments":null}');
    expect(nul.ok).toBe(true);
  });
});

test("errors and SSE events are written as clients read them", () => {
  expect(jsonRpcError(3, -32010, "credgate: tool x is not granted to this agent")).toEqual({ jsonrpc: "2.0", id: 3, error: { code: -32010, message: "credgate: tool x is not granted to this agent" } });
  expect(sseMessageEvent({ a: 1 })).toBe('event: message\ndata: {"a":1}\n\n');
});
