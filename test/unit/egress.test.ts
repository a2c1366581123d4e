// The egress guard's address rules (docs/guards.md#egress-guard) and the echo guard's stream redactor, as pure functions.
import { describe, expect, test } from "bun:test";
import { egressAllowed, isLocalAddress, parseAddress, parseCidr, type EgressRules } from "../../src/core/addressRules.ts";
import { echoNeedles, REDACTED, StreamRedactor } from "../../src/core/echoRedaction.ts";

const selfHosted: EgressRules = { mode: "self-hosted", allow: [], deny: [] };
const cloud: EgressRules = { mode: "cloud", allow: [], deny: [] };
const addr = (s: string) => parseAddress(s)!;

describe("address forms are normalised first", () => {
  test.each([
    ["169.254.169.254", "169.254.169.254"],
    ["2852039166", "169.254.169.254"],
    ["0xa9fea9fe", "169.254.169.254"],
    ["0251.0376.0251.0376", "169.254.169.254"],
    ["0xa9.0xfe.0xa9.0xfe", "169.254.169.254"],
    ["169.254.43518", "169.254.169.254"],
    ["127.1", "127.0.0.1"],
    // As URL parsers read it: an empty hex number is 0.
    ["0x", "0.0.0.0"],
    ["[::ffff:169.254.169.254]", "169.254.169.254"],
    ["::ffff:a9fe:a9fe", "169.254.169.254"],
    ["[::1]", "::1"],
    ["FE80::1%eth0", "fe80::1"],
  ])("%s → %s", (input, text) => {
    expect(parseAddress(input)?.text).toBe(text);
  });

  test.each(["example.com", "256.1.1.1", "1.2.3.4.5", "08.1.1.1", "::g", "1::2::3", ""])("%s is not an address", (input) => {
    expect(parseAddress(input)).toBeNull();
  });
});

describe("which addresses may be dialled", () => {
  test("always refused: link-local (metadata), unspecified, multicast, broadcast", () => {
    for (const a of ["169.254.169.254", "169.254.0.1", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "255.255.255.255", "ff02::1"]) {
      expect(egressAllowed(addr(a), selfHosted)).toBe(false);
      expect(egressAllowed(addr(a), cloud)).toBe(false);
    }
  });

  test("loopback, RFC 1918, CGNAT and ULA: allowed self-hosted, refused in cloud mode", () => {
    for (const a of ["127.0.0.1", "::1", "10.0.0.1", "172.16.5.5", "192.168.1.1", "100.64.0.1", "fd00::1"]) {
      expect(egressAllowed(addr(a), selfHosted)).toBe(true);
      expect(egressAllowed(addr(a), cloud)).toBe(false);
    }
    expect(egressAllowed(addr("172.32.0.1"), cloud)).toBe(true);
    expect(egressAllowed(addr("203.0.113.7"), cloud)).toBe(true);
  });

  test("an explicit allow beats the defaults; an explicit deny beats everything", () => {
    const rules: EgressRules = { mode: "cloud", allow: [parseCidr("169.254.169.254/32")!, parseCidr("10.0.0.0/8")!], deny: [parseCidr("10.9.0.0/16")!] };
    expect(egressAllowed(addr("169.254.169.254"), rules)).toBe(true);
    expect(egressAllowed(addr("10.1.1.1"), rules)).toBe(true);
    expect(egressAllowed(addr("10.9.1.1"), rules)).toBe(false);
    expect(egressAllowed(addr("8.8.8.8"), { ...selfHosted, deny: [parseCidr("0.0.0.0/0")!] })).toBe(false);
  });

  test("CIDR parsing refuses what is not a range", () => {
    for (const bad of ["10.0.0.0/33", "::/129", "example.com/8", "10.0.0.0/x"]) expect(parseCidr(bad)).toBeNull();
    expect(parseCidr("fd00::/8")?.prefix).toBe(8);
  });

  test("local addresses for the cleartext rule: loopback and private, not CGNAT or public", () => {
    expect(isLocalAddress(addr("127.0.0.1"))).toBe(true);
    expect(isLocalAddress(addr("192.168.0.10"))).toBe(true);
    expect(isLocalAddress(addr("fd12::1"))).toBe(true);
    expect(isLocalAddress(addr("100.64.0.1"))).toBe(false);
    expect(isLocalAddress(addr("203.0.113.7"))).toBe(false);
  });
});

describe("stream redactor", () => {
  const needleBytes = (values: string[]) => echoNeedles(values)!;
  const value = "sk-live-0123456789";
  const run = (chunks: string[]) => {
    const r = new StreamRedactor(needleBytes([value]));
    const out: string[] = [];
    for (const c of chunks) out.push(Buffer.from(r.push(Buffer.from(c))).toString());
    out.push(Buffer.from(r.end()).toString());
    return out;
  };

  test("a value inside one chunk, and split at every possible point across two, is replaced", () => {
    expect(run([`a ${value} b`]).join("")).toBe(`a ${REDACTED} b`);
    for (let cut = 1; cut < value.length; cut++) {
      expect(run([`a ${value.slice(0, cut)}`, `${value.slice(cut)} b`]).join("")).toBe(`a ${REDACTED} b`);
    }
  });

  test("base64, hex, percent-encoded and JSON forms too; values under 8 characters are left alone", () => {
    const pair = "user:p@ss/word<&>";
    const r = new StreamRedactor(needleBytes([pair, "short"]));
    const forms = [
      Buffer.from(pair).toString("base64"),
      Buffer.from(pair).toString("base64url"),
      Buffer.from(pair).toString("hex"),
      Buffer.from(pair).toString("hex").toUpperCase(),
      encodeURIComponent(pair),
      "user:p@ss\\/word\\u003c\\u0026\\u003e",
    ];
    const text = `${forms.join(" ")} short`;
    expect(Buffer.from(r.push(Buffer.from(text))).toString() + Buffer.from(r.end()).toString()).toBe(`${forms.map(() => REDACTED).join(" ")} short`);
  });

  test("nothing that cannot start a value is held back (an SSE event goes on at once)", () => {
    const [first] = run(["data: hello\n\n"]);
    expect(first).toBe("data: hello\n\n");
    const r = new StreamRedactor(needleBytes([value]));
    expect(Buffer.from(r.push(Buffer.from("data: sk-li"))).toString()).toBe("data: ");
    expect(Buffer.from(r.push(Buffer.from("ght\n\n"))).toString()).toBe("sk-light\n\n");
  });
});
