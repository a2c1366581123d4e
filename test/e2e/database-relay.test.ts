// The database listener and session relay end to end (docs/databases.md#the-relay): the real credgate process, the
// test PostgreSQL server behind it (test/support/databaseServer.ts), and clients that show the relay's own work —
// a raw v3 client (exact bytes, pipelines mixing protocols, headers cut across writes, malformed packets) beside
// psql and node's pg: TLS and loopback connections, every refusal before a session, refusals kept in the place of
// the answer they replace, cancel with credgate's key, COPY both ways with backpressure, Terminate, and stopping.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as net from "node:net";
import { startBroker, type Broker } from "../support/databaseBroker.ts";
import { pgClient, porsager, psql } from "../support/databaseClients.ts";
import { eventually } from "../support/gateway.ts";
import { fe, RawPg, types, type Seen } from "../support/pgRawClient.ts";

let b: Broker;
const RELAY_DB = "relay";
const S = { scram: "relay_scram", md5Plain: "relay_md5_plain", otherOnly: "relay_other_only", blocked: "relay_blocked" };

beforeAll(async () => {
  b = await startBroker();
  await b.secret(S.scram, { user: "scram" });
  await b.secret(S.md5Plain, { user: "md5", tls: "off" });
  await b.secret(S.otherOnly, { user: "scram", databases: ["other"] });
  await b.secret(S.blocked, { user: "md5", tls: "off", writes: "block" });
  // The server is shared by the test process's suites: what this one writes goes to a database of its own.
  await b.db.createDatabase(RELAY_DB);
});

afterAll(async () => {
  await b?.stop();
});

const login = (secret: string, opts: { ca?: boolean; params?: Record<string, string>; token?: string } = {}) =>
  RawPg.login(b.dbPort, { user: secret, database: RELAY_DB, ...opts.params }, opts.token ?? b.token, opts.ca ? b.ca.pem : undefined);

/** What the agent is told when a connection is refused: the FATAL ErrorResponse, then the connection closes. */
async function refusal(client: RawPg): Promise<Seen> {
  const [error] = await client.until((s) => s.type === "E");
  expect(await client.closedWithin()).toBe(true);
  return error!;
}

describe("connecting", () => {
  test("over TLS (SSLRequest → S, a leaf of the gateway CA) and from loopback without TLS; credgate's own BackendKeyData", async () => {
    for (const ca of [true, false]) {
      const { client, startup, key } = await login(S.scram, { ca });
      // AuthenticationOk, the server's parameters, credgate's key, ReadyForQuery(I).
      expect(startup[0]).toEqual({ type: "R" });
      expect(startup.filter((s) => s.type === "S").length).toBeGreaterThan(5);
      expect(startup.at(-1)).toEqual({ type: "Z", text: "I" });
      client.send(fe.query("SELECT pg_backend_pid()::text, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())::text"));
      const reply = await client.readies(1);
      expect(types(reply)).toBe("TDCZ");
      // The agent never learns the server's process id (nor its key).
      expect(reply[1]!.text).not.toBe(String(key.processId));
      expect(key.processId).toBeGreaterThan(0);
      client.send(fe.terminate());
      expect(await client.closedWithin()).toBe(true);
    }
    // The start line says where the listener is.
    expect(b.cg.output()).toContain(`"dbPort":${b.dbPort}`);
    const r = await psql(b.url(S.scram, { sslmode: "verify-full" }), "SELECT 40 + 2");
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("42");
  });

  test("a query sent with the password, before the session is ready, is relayed once it is", async () => {
    const client = await RawPg.open(b.dbPort);
    client.send(fe.startup({ user: S.md5Plain, database: RELAY_DB }));
    await client.until((s) => s.type === "R");
    client.send(fe.password(b.token), fe.query("SELECT 13"));
    const seen = await client.readies(2);
    expect(types(seen.slice(-4))).toBe("TDCZ");
    expect(seen.at(-2)).toEqual({ type: "C", text: "SELECT 1" });
    expect(seen.find((s) => s.type === "D")!.text).toBe("13");
    client.close();
  });

  test("GSSENCRequest → N, and the client goes on with SSLRequest", async () => {
    const client = await RawPg.open(b.dbPort);
    client.send(fe.gssencRequest());
    expect(await client.byte()).toBe("N");
    await client.startTls(b.ca.pem);
    client.send(fe.startup({ user: S.scram, database: "app" }));
    expect(types(await client.until((s) => s.type === "R"))).toBe("R");
    client.send(fe.password(b.token));
    expect((await client.until((s) => s.type === "Z")).at(-1)).toEqual({ type: "Z", text: "I" });
    client.close();
  });

  test("a protocol 3.2 client with _pq_ options is told 3.0 and no options (NegotiateProtocolVersion), and goes on", async () => {
    const client = await RawPg.open(b.dbPort);
    client.send(fe.startup({ user: S.scram, database: "app", "_pq_.wishful": "1" }, 0x30002));
    const first = await client.until((s) => s.type === "R");
    expect(first).toEqual([{ type: "v", text: "3.0 _pq_.wishful" }, { type: "R" }]);
    client.send(fe.password(b.token));
    expect((await client.until((s) => s.type === "Z")).at(-1)!.type).toBe("Z");
    client.close();
  });
});

