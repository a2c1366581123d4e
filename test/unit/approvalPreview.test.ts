// What a reviewer sees of a held request (docs/policy.md#approvals): redaction, rendering and caps. Pure functions.
import { describe, expect, test } from "bun:test";
import { approvalSummary, isSensitiveKey, renderBody, summaryPreview } from "../../src/core/approvalPreview.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const render = (s: string, contentType: string | null = "application/json", truncated = false) => renderBody(enc(s), contentType, truncated);

describe("sensitive keys", () => {
  test("a key containing any listed word, case-insensitively", async () => {
    for (const k of ["authorization", "Password", "passwd", "client_secret", "X-Auth-Token", "api_key", "apiKey", "ACCESS_KEY", "accessKey", "private_key", "refresh_token", "secretValue", "id_token"]) {
      expect({ k, sensitive: isSensitiveKey(k) }).toEqual({ k, sensitive: true });
    }
    for (const k of ["to", "name", "key", "pass", "auth", "api"]) expect({ k, sensitive: isSensitiveKey(k) }).toEqual({ k, sensitive: false });
  });
});

describe("renderBody", () => {
  test("empty → null", async () => {
    expect(renderBody(new Uint8Array(0), "application/json", false)).toBeNull();
  });

  test("JSON: sensitive values at any depth → ***, long base64 and long strings summarised", async () => {
    const b64 = "QUFB".repeat(30); // 120 base64 characters
    const body = { to: "a@b.c", token: "abc", nested: [{ Password: { deep: 1 } }, { note: "n".concat(" word".repeat(30)) }], blob: b64, n: 5, ok: true, nil: null };
    expect(JSON.parse(render(JSON.stringify(body))!)).toEqual({
      to: "a@b.c",
      token: "***",
      nested: [{ Password: "***" }, { note: "<151 chars>" }],
      blob: "<120 chars, base64>",
      n: 5,
      ok: true,
      nil: null,
    });
    // Exactly at the thresholds: 96 characters stay, 99 base64 characters are not a run.
    expect(JSON.parse(render(JSON.stringify({ s: "a b".repeat(32) }))!)).toEqual({ s: "a b".repeat(32) });
    expect(JSON.parse(render(JSON.stringify({ s: "A".repeat(99) }))!)).toEqual({ s: "<99 chars>" });
    expect(JSON.parse(render(JSON.stringify({ s: "A".repeat(100) }))!)).toEqual({ s: "<100 chars, base64>" });
  });

  test("JSON is recognised whatever the content type", async () => {
    expect(render('{"password":"x"}', "text/plain")).toBe('{"password":"***"}');
    expect(render('{"password":"x"}', null)).toBe('{"password":"***"}');
  });

  test("a JSON body cut at the peek limit still has its sensitive pairs masked", async () => {
    const full = JSON.stringify({ api_key: "sk-live-123", "x-token": 12345, to: "a@b.c", password: 'hun"ter2', data: "x ".repeat(10000) });
    const out = renderBody(enc(full).subarray(0, 16 * 1024), "application/json", true)!;
    expect(out).not.toContain("sk-live-123");
    expect(out).not.toContain("12345");
    expect(out).not.toContain("hun");
    expect(out.startsWith('{"api_key":"***","x-token":"***","to":"a@b.c","password":"***","data":"x x ')).toBe(true);
    expect(out.length).toBe(500);
    // Cut inside a sensitive string value.
    expect(renderBody(enc('{"a":1,"secret":"abcdefgh'), "application/json", true)).toBe('{"a":1,"secret":"***"');
  });

  test("form bodies: sensitive parameters masked", async () => {
    expect(render("client_secret=s3&note=hi&access_token=t", "application/x-www-form-urlencoded")).toBe("client_secret=***&note=hi&access_token=***");
  });

  test("plain text: base64 runs summarised, the rest kept, capped at 500 with an ellipsis", async () => {
    expect(render(`hello ${"Zm9v".repeat(30)} world`, "text/plain")).toBe("hello <120 chars, base64> world");
    const long = render("word ".repeat(200), "text/plain")!;
    expect(long.length).toBe(500);
    expect(long.endsWith("…")).toBe(true);
  });

  test("binary → <binary, N bytes>, with + when the peek cut it", async () => {
    const bin = new Uint8Array([0, 1, 2, 3, 255, 254]);
    expect(renderBody(bin, "application/octet-stream", false)).toBe("<binary, 6 bytes>");
    expect(renderBody(bin, "application/octet-stream", true)).toBe("<binary, 6+ bytes>");
    expect(renderBody(enc("text with a \u0001 control byte"), "text/plain", false)).toBe("<binary, 26 bytes>");
  });

  test("UTF-8 text cut inside a character by the peek is still text", async () => {
    const bytes = enc("é".repeat(10));
    const cut = bytes.subarray(0, bytes.length - 1);
    expect(renderBody(cut, "text/plain", true)).toBe("é".repeat(9));
  });
});

describe("summary and preview", () => {
  test("generic summary: action, Endpoint and Body; null body → no Body detail", async () => {
    expect(approvalSummary("POST", "/v1/send", '{"to":"a@b.c","token":"***"}')).toEqual({
      action: "POST request",
      details: [
        { label: "Endpoint", value: "/v1/send" },
        { label: "Body", value: '{"to":"a@b.c","token":"***"}' },
      ],
    });
    expect(approvalSummary("DELETE", "/x", null)).toEqual({ action: "DELETE request", details: [{ label: "Endpoint", value: "/x" }] });
  });

  test("caps: each detail value 240, the body in the preview 500, the preview 3000", async () => {
    const body = render("word ".repeat(200), "text/plain")!;
    const summary = approvalSummary("POST", `/${"p".repeat(300)}`, body);
    expect(summary.details.map((d) => d.value.length)).toEqual([240, 240]);
    const preview = summaryPreview(summary, body);
    expect(preview).toBe(`POST request\nEndpoint: ${summary.details[0]!.value}\nBody: ${body}`);
    expect(summaryPreview(approvalSummary("GET", "/x", null), null)).toBe("GET request\nEndpoint: /x");
    const huge = summaryPreview({ action: "X", details: Array.from({ length: 20 }, () => ({ label: "L", value: "v".repeat(240) })) }, null);
    expect(huge.length).toBe(3000);
  });
});
