// The gateway CA's certificates (src/crypto/ca.ts, der.ts) as the openssl CLI reads and verifies them: the CA,
// leaves for names and IP literals, and leaves signed by a CA that openssl made (an operator's, or one an
// older credgate wrote).
import { describe, expect, test } from "bun:test";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CertificateAuthority } from "../../src/crypto/ca.ts";
import * as der from "../../src/crypto/der.ts";
import { tempDir } from "../support/tmp.ts";

function openssl(args: string[]): { code: number; out: string } {
  const r = Bun.spawnSync(["openssl", ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

/** The first certificate of a PEM chain. */
const firstPem = (chain: string): string => chain.slice(0, chain.indexOf("-----END CERTIFICATE-----") + 26);

describe("gateway CA certificates", () => {
  test("a new CA and its leaf verify strictly, with the extensions browsers and TLS clients ask for", async () => {
    const dir = tempDir();
    const material = await CertificateAuthority.generate();
    const ca = await CertificateAuthority.load(material);
    const leaf = await ca.issueLeaf(["api.example.test", "127.0.0.1", "::1"]);
    writeFileSync(join(dir, "ca.pem"), material.certPem);
    writeFileSync(join(dir, "leaf.pem"), firstPem(leaf.certPem));
    // The chain handed to TLS is the leaf then the CA.
    expect(leaf.certPem.endsWith(material.certPem)).toBe(true);

    const verify = openssl(["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", join(dir, "ca.pem"), join(dir, "leaf.pem")]);
    expect(verify).toEqual({ code: 0, out: `${join(dir, "leaf.pem")}: OK\n` });

    const caText = openssl(["x509", "-in", join(dir, "ca.pem"), "-noout", "-text"]).out;
    expect(caText).toContain("Subject: CN = credgate Gateway CA, O = credgate");
    expect(caText).toMatch(/Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(caText).toMatch(/Key Usage: critical\s+Certificate Sign, CRL Sign/);
    expect(caText).toContain("ASN1 OID: prime256v1");

    const leafText = openssl(["x509", "-in", join(dir, "leaf.pem"), "-noout", "-text"]).out;
    expect(leafText).toContain("Subject: CN = api.example.test");
    expect(leafText).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(leafText).toMatch(/Key Usage: critical\s+Digital Signature/);
    expect(leafText).toContain("TLS Web Server Authentication");
    expect(leafText).toContain("DNS:api.example.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1");
    const caKeyId = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(caText)![1];
    expect(/Authority Key Identifier:\s+([0-9A-F:]+)/.exec(leafText)![1]).toBe(caKeyId!);

    const cert = new X509Certificate(firstPem(leaf.certPem));
    expect(cert.checkPrivateKey(createPrivateKey(leaf.keyPem))).toBe(true);
    const hours = (new Date(cert.validTo).getTime() - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    expect(new Date(cert.validTo).getTime()).toBe(Math.floor(leaf.notAfter.getTime() / 1000) * 1000);
  });

  test("a CA made by openssl signs leaves that chain to it", async () => {
    const dir = tempDir();
    expect(openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", join(dir, "ca.key"), "-out", join(dir, "ca.pem"), "-subj", "/CN=Operator Root/O=Example Corp", "-days", "30"]).code).toBe(0);
    const ca = await CertificateAuthority.load({ certPem: readFileSync(join(dir, "ca.pem"), "utf8"), keyPem: readFileSync(join(dir, "ca.key"), "utf8") });
    const leaf = await ca.issueLeaf("10.1.2.3");
    writeFileSync(join(dir, "leaf.pem"), firstPem(leaf.certPem));
    expect(openssl(["verify", "-purpose", "sslserver", "-CAfile", join(dir, "ca.pem"), join(dir, "leaf.pem")]).code).toBe(0);
    const leafText = openssl(["x509", "-in", join(dir, "leaf.pem"), "-noout", "-text"]).out;
    // The issuer is the CA's subject byte for byte, and the key identifier is the CA's own.
    expect(leafText).toContain("Issuer: CN = Operator Root, O = Example Corp");
    expect(leafText).toContain("IP Address:10.1.2.3");
    const caText = openssl(["x509", "-in", join(dir, "ca.pem"), "-noout", "-text"]).out;
    expect(/Authority Key Identifier:\s+([0-9A-F:]+)/.exec(leafText)![1]).toBe(/Subject Key Identifier:\s+([0-9A-F:]+)/.exec(caText)![1]!);
  });
});

describe("DER", () => {
  test("lengths, integers, bits and times take their shortest DER forms", () => {
    const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
    expect(hex(der.octetString(new Uint8Array(200))).slice(0, 6)).toBe("0481c8");
    expect(hex(der.octetString(new Uint8Array(300))).slice(0, 8)).toBe("0482012c");
    expect(hex(der.unsignedInteger(Uint8Array.of(0, 0, 0x7f)))).toBe("02017f");
    expect(hex(der.unsignedInteger(Uint8Array.of(0x80)))).toBe("02020080");
    expect(hex(der.smallInteger(0))).toBe("020100");
    expect(hex(der.objectIdentifier("1.2.840.10045.4.3.2"))).toBe("06082a8648ce3d040302");
    expect(hex(der.namedBits([0]))).toBe("03020780");
    expect(hex(der.namedBits([5, 6]))).toBe("03020106");
    expect(Buffer.from(der.time(new Date(Date.UTC(2049, 11, 31, 23, 59, 59)))).toString("latin1")).toBe("\x17\x0d491231235959Z");
    expect(Buffer.from(der.time(new Date(Date.UTC(2050, 0, 1)))).toString("latin1")).toBe("\x18\x0f20500101000000Z");
  });

  test("the reader refuses lengths that run past the end", () => {
    expect(() => der.readElement(Uint8Array.of(0x30, 0x05, 0x01), 0)).toThrow("truncated DER");
    expect(() => der.readElement(Uint8Array.of(0x30, 0x85, 1, 1, 1, 1, 1), 0)).toThrow("unsupported DER length");
  });
});