describe("refused before a session: FATAL with the contract's SQLSTATE and message, then closed", () => {
  const cases: [string, () => Promise<RawPg>, string, string][] = [
    [
      "a wrong agent token",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ user: S.scram, database: "app" }));
        await c.until((s) => s.type === "R");
        c.send(fe.password("agt_not-a-token"));
        return c;
      },
      "28P01",
      "credgate: invalid agent token",
    ],
    [
      "an unknown database secret",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ user: "no_such_secret", database: "app" }));
        await c.until((s) => s.type === "R");
        c.send(fe.password(b.token));
        return c;
      },
      "28000",
      'credgate: no database credential "no_such_secret" for this agent',
    ],
    [
      "a database outside the secret's databases",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ user: S.otherOnly, database: "app" }));
        await c.until((s) => s.type === "R");
        c.send(fe.password(b.token));
        return c;
      },
      "42501",
      'credgate: database "app" is not allowed for this credential',
    ],
    [
      "no user in the startup packet",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ database: "app" }));
        return c;
      },
      "28000",
      "credgate: no user name in the startup packet: the user is the name of a database secret",
    ],
    [
      "protocol 4.0",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ user: S.scram }, 0x40000));
        return c;
      },
      "0A000",
      "credgate: unsupported frontend protocol 4.0: only protocol 3 is supported",
    ],
    [
      "a startup packet longer than PostgreSQL's 10,000 bytes",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ user: S.scram, application_name: "x".repeat(10_000) }));
        return c;
      },
      "08P01",
      "credgate: invalid length of startup packet",
    ],
    [
      "bytes after an SSLRequest, before the TLS handshake (CVE-2021-23214)",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.sslRequest(), fe.startup({ user: S.scram }));
        return c;
      },
      "08P01",
      "credgate: unexpected data after SSLRequest",
    ],
    [
      "a typed message instead of the password",
      async () => {
        const c = await RawPg.open(b.dbPort);
        c.send(fe.startup({ user: S.scram, database: "app" }));
        await c.until((s) => s.type === "R");
        c.send(fe.query("SELECT 1"));
        return c;
      },
      "08P01",
      'credgate: expected a password message, got message type "Q"',
    ],
  ];
  for (const [what, connect, code, message] of cases) {
    test(what, async () => {
      const error = await refusal(await connect());
      expect(error).toEqual({ type: "E", severity: "FATAL", code, message });
    });
  }

  test("pg and psql show the same refusals", async () => {
    const err = await pgClient({ ...b.pgConfig(S.scram), password: "agt_wrong" }).catch((e: { code: string; message: string }) => e);
    expect(err).toMatchObject({ code: "28P01", message: "credgate: invalid agent token" });
    const r = await psql(b.url(S.otherOnly), "SELECT 1");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('credgate: database "app" is not allowed for this credential');
  });

  test("a CancelRequest with a key no session has is ignored; the listener goes on serving", async () => {
    const c = await RawPg.open(b.dbPort);
    c.send(fe.cancelRequest(12345, 67890));
    expect(await c.closedWithin()).toBe(true);
    const { client } = await login(S.md5Plain);
    client.send(fe.query("SELECT 1"));
    expect(types(await client.readies(1))).toBe("TDCZ");
    client.close();
  });
});

