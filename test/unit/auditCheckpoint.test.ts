// The anchor of the audit chain (docs/operations.md#the-checkpoint), pure: the checkpoint's text and MAC under a
// key derived from the master key, what reading one refuses, the verdict on a linked chain held against the
// database's checkpoint and the data dir's copy, and the lines `credgate audit verify` prints.
import { describe, expect, test } from "bun:test";
import { createHmac, randomBytes } from "node:crypto";
import { chainCheckLine, checkpointMac, formatCheckpoint, judgeChain, readCheckpoint, type Checkpoint } from "../../src/core/auditCheckpoint.ts";
import { Sealer } from "../../src/crypto/seal.ts";
import { chainHash, GENESIS_HASH } from "../../src/services/auditChain.ts";
import { CHECKPOINT_KEY_PURPOSE } from "../../src/services/auditCheckpoints.ts";

const key = randomBytes(32);
const h = (c: string) => c.repeat(64);
const cp = (seq: number, hash: string): Checkpoint => ({ seq, hash });
const linked = (events: number, hash: string, id: string | null = events === 0 ? null : `e${events}`) => ({ kind: "linked" as const, events, head: { seq: events, hash, id } });

describe("the checkpoint's text and MAC", () => {
  test("ac1:<seq>:<hash>:<hex HMAC-SHA256 of 'credgate audit checkpoint v1:<seq>:<hash>'>", () => {
    const text = formatCheckpoint(key, cp(7, h("a")));
    const mac = createHmac("sha256", key).update(`credgate audit checkpoint v1:7:${h("a")}`).digest("hex");
    expect(text).toBe(`ac1:7:${h("a")}:${mac}`);
    expect(checkpointMac(key, cp(7, h("a")))).toBe(mac);
    expect(readCheckpoint(key, text)).toEqual(cp(7, h("a")));
    expect(readCheckpoint(key, `${text}\n`)).toEqual(cp(7, h("a")));
    expect(readCheckpoint(key, formatCheckpoint(key, cp(0, GENESIS_HASH)))).toEqual(cp(0, GENESIS_HASH));
  });

  test("the key is derived from the master key for this purpose alone", () => {
    const master = randomBytes(32);
    const derived = new Sealer(master).deriveKey(CHECKPOINT_KEY_PURPOSE);
    expect(derived.length).toBe(32);
    expect(derived.equals(master)).toBe(false);
    expect(derived.equals(new Sealer(master).deriveKey("oauth-state"))).toBe(false);
  });

  test("refused: another key, an edited seq or hash (the MAC no longer matches), garbage, absent", () => {
    const text = formatCheckpoint(key, cp(3, h("b")));
    const [v, seq, hash, mac] = text.split(":") as [string, string, string, string];
    expect(readCheckpoint(randomBytes(32), text)).toBeNull();
    expect(readCheckpoint(key, [v, "4", hash, mac].join(":"))).toBeNull();
    expect(readCheckpoint(key, [v, seq, h("c"), mac].join(":"))).toBeNull();
    // Recomputing the plain parts is what anyone with the database can do; the MAC is what they cannot.
    expect(readCheckpoint(key, [v, "4", hash, createHmac("sha256", "guess").update(`credgate audit checkpoint v1:4:${hash}`).digest("hex")].join(":"))).toBeNull();
    for (const bad of ["", "ac1", "v1:3:" + h("b") + ":" + mac, `ac1:-3:${hash}:${mac}`, `ac1:03:${hash}:${mac}`, `ac1:3:${hash.toUpperCase()}:${mac}`, `ac1:3:${hash}:${mac}:x`, `ac1:3:${hash}:zz`]) {
      expect(readCheckpoint(key, bad)).toBeNull();
    }
    expect(readCheckpoint(key, null)).toBeNull();
    expect(readCheckpoint(key, undefined)).toBeNull();
  });
});

describe("judgeChain: the newest event against the checkpoints", () => {
  test("the database's checkpoint at the head: intact (PostgreSQL: no copy beside)", () => {
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")))).toEqual({ intact: true, events: 3 });
    expect(judgeChain(linked(0, GENESIS_HASH), cp(0, GENESIS_HASH))).toEqual({ intact: true, events: 0 });
  });

  test("the checkpoint further than the last event: that many events missing after it (or after genesis)", () => {
    expect(judgeChain(linked(3, h("a")), cp(5, h("f")))).toEqual({ intact: false, events: 3, missing: 2, after: "e3" });
    expect(judgeChain(linked(0, GENESIS_HASH), cp(4, h("f")))).toEqual({ intact: false, events: 0, missing: 4, after: null });
  });

  test("absent or forged (null), another hash at the same seq (rewritten), or behind the head (stale): mismatch", () => {
    const mismatch = (events: number) => ({ intact: false, events, checkpointMismatch: true }) as const;
    expect(judgeChain(linked(3, h("a")), null)).toEqual(mismatch(3));
    expect(judgeChain(linked(0, GENESIS_HASH), null)).toEqual(mismatch(0));
    expect(judgeChain(linked(3, h("a")), cp(3, h("b")))).toEqual(mismatch(3));
    expect(judgeChain(linked(3, h("a")), cp(2, h("c")))).toEqual(mismatch(3));
  });

  test("the copy beside (SQLite): at the head or behind it on the chain is fine; ahead of it, off the chain, absent or forged is not", () => {
    const mismatch = { intact: false, events: 3, checkpointMismatch: true } as const;
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")), cp(3, h("a")), true)).toEqual({ intact: true, events: 3 });
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")), cp(2, h("c")), true)).toEqual({ intact: true, events: 3 });
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")), cp(2, h("c")), false)).toEqual(mismatch);
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")), cp(3, h("b")), true)).toEqual(mismatch);
    // An older database put back: its own checkpoint matches it, the copy beside names a later head.
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")), cp(5, h("e")), false)).toEqual(mismatch);
    expect(judgeChain(linked(3, h("a")), cp(3, h("a")), null)).toEqual(mismatch);
  });
});

describe("the lines audit verify prints", () => {
  test("intact, broken at an event, a cut tail, after genesis, a checkpoint that does not match", () => {
    expect(chainCheckLine({ intact: true, events: 12 })).toBe("audit chain intact: 12 events");
    expect(chainCheckLine({ intact: false, events: 1, brokenAt: "5b0e" })).toBe("audit chain broken at 5b0e");
    expect(chainCheckLine({ intact: false, events: 3, missing: 2, after: "e3" })).toBe("audit chain broken: 2 events missing after e3");
    expect(chainCheckLine({ intact: false, events: 0, missing: 4, after: null })).toBe("audit chain broken: 4 events missing after genesis");
    expect(chainCheckLine({ intact: false, events: 3, checkpointMismatch: true })).toBe("audit chain broken: checkpoint does not match");
  });

  test("the chain hash the checkpoint names is the event's", () => {
    const event = { id: "e1", at: "2025-01-01T00:00:00.000Z", organizationId: null, partnerId: null, projectId: null, actor: { kind: "cli", id: "root", email: null }, action: "credgate x", targetType: "t", targetId: null, address: null, changes: {} };
    const head = chainHash(GENESIS_HASH, event);
    expect(judgeChain(linked(1, head, "e1"), readCheckpoint(key, formatCheckpoint(key, cp(1, head))))).toEqual({ intact: true, events: 1 });
  });
});
