// The database broker's login pieces that need no server: the SCRAM-SHA-256 client against RFC 7677's exchange
// (and a server that cannot prove the password), SASLprep as PostgreSQL applies it, the tls-server-end-point hash
// of real certificates made by openssl for each signature algorithm, and which agent startup settings pass.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { certificateBindingHash, ScramClient, ScramError, tlsServerEndPoint } from "../../src/gateway/postgres/scram.ts";
import { saslprep } from "../../src/gateway/postgres/saslprep.ts";
import { unsafeForStatementChecks, upstreamStartupParams } from "../../src/gateway/postgres/startupParams.ts";
import { tempDir } from "../support/tmp.ts";

describe("SCRAM-SHA-256 client", () => {
  // RFC 7677 §3.
  const serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
  const rfc = () => new ScramClient("pencil", { kind: "none" }, { user: "user", nonce: "rOprNGfwEbeRWgbNEkqO" });

  test("answers RFC 7677's test vector and accepts its server signature", async () => {
    const client = rfc();
    expect(client.mechanism).toBe("SCRAM-SHA-256");
    expect(client.first()).toBe("n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    expect(await client.final(serverFirst)).toBe(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    );
    expect(client.done).toBe(false);
    client.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    expect(client.done).toBe(true);
  });

  test("refuses a server signature made without the password", async () => {
    const client = rfc();
    client.first();
    await client.final(serverFirst);
    expect(() => client.verify("v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")).toThrow("could not prove that it knows the password");
    expect(client.done).toBe(false);
  });

  test("refuses a nonce that does not extend its own, and an unbounded iteration count", async () => {
    const client = rfc();
    client.first();
    await expect(client.final("r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")).rejects.toThrow(ScramError);
    const again = rfc();
    again.first();
    await expect(again.final("r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=2000000000")).rejects.toThrow("SCRAM iterations");
  });

  test("a server's error in the final message is its reason", async () => {
    const client = rfc();
    client.first();
    await client.final(serverFirst);
    expect(() => client.verify("e=channel-bindings-dont-match")).toThrow("channel-bindings-dont-match");
  });

  test("gs2 header and binding input per channel binding", async () => {
    const plus = new ScramClient("pencil", { kind: "tls-server-end-point", data: Uint8Array.of(1, 2, 3) }, { nonce: "abc" });
    expect(plus.mechanism).toBe("SCRAM-SHA-256-PLUS");
    expect(plus.first()).toBe("p=tls-server-end-point,,n=,r=abc");
    const final = await plus.final("r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    const c = /^c=([^,]+),/.exec(final)![1]!;
    expect([...Buffer.from(c, "base64")]).toEqual([...Buffer.from("p=tls-server-end-point,,"), 1, 2, 3]);
    const unused = new ScramClient("pencil", { kind: "unused" }, { nonce: "abc" });
    expect(unused.first()).toBe("y,,n=,r=abc");
    expect(unused.mechanism).toBe("SCRAM-SHA-256");
  });
});

describe("SASLprep", () => {
  test("RFC 4013's examples and PostgreSQL's ASCII rule", () => {
    expect(saslprep("I\u00ADX")).toBe("IX");
    expect(saslprep("user")).toBe("user");
    expect(saslprep("\u00AA")).toBe("a");
    expect(saslprep("\u2168")).toBe("IX");
    expect(saslprep("a\u00A0b")).toBe("a b");
    // ASCII passes as it is, control characters included (the server's fast path).
    expect(saslprep("a\u0007b")).toBe("a\u0007b");
    // Prohibited or broken bidi text: used unprepared.
    expect(saslprep("\u00AA\u0007")).toBe("\u00AA\u0007");
    expect(saslprep("\u0627\u0031")).toBe("\u0627\u0031");
    expect(saslprep("\uFB01x\uE000")).toBe("\uFB01x\uE000");
  });
});

describe("tls-server-end-point", () => {
  const dir = tempDir("credgate-cb-");
  /** A self-signed certificate made by openssl with `args` (key and digest); its DER. */
  const cert = (name: string, args: string): Buffer => {
    const r = spawnSync("sh", ["-c", `openssl req -x509 -nodes -days 1 -subj /CN=${name} ${args} -keyout ${name}.key -out ${name}.pem`], { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(r.stderr);
    return Buffer.from(new X509Certificate(readFileSync(join(dir, `${name}.pem`))).raw);
  };
  const digest = (der: Buffer, hash: string) => new Bun.CryptoHasher(hash as "sha256").update(der).digest();

  test.each([
    ["rsa-sha256", "-newkey rsa:2048 -sha256", "sha256"],
    ["rsa-sha384", "-newkey rsa:2048 -sha384", "sha384"],
    ["rsa-sha512", "-newkey rsa:2048 -sha512", "sha512"],
    ["rsa-sha1", "-newkey rsa:2048 -sha1", "sha256"],
    ["ec-sha256", "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256", "sha256"],
    ["ec-sha384", "-newkey ec -pkeyopt ec_paramgen_curve:P-384 -sha384", "sha384"],
    ["pss-sha384", "-newkey rsa-pss -pkeyopt rsa_keygen_bits:2048 -sha384 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:-1", "sha384"],
  ])("%s binds with %s", (name, args, hash) => {
    const der = cert(name, args);
    expect(certificateBindingHash(der)).toBe(hash);
    expect(Buffer.from(tlsServerEndPoint(der)).equals(Buffer.from(digest(der, hash)))).toBe(true);
  });

  test("a certificate without a signature hash (Ed25519) cannot be bound", () => {
    expect(() => tlsServerEndPoint(cert("ed25519", "-newkey ed25519"))).toThrow("channel binding is not defined");
  });
});

describe("agent startup settings", () => {
  const pass = (agent: Record<string, string>, readOnly = true) => {
    const r = upstreamStartupParams("real_user", "app", agent, readOnly);
    if ("error" in r) throw new Error(r.error);
    return r.params;
  };

  test("the real user and database, credgate's read-only option, display settings of the agent", () => {
    expect(pass({ application_name: "psql", client_encoding: "UTF8", DateStyle: "ISO, MDY", user: "agent_secret", database: "other" })).toEqual({
      user: "real_user",
      database: "app",
      options: "-c default_transaction_read_only=on",
      application_name: "psql",
      client_encoding: "UTF8",
      DateStyle: "ISO, MDY",
    });
    expect(pass({ application_name: "x" }, false)).toEqual({ user: "real_user", database: "app", application_name: "x" });
  });

  test("nothing that could lift read-only or change the session's powers reaches the server", () => {
    const params = pass({
      default_transaction_read_only: "off",
      transaction_read_only: "off",
      Default_Transaction_Read_Only: "off",
      options: "-c default_transaction_read_only=off --session_preload_libraries=evil -c statement_timeout=5s -cDateStyle=German",
      session_preload_libraries: "evil",
      replication: "database",
      role: "postgres",
      session_authorization: "postgres",
      standard_conforming_strings: "off",
      _pq_: "x",
    });
    expect(params).toEqual({ user: "real_user", database: "app", options: "-c default_transaction_read_only=on", statement_timeout: "5s", DateStyle: "German" });
  });

  test("a client encoding that can hide a quote in a multibyte character is refused", () => {
    for (const enc of ["SJIS", "Shift_JIS", "BIG5", "GBK", "GB18030", "UHC", "JOHAB", "win936"]) {
      const r = upstreamStartupParams("u", "d", { client_encoding: enc }, false);
      expect("error" in r && r.error).toContain(`client_encoding ${enc}`);
    }
    for (const enc of ["UTF8", "utf-8", "LATIN1", "WIN1252", "EUC_JP", "SQL_ASCII"]) expect(pass({ client_encoding: enc }).client_encoding).toBe(enc);
  });

  test("server settings that would make the server read statements differently are named", () => {
    expect(unsafeForStatementChecks("standard_conforming_strings", "off")).toBe("standard_conforming_strings is off");
    expect(unsafeForStatementChecks("standard_conforming_strings", "on")).toBeNull();
    expect(unsafeForStatementChecks("client_encoding", "SJIS")).toBe("client_encoding is SJIS");
    expect(unsafeForStatementChecks("client_encoding", "UTF8")).toBeNull();
    expect(unsafeForStatementChecks("DateStyle", "ISO, MDY")).toBeNull();
  });
});