describe("the relay", () => {
  test("a refused message in the middle of a pipeline keeps its place: the answers before it, its error, the answers after", async () => {
    const { client } = await login(S.md5Plain);
    client.send(
      fe.query("SELECT 1"),
      fe.parse("", "SELECT 2"),
      fe.bind("", ""),
      fe.execute(""),
      fe.sync(),
      // A FunctionCall (here: upper('x'), by the oid of upper(text)) is refused: SQL reaches the server only as statements credgate judges.
      fe.functionCall(871, ["x"]),
      fe.query("SELECT 3"),
    );
    const seen = await client.readies(4);
    expect(types(seen)).toBe("TDCZ" + "12DCZ" + "EZ" + "TDCZ");
    expect(seen.filter((s) => s.type === "D").map((s) => s.text)).toEqual(["1", "2", "3"]);
    expect(seen[9]).toMatchObject({ code: "0A000", severity: "ERROR" });
    expect(seen[9]!.message).toContain("function call message is not supported");
    client.close();
  });

  test("porsager's pipeline (Parse/Bind/Describe/Execute/Sync per query, all sent at once) with a refused write in the middle: every query gets its own answer", async () => {
    const sql = porsager(b.url(S.blocked, { sslmode: "disable", database: RELAY_DB }));
    try {
      await sql`SELECT 1`; // connected before the burst
      const tag = crypto.randomUUID();
      const results = await Promise.allSettled([
        sql`SELECT ${"a-" + tag}::text AS v`,
        sql`SELECT ${"b-" + tag}::text AS v`,
        sql`INSERT INTO items (name) VALUES (${tag})`,
        sql`SELECT ${"c-" + tag}::text AS v`,
        sql.unsafe("SELECT 1; DELETE FROM items"),
        sql`SELECT ${"d-" + tag}::text AS v`,
      ]);
      expect(results.map((r) => (r.status === "fulfilled" ? (r.value as unknown as { v: string }[])[0]?.v : (r.reason as { code: string }).code))).toEqual([
        `a-${tag}`,
        `b-${tag}`,
        "42501",
        `c-${tag}`,
        "42501",
        `d-${tag}`,
      ]);
      expect(await b.db.admin(`SELECT 1 FROM items WHERE name = '${tag}'`, RELAY_DB)).toHaveLength(0);
    } finally {
      await sql.end();
    }
  });

  test("one log row per statement: a Query's statements as each is answered (200, the error 400, those never run 400), a refused one 403, one left without an answer 400", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const { client } = await login(S.blocked);
    client.send(fe.query(`SELECT '${tag}-1'; SELECT 1/0 AS "${tag}-2"; SELECT '${tag}-3'`));
    expect(types(await client.readies(1))).toBe("TDCEZ");
    client.send(fe.parse("", `SELECT 1/0 AS "${tag}-4"`), fe.bind("", ""), fe.execute(""), fe.sync());
    // 1/0 of constants fails when the plan is made, at Bind.
    expect(types(await client.readies(1))).toBe("1EZ");
    client.send(fe.query(`DELETE FROM items WHERE name = '${tag}-5'`));
    expect(types(await client.readies(1))).toBe("EZ");
    // Sent, and the connection gone before its answer: still a row.
    client.send(fe.query(`SELECT pg_sleep(5), '${tag}-6'`));
    await eventually(async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE query LIKE '%${tag}-6%' AND state = 'active' AND pid <> pg_backend_pid()`)).length === 1);
    client.close();
    const rows = await b.logs((r) => r.method === "SQL" && r.path.includes(tag), 6);
    const byPath = Object.fromEntries(rows.map((r) => [r.path, [r.status, r.decision]]));
    expect(byPath).toEqual({
      [`SELECT '${tag}-1'`]: [200, "allowed"],
      [`SELECT 1/0 AS "${tag}-2"`]: [400, "allowed"],
      [`SELECT '${tag}-3'`]: [400, "allowed"],
      [`SELECT 1/0 AS "${tag}-4"`]: [400, "allowed"],
      [`DELETE FROM items WHERE name = '${tag}-5'`]: [403, "blocked"],
      [`SELECT pg_sleep(5), '${tag}-6'`]: [400, "allowed"],
    });
  });

  const huge = "SELECT '" + "x".repeat(16 * 1024 * 1024) + "'";

  test("a refused Parse first in its batch: its error at once, the messages up to Sync dropped, Sync answered with ReadyForQuery", async () => {
    const { client } = await login(S.md5Plain);
    client.send(fe.query("BEGIN"));
    await client.readies(1);
    client.send(fe.parse("", huge), fe.bind("", ""), fe.execute(""), fe.sync(), fe.query("SELECT 4"));
    const seen = await client.readies(2);
    expect(types(seen)).toBe("EZ" + "TDCZ");
    expect(seen[0]).toMatchObject({ code: "54000", severity: "ERROR" });
    // The transaction status the server last reported: still in the transaction.
    expect(seen[1]).toEqual({ type: "Z", text: "T" });
    expect(seen[3]!.text).toBe("4");
    client.close();
  });

  test("a refused Parse after messages already sent without a Sync: their answers first, then the error, then ReadyForQuery", async () => {
    const { client } = await login(S.md5Plain);
    client.send(fe.parse("", "SELECT 5"), fe.bind("", ""), fe.execute(""), fe.parse("", huge), fe.bind("", ""), fe.execute(""), fe.sync(), fe.query("SELECT 6"));
    const seen = await client.readies(2);
    expect(types(seen)).toBe("12DCEZ" + "TDCZ");
    expect(seen[2]!.text).toBe("5");
    expect(seen[4]).toMatchObject({ code: "54000" });
    expect(seen[7]!.text).toBe("6");
    client.close();
  });

  test("a client that waits after a Flush (no Sync) hears the refusal of its Parse at once, behind the answers before it", async () => {
    const { client } = await login(S.md5Plain);
    client.send(fe.parse("", "SELECT 11"), fe.bind("", ""), fe.execute(""), fe.parse("", huge), fe.bind("", ""), fe.execute(""), fe.flush());
    const seen = await client.until((s) => s.type === "E");
    expect(types(seen)).toBe("12DCE");
    expect(seen[2]!.text).toBe("11");
    expect(seen[4]).toMatchObject({ code: "54000", severity: "ERROR" });
    client.send(fe.sync(), fe.query("SELECT 12"));
    const rest = await client.readies(2);
    expect(types(rest)).toBe("Z" + "TDCZ");
    expect(rest[0]).toEqual({ type: "Z", text: "I" });
    expect(rest[2]!.text).toBe("12");
    client.close();
  });

  test("a statement of a megabyte is read whole across reads, judged and sent; a prepare answered after Flush, run after", async () => {
    const { client } = await login(S.md5Plain);
    client.send(fe.query(`SELECT length('${"y".repeat(1024 * 1024)}')::text`));
    expect((await client.readies(1)).find((s) => s.type === "D")!.text).toBe(String(1024 * 1024));
    const describeStatement = Buffer.from(fe.describePortal("s1"));
    describeStatement[5] = 0x53; // 'S': describe the statement, not a portal
    client.send(fe.parse("s1", "SELECT $1::int + 1"), describeStatement, fe.flush());
    expect(types(await client.until((s) => s.type === "T"))).toBe("1tT");
    client.send(fe.bind("", "s1", ["41"]), fe.execute(""), fe.sync());
    const run = await client.readies(1);
    expect(types(run)).toBe("2DCZ");
    expect(run[1]!.text).toBe("42");
    client.close();
  });

  test("messages cut anywhere — a header across two writes, one byte at a time — relay the same", async () => {
    const { client } = await login(S.md5Plain);
    const bytes = Buffer.concat([fe.query("SELECT 7"), fe.parse("", "SELECT 8"), fe.bind("", ""), fe.execute(""), fe.sync(), fe.functionCall(871, ["x"]), fe.query("SELECT 9")]);
    (client.socket as net.Socket).setNoDelay(true);
    for (let i = 0; i < bytes.length; i++) {
      client.socket.write(bytes.subarray(i, i + 1));
      await new Promise((r) => setImmediate(r));
    }
    const seen = await client.readies(4);
    expect(types(seen)).toBe("TDCZ" + "12DCZ" + "EZ" + "TDCZ");
    expect(seen.filter((s) => s.type === "D").map((s) => s.text)).toEqual(["7", "8", "9"]);
    client.close();
  });

  test("a message length below 4 is a broken stream: FATAL 08P01, the session closed", async () => {
    const { client } = await login(S.md5Plain);
    client.send(Uint8Array.of(0x51, 0, 0, 0, 2));
    const error = await refusal(client);
    expect(error).toMatchObject({ severity: "FATAL", code: "08P01" });
  });

  test("CancelRequest with credgate's key cancels the running statement; a wrong key does not; the session goes on", async () => {
    const tag = `relay-cancel-${crypto.randomUUID()}`;
    const { client, key } = await login(S.scram, { params: { application_name: tag } });
    client.send(fe.query("SELECT pg_sleep(60)"));
    const running = () => b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${tag}' AND state = 'active'`);
    expect(await eventually(async () => (await running()).length === 1)).toBe(true);
    const wrong = await RawPg.open(b.dbPort);
    wrong.send(fe.cancelRequest(key.processId, key.secretKey ^ 1));
    expect(await wrong.closedWithin()).toBe(true);
    const right = await RawPg.open(b.dbPort);
    right.send(fe.cancelRequest(key.processId, key.secretKey));
    expect(await right.closedWithin()).toBe(true);
    const seen = await client.readies(1);
    expect(seen.find((s) => s.type === "E")).toMatchObject({ code: "57014" });
    // Only the right key's cancel reached the server: one cancel, not two, and the session goes on.
    client.send(fe.query("SELECT 10"));
    expect((await client.readies(1)).find((s) => s.type === "D")!.text).toBe("10");
    client.close();
  });

  test("COPY in and out through the relay, byte for byte (node pg raw COPY protocol and psql)", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const { client } = await login(S.scram);
    client.send(fe.query("COPY items (name, n) FROM STDIN"));
    expect(types(await client.until((s) => s.type === "G"))).toBe("G");
    const rows = Array.from({ length: 20_000 }, (_, i) => `copy-${tag}\t${i}\n`);
    for (let i = 0; i < rows.length; i += 1000) client.send(fe.copyData(rows.slice(i, i + 1000).join("")));
    client.send(fe.copyDone());
    const done = await client.readies(1);
    expect(done.find((s) => s.type === "C")!.text).toBe("COPY 20000");
    const out = await psql(b.url(S.scram, { sslmode: "disable", database: RELAY_DB }), `COPY (SELECT name, n FROM items WHERE name = 'copy-${tag}' ORDER BY n) TO STDOUT`);
    expect(out.stdout).toBe(rows.join(""));
    client.close();
  });

  test("a large COPY TO STDOUT to an agent that does not read: credgate holds back the server instead of buffering (RSS bounded)", async () => {
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${b.cg.proc.pid}/status`, "utf8"))![1]) * 1024;
    const { client } = await login(S.md5Plain);
    const before = rss();
    // About 400 MB of rows; the agent reads nothing for a while.
    client.socket.pause();
    client.send(fe.query("COPY (SELECT repeat('x', 1000) FROM generate_series(1, 400000)) TO STDOUT"));
    const tag = "COPY 400000";
    // Wait until the pipe is full: the server is blocked on its socket (wait_event ClientWrite).
    expect(
      await eventually(async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT repeat%' AND wait_event = 'ClientWrite'`)).length === 1, 20_000),
    ).toBe(true);
    expect(rss() - before).toBeLessThan(100 * 1024 * 1024);
    // Then reads it all: every row arrives.
    let rowsSeen = 0;
    client.socket.resume();
    const end = await client.until((s) => {
      if (s.type === "d") rowsSeen++;
      return s.type === "Z";
    }, 120_000);
    expect(end.find((s) => s.type === "C")!.text).toBe(tag);
    expect(end.filter((s) => s.type === "d").length).toBe(400_000);
    void rowsSeen;
    client.close();
  }, 180_000);

  test("Terminate ends the server's session and closes the agent's connection", async () => {
    const tag = `relay-terminate-${crypto.randomUUID()}`;
    const { client } = await login(S.scram, { ca: true, params: { application_name: tag } });
    const sessions = async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${tag}'`)).length;
    expect(await sessions()).toBe(1);
    client.send(fe.terminate());
    expect(await client.closedWithin()).toBe(true);
    expect(await eventually(async () => (await sessions()) === 0)).toBe(true);
  });

  test("the agent going away ends the server's session", async () => {
    const tag = `relay-gone-${crypto.randomUUID()}`;
    const { client } = await login(S.md5Plain, { params: { application_name: tag } });
    client.close();
    expect(await eventually(async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${tag}'`)).length === 0)).toBe(true);
  });
});

