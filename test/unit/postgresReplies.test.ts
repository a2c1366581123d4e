// The server side of a relayed database session (gateway/postgres/serverReplies.ts): the server's bytes reach the
// agent unchanged, however the network cuts them, with credgate's own answers (a refused statement) put exactly
// where the agent expects them, and each statement settled by the answer that is its own.
import { describe, expect, test } from "bun:test";
import { ServerReplies, type Insert, type StatementRecord } from "../../src/gateway/postgres/serverReplies.ts";
import { errorResponse, message, readyForQuery } from "../../src/gateway/postgres/wire.ts";

const msg = (type: string, body = "") => message(type, Buffer.from(body));
const Z = (status: string) => readyForQuery(status.charCodeAt(0));
const C = (tag: string) => msg("C", `${tag}\0`);
const D = (text: string) => msg("D", `\0\x01\0\0\0${String.fromCharCode(text.length)}${text}`);
const T = msg("T", "\0\0");
const E = errorResponse("ERROR", "42P01", "relation does not exist");
const cat = (...parts: Uint8Array[]) => Buffer.concat(parts);

function replies() {
  const out: Buffer[] = [];
  const settled: [string, number][] = [];
  const r = new ServerReplies({
    write: (bytes) => (out.push(Buffer.from(bytes)), true),
    settle: (record, status) => settled.push([record.statement, status]),
    readyForQuery,
  });
  return { r, out: () => Buffer.concat(out), settled };
}

const rec = (statement: string): StatementRecord => ({ statement, decision: "allowed", sentAt: 0 });

/** Feeds `server` in pieces cut at every position in turn (and byte by byte), expecting the same result each time. */
function everyCut(server: Buffer, setUp: (r: ServerReplies) => void, expected: Buffer, settled: [string, number][]): void {
  const cuts: number[][] = [[], Array.from({ length: server.length - 1 }, (_, i) => i + 1)];
  for (let i = 1; i < server.length; i++) cuts.push([i]);
  for (let i = 1; i < server.length; i += 3) for (let j = i + 1; j < server.length; j += 5) cuts.push([i, j]);
  for (const cut of cuts) {
    const t = replies();
    setUp(t.r);
    let at = 0;
    for (const c of [...cut, server.length]) {
      t.r.push(server.subarray(at, c));
      at = c;
    }
    expect({ cut, out: t.out().toString("latin1") }).toEqual({ cut, out: expected.toString("latin1") });
    expect(t.settled).toEqual(settled);
  }
}

describe("ServerReplies", () => {
  test("a Query's statements are settled one by one; the ones after an error with it; bytes unchanged", () => {
    const server = cat(T, D("1"), C("SELECT 1"), E, Z("I"));
    everyCut(server, (r) => r.queryForwarded([rec("a"), rec("b"), rec("c")]), server, [
      ["a", 200],
      ["b", 400],
      ["c", 400],
    ]);
  });

  test("a refused Query behind two owed replies is written after the second ReadyForQuery, with the status it reported", () => {
    const server = cat(T, D("1"), C("SELECT 1"), Z("I"), msg("1"), msg("2"), C("BEGIN"), Z("T"));
    const refusal = errorResponse("ERROR", "42501", "no");
    const setUp = (r: ServerReplies) => {
      r.queryForwarded([rec("q")]);
      r.parseForwarded(rec("p"));
      r.extendedForwarded();
      r.executeForwarded();
      r.syncForwarded();
      r.insert([refusal, null] as Insert[]);
    };
    everyCut(server, setUp, cat(server, refusal, Z("T")), [
      ["q", 200],
      ["p", 200],
    ]);
  });

  test("credgate's own Sync: the refusal takes its ReadyForQuery's place (status kept for the agent's Sync); never inside a message", () => {
    const server = cat(msg("1"), msg("2"), D("5"), C("SELECT 1"), Z("T"), msg("A", "\0\0\0\x01chan\0payload\0"));
    const refusal = errorResponse("ERROR", "54000", "too large");
    const setUp = (r: ServerReplies) => {
      r.parseForwarded(rec("p5"));
      r.extendedForwarded();
      r.executeForwarded();
      r.ownSyncForwarded(refusal);
      // The agent's own Sync, answered by credgate.
      r.insert([null]);
    };
    everyCut(server, setUp, cat(msg("1"), msg("2"), D("5"), C("SELECT 1"), refusal, Z("T"), msg("A", "\0\0\0\x01chan\0payload\0")), [["p5", 200]]);
  });

  test("with nothing owed an insert waits for the end of the server message being relayed (a notification cut in two)", () => {
    const t = replies();
    const notification = Buffer.from(msg("A", "\0\0\0\x01chan\0payload\0"));
    t.r.push(notification.subarray(0, 7));
    const refusal = errorResponse("ERROR", "0A000", "no");
    t.r.insert([refusal, null]);
    expect(t.out().length).toBe(7);
    t.r.push(notification.subarray(7));
    expect(t.out()).toEqual(cat(notification, refusal, Z("I")));
    expect(t.r.idle).toBe(true);
  });

  test("a Parse only prepared (no Execute) is settled by the ReadyForQuery; an Execute of an earlier statement adds no row", () => {
    const server = cat(msg("1"), msg("t", "\0\0"), msg("n"), Z("I"), msg("2"), C("SELECT 1"), Z("I"));
    const setUp = (r: ServerReplies) => {
      r.parseForwarded(rec("prepared"));
      r.extendedForwarded();
      r.syncForwarded();
      r.extendedForwarded();
      r.executeForwarded();
      r.syncForwarded();
    };
    everyCut(server, setUp, server, [["prepared", 200]]);
  });

  test("a ParameterStatus is reported whole, however the network cuts it, and passes on unchanged", () => {
    const server = cat(T, D("x"), C("SELECT 1"), msg("S", "client_encoding\0SJIS\0"), msg("S", `application_name\0${"a".repeat(2000)}\0`), Z("I"));
    const cuts = [[], Array.from({ length: 60 }, (_, i) => i + 1)];
    for (let i = 1; i < server.length; i += 7) cuts.push([i]);
    for (const cut of cuts) {
      const out: Buffer[] = [];
      const reported: [string, string][] = [];
      const r = new ServerReplies({ write: (bytes) => (out.push(Buffer.from(bytes)), true), settle: () => {}, readyForQuery, parameterStatus: (n, v) => reported.push([n, v]) });
      r.queryForwarded([rec("a")]);
      let at = 0;
      for (const c of [...cut, server.length]) {
        r.push(server.subarray(at, c));
        at = c;
      }
      expect(Buffer.concat(out).equals(server)).toBe(true);
      // A value past the peek is cut: the settings watched have short values.
      expect(reported.map(([n, v]) => [n, v.length])).toEqual([["client_encoding", 4], ["application_name", 1024 - "application_name".length - 1]]);
      expect(reported[0]).toEqual(["client_encoding", "SJIS"]);
    }
  });
});
