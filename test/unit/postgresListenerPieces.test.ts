// Small pieces of the database listener: which peers count as loopback (the token may be asked without TLS only of
// them), and credgate's own cancel keys.
import { describe, expect, test } from "bun:test";
import { refusalBeforePassword } from "../../src/gateway/postgres/agentAuth.ts";
import { CancelKeys } from "../../src/gateway/postgres/cancelKeys.ts";
import { isLoopbackPeer } from "../../src/gateway/postgres/loopbackPeer.ts";
import { needsTls } from "../../src/gateway/postgres/refusals.ts";

describe("isLoopbackPeer", () => {
  test("127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 are loopback", () => {
    for (const a of ["127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::FFFF:127.9.9.9"]) expect(isLoopbackPeer(a)).toBe(true);
  });
  test("everything else is not, including look-alikes", () => {
    for (const a of ["10.0.0.1", "192.168.1.5", "128.0.0.1", "::2", "::ffff:10.0.0.1", "fe80::1", "127.0.0.1.evil", "1127.0.0.1", "", null, undefined]) {
      expect(isLoopbackPeer(a)).toBe(false);
    }
  });
  test("a password over plain TCP is asked only of a loopback peer", () => {
    const params = new Map([["user", "orders"]]);
    expect(refusalBeforePassword({ params, secure: false, peer: "10.1.2.3" })).toBe(needsTls);
    expect(refusalBeforePassword({ params, secure: true, peer: "10.1.2.3" })).toBeNull();
    expect(refusalBeforePassword({ params, secure: false, peer: "127.0.0.1" })).toBeNull();
  });
});

describe("CancelKeys", () => {
  test("a key finds its session only with both numbers; released, it finds nothing", () => {
    const keys = new CancelKeys();
    const target = { cancel() {} };
    const key = keys.issue(target);
    expect(key.processId).toBeGreaterThan(0);
    expect(keys.find(key.processId, key.secretKey)).toBe(target);
    expect(keys.find(key.processId, key.secretKey ^ 1)).toBeNull();
    expect(keys.find(key.processId + 1, key.secretKey)).toBeNull();
    keys.release(key);
    expect(keys.find(key.processId, key.secretKey)).toBeNull();
    expect(keys.size).toBe(0);
  });
  test("keys are random and distinct", () => {
    const keys = new CancelKeys();
    const issued = Array.from({ length: 1000 }, () => keys.issue({ cancel() {} }));
    expect(new Set(issued.map((k) => k.processId)).size).toBe(1000);
    expect(new Set(issued.map((k) => k.secretKey)).size).toBeGreaterThan(990);
  });
});