describe("a running session follows what changes (checked before each statement)", () => {
  const ask = async (client: RawPg, sql: string) => {
    client.send(fe.query(sql));
    return client.until((s) => s.type === "Z" || (s.type === "E" && s.severity === "FATAL"));
  };

  test("the agent's token regenerated: the next statement gets FATAL 28P01 and the session ends, on the server too", async () => {
    const agent = await b.agent(`relay-regen-${crypto.randomUUID().slice(0, 8)}`);
    const tag = `relay-regen-${crypto.randomUUID()}`;
    const { client } = await RawPg.login(b.dbPort, { user: S.md5Plain, database: "app", application_name: tag }, agent.token);
    expect(types(await ask(client, "SELECT 1"))).toBe("TDCZ");
    expect((await b.cg.api("POST", `/v1/agents/${agent.id}/regenerate-token`)).status).toBe(200);
    const seen = await ask(client, "SELECT 2");
    expect(seen).toEqual([{ type: "E", severity: "FATAL", code: "28P01", message: "credgate: invalid agent token" }]);
    expect(await client.closedWithin()).toBe(true);
    expect(await eventually(async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${tag}'`)).length === 0)).toBe(true);
  });

  test("revoked while an earlier statement runs: its answer first, then the FATAL, then the connection closes", async () => {
    const agent = await b.agent(`relay-regen2-${crypto.randomUUID().slice(0, 8)}`);
    const { client } = await RawPg.login(b.dbPort, { user: S.md5Plain, database: RELAY_DB }, agent.token);
    client.send(fe.query("SELECT pg_sleep(1)::text"));
    expect((await b.cg.api("POST", `/v1/agents/${agent.id}/regenerate-token`)).status).toBe(200);
    client.send(fe.query("SELECT 2"));
    const seen = await client.until((s) => s.type === "E");
    expect(types(seen)).toBe("TDCZE");
    expect(seen.at(-1)).toEqual({ type: "E", severity: "FATAL", code: "28P01", message: "credgate: invalid agent token" });
    expect(await client.closedWithin()).toBe(true);
  });

  test("the database secret deleted: FATAL 28000 no database credential", async () => {
    const name = `relay_doomed_${crypto.randomUUID().slice(0, 8)}`;
    const id = await b.secret(name, { user: "md5", tls: "off" });
    const { client } = await login(name);
    expect(types(await ask(client, "SELECT 1"))).toBe("TDCZ");
    expect((await b.cg.api("DELETE", `/v1/secrets/${id}`)).status).toBe(204);
    expect(await ask(client, "SELECT 2")).toEqual([{ type: "E", severity: "FATAL", code: "28000", message: `credgate: no database credential "${name}" for this agent` }]);
    expect(await client.closedWithin()).toBe(true);
  });

  test("a block rule published while a session is open applies to its next statement; dropped, statements pass again", async () => {
    await b.secret("relay_names", { user: "md5", tls: "require", host: "names.db.test" });
    const { client } = await login("relay_names");
    expect(types(await ask(client, "SELECT 1"))).toBe("TDCZ");
    const created = await b.cg.api("POST", "/v1/policy/rules", { body: { name: "No names.db.test", action: "block", targets: [{ kind: "network", hostPattern: "names.db.test" }] } });
    expect(created.status).toBe(201);
    expect((await b.cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const refused = await ask(client, "SELECT 2");
    expect(types(refused)).toBe("EZ");
    expect(refused[0]).toMatchObject({ severity: "ERROR", code: "42501" });
    await b.cg.api("DELETE", `/v1/policy/rules/${created.body.id}`);
    await b.cg.api("POST", "/v1/policy/publish");
    expect(types(await ask(client, "SELECT 3"))).toBe("TDCZ");
    client.close();
  });
});

describe("gateway workers", () => {
  test("with gateway workers the listener stays in the primary: sessions, and every cancel reaches the process holding its session", async () => {
    const own = await startBroker({ db: b.db, env: { CREDGATE_GATEWAY_WORKERS: "3" } });
    try {
      await own.secret(S.md5Plain, { user: "md5", tls: "off" });
      for (let i = 0; i < 4; i++) {
        const { client, key } = await RawPg.login(own.dbPort, { user: S.md5Plain, database: RELAY_DB }, own.token);
        client.send(fe.query("SELECT pg_sleep(30)"));
        // The cancel is a new connection: with the listener shared by processes it would land on any of them.
        await eventually(async () => (await b.db.admin("SELECT 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")).length > 0);
        const cancel = await RawPg.open(own.dbPort);
        cancel.send(fe.cancelRequest(key.processId, key.secretKey));
        expect((await client.readies(1)).find((s) => s.type === "E")).toMatchObject({ code: "57014" });
        client.close();
      }
    } finally {
      await own.stop();
    }
  });
});

describe("stopping", () => {
  test("a stopping credgate ends an idle session with FATAL 57P01; the server's session ends too", async () => {
    const own = await startBroker({ db: b.db });
    await own.secret(S.md5Plain, { user: "md5", tls: "off" });
    const tag = `relay-stop-${crypto.randomUUID()}`;
    const { client } = await RawPg.login(own.dbPort, { user: S.md5Plain, database: "app", application_name: tag }, own.token);
    const stopping = own.cg.stop();
    const error = await refusal(client);
    expect(error).toEqual({ type: "E", severity: "FATAL", code: "57P01", message: "credgate: terminating the connection: the gateway is shutting down" });
    expect(await stopping).toBe(0);
    expect(await eventually(async () => (await b.db.admin(`SELECT 1 FROM pg_stat_activity WHERE application_name = '${tag}'`)).length === 0)).toBe(true);
  });
});
