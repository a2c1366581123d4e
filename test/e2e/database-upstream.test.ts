// The database broker's upstream side against Debian's PostgreSQL (test/support/databaseServer.ts, TLS with a test
// CA, one role per authentication method): connectUpstream logs in as the real user with each method, channel
// binding is really used and checked by the server, certificates are verified as the credential asks, server
// refusals come back as reasons without the password, cancel reaches the server with its real key, and the
// outbound rules (CREDGATE_RESOLVE / CONNECT_TO pins, the egress guard, the upstream proxy) hold. Hostile or broken
// servers — `N` to the TLS request, clear bytes after `S`, cleartext asked without TLS, a login "accepted" without
// the server's SCRAM proof, a server that never answers — are played by small raw servers written here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as net from "node:net";
import { dirname, join } from "node:path";
import * as tls from "node:tls";
import { EgressGuard } from "../../src/gateway/egressGuard.ts";
import { connectUpstream, forwardCancel, UpstreamError, type UpstreamCredential, type UpstreamDeps, type UpstreamSession } from "../../src/gateway/postgres/upstream.ts";
import { message, MessageReader, parseErrorFields, readCString } from "../../src/gateway/postgres/wire.ts";
import { Outbound, type OutboundConfig } from "../../src/services/outbound.ts";
import { parseProxySetting } from "../../src/runtime/configOutbound.ts";
import { databaseServer, type DatabaseServer, type DatabaseUserKind } from "../support/databaseServer.ts";
import { startTinyproxy } from "../support/upstreamProxies.ts";

let db: DatabaseServer;
beforeAll(async () => {
  db = await databaseServer();
});

function deps(outbound: Partial<OutboundConfig> = {}, mode: "self-hosted" | "cloud" = "self-hosted"): UpstreamDeps {
  const out = new Outbound({ resolve: new Map(), upstreamCaFile: db.caFile, ...outbound });
  return { outbound: out, egress: new EgressGuard({ mode, egressAllow: [], egressDeny: [], port: 1, gatewayPort: 2 }, out) };
}

const cred = (kind: DatabaseUserKind, over: Partial<UpstreamCredential> = {}): UpstreamCredential => ({
  host: db.host,
  port: db.port,
  user: db.users[kind].name,
  tls: "verify-full",
  ...over,
});

function connect(kind: DatabaseUserKind, over: Partial<UpstreamCredential> = {}, opts: Partial<Parameters<typeof connectUpstream>[2]> = {}, password = db.users[kind].password) {
  return connectUpstream(cred(kind, over), password, { database: db.database, startupParams: {}, readOnly: false, deps: deps(), ...opts });
}

/** A simple-protocol query on the handed-over socket: the rows (as text) or the server's error. */
function query(session: UpstreamSession, sql: string): Promise<{ rows: (string | null)[][]; error?: Map<string, string> }> {
  const { socket } = session;
  return new Promise((resolve, reject) => {
    const reader = new MessageReader();
    reader.push(session.pending);
    session.pending = new Uint8Array(0);
    const rows: (string | null)[][] = [];
    let error: Map<string, string> | undefined;
    const onData = (chunk: Buffer) => {
      reader.push(chunk);
      for (let m = reader.next(); m !== null; m = reader.next()) {
        if ("error" in m) return reject(new Error(m.error));
        if (m.type === 0x44 /* D */) {
          const dv = new DataView(m.body.buffer, m.body.byteOffset, m.body.byteLength);
          const row: (string | null)[] = [];
          let at = 2;
          for (let i = 0; i < dv.getInt16(0); i++) {
            const len = dv.getInt32(at);
            at += 4;
            row.push(len < 0 ? null : Buffer.from(m.body.subarray(at, at + len)).toString());
            if (len > 0) at += len;
          }
          rows.push(row);
        } else if (m.type === 0x45 /* E */) error = parseErrorFields(m.body);
        else if (m.type === 0x5a /* Z */) {
          socket.off("data", onData);
          socket.pause();
          return resolve({ rows, error });
        }
      }
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.resume();
    socket.write(message("Q", Buffer.from(`${sql}\0`)));
  });
}

async function refusal(attempt: Promise<unknown>): Promise<string> {
  try {
    const s = (await attempt) as UpstreamSession;
    s.socket.destroy();
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamError);
    return (err as Error).message;
  }
  throw new Error("the connection was expected to fail");
}

const sessions: UpstreamSession[] = [];
afterAll(() => {
  for (const s of sessions) s.socket.destroy();
});
const kept = (s: UpstreamSession) => (sessions.push(s), s);

describe("logging in as the real user", () => {
  test("SCRAM over TLS uses SCRAM-SHA-256-PLUS, verified, and hands over a working session", async () => {
    const s = kept(await connect("scram"));
    expect(s.authentication).toBe("SCRAM-SHA-256-PLUS");
    expect(s.socket).toBeInstanceOf(tls.TLSSocket);
    expect(s.socket.isPaused()).toBe(true);
    expect(s.socket.listenerCount("data")).toBe(0);
    expect(s.parameters.map(([n]) => n)).toContain("server_version");
    expect(s.parameters.find(([n]) => n === "session_authorization")?.[1]).toBe("scram_user");
    expect(s.backendKey.processId).toBeGreaterThan(0);
    const { rows } = await query(s, "SELECT current_user, pg_backend_pid(), ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
    expect(rows).toEqual([["scram_user", String(s.backendKey.processId), "t"]]);
  });

  test("SCRAM without TLS (tls off, loopback) uses SCRAM-SHA-256", async () => {
    const s = kept(await connect("scram", { tls: "off" }));
    expect(s.authentication).toBe("SCRAM-SHA-256");
    expect(s.socket).not.toBeInstanceOf(tls.TLSSocket);
    expect((await query(s, "SELECT current_user")).rows).toEqual([["scram_user"]]);
  });

  test("MD5 over TLS and without", async () => {
    for (const mode of ["verify-full", "off"] as const) {
      const s = kept(await connect("md5", { tls: mode }));
      expect(s.authentication).toBe("md5");
      expect((await query(s, "SELECT current_user")).rows).toEqual([["md5_user"]]);
    }
  });

  test("cleartext password over TLS", async () => {
    const s = kept(await connect("cleartext"));
    expect(s.authentication).toBe("password");
    expect((await query(s, "SELECT current_user")).rows).toEqual([["clear_user"]]);
  });

  test("read-only: the server refuses writes, and no agent setting or option lifts it", async () => {
    const s = kept(
      await connect("scram", {}, {
        readOnly: true,
        startupParams: { default_transaction_read_only: "off", options: "-c default_transaction_read_only=off", application_name: "agent app" },
      }),
    );
    expect((await query(s, "SHOW default_transaction_read_only")).rows).toEqual([["on"]]);
    expect((await query(s, "SHOW application_name")).rows).toEqual([["agent app"]]);
    const write = await query(s, "INSERT INTO items (name) VALUES ('x')");
    expect(write.error?.get("C")).toBe("25006");
    const writable = kept(await connect("scram"));
    expect((await query(writable, "SHOW default_transaction_read_only")).rows).toEqual([["off"]]);
  });

  test("a non-ASCII SCRAM password is prepared as the server prepared it (SASLprep)", async () => {
    // U+2168 (ROMAN NUMERAL NINE) becomes "IX", U+00AD (SOFT HYPHEN) nothing, U+00A0 a space.
    const password = `p\u00E4ss\u00ADw\u00F6rd\u00A0\u2168-${db.users.scram.password}`;
    await db.admin(`ALTER ROLE scram_user PASSWORD '${password}'`);
    try {
      const s = kept(await connect("scram", {}, {}, password));
      expect((await query(s, "SELECT current_user")).rows).toEqual([["scram_user"]]);
      // The prepared form is the same password to the server; an unprepared reading of it would not be.
      kept(await connect("scram", {}, {}, `p\u00E4ssw\u00F6rd IX-${db.users.scram.password}`));
      expect(await refusal(connect("scram", {}, {}, `p\u00E4ssw\u00F6rd\u00A0\u2168-${db.users.scram.password}x`))).toContain("password authentication failed");
    } finally {
      await db.admin(`ALTER ROLE scram_user PASSWORD '${db.users.scram.password}'`);
    }
  });

  test("the database asked for is the one connected to", async () => {
    const s = kept(await connect("md5", {}, { database: db.otherDatabase }));
    expect((await query(s, "SELECT current_database()")).rows).toEqual([["other"]]);
  });
});

describe("server refusals are reasons, without the password", () => {
  test.each(["scram", "md5", "cleartext"] as const)("wrong password (%s)", async (kind) => {
    const wrong = `${db.users[kind].password}-wrong`;
    const reason = await refusal(connect(kind, {}, {}, wrong));
    expect(reason).toBe(`password authentication failed for user "${db.users[kind].name}"`);
    expect(reason).not.toContain(wrong);
  });

  test("unknown database", async () => {
    expect(await refusal(connect("scram", {}, { database: "nope" }))).toBe('database "nope" does not exist');
  });

  test("the server's pg_hba refusal (cleartext role without TLS)", async () => {
    expect(await refusal(connect("cleartext", { tls: "off" }))).toContain("no pg_hba.conf entry");
  });
});

describe("certificates", () => {
  test("verify-full refuses a certificate from a CA it does not trust", async () => {
    const reason = await refusal(connectUpstream(cred("scram"), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: deps({ upstreamCaFile: db.otherCaFile }) }));
    expect(reason).toContain("the server's certificate could not be verified");
  });

  test("verify-full refuses a certificate that does not name the host; require connects", async () => {
    expect(await refusal(connect("scram", { host: db.untrustedHost }))).toContain(`the server's certificate is not valid for ${db.untrustedHost}`);
    const s = kept(await connect("scram", { host: db.untrustedHost, tls: "require" }));
    expect((await query(s, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")).rows).toEqual([["t"]]);
    const untrusted = kept(
      await connectUpstream(cred("md5", { tls: "require" }), db.users.md5.password, { database: db.database, startupParams: {}, readOnly: false, deps: deps({ upstreamCaFile: db.otherCaFile }) }),
    );
    expect(untrusted.authentication).toBe("md5");
  });

  test("channel binding: a relay that terminates TLS with its own certificate cannot pass a SCRAM login on", async () => {
    const relay = await tlsTerminatingRelay(db.port);
    try {
      // MD5 has no channel binding: through the relay it works (the relay itself is sound)...
      const md5 = kept(await connect("md5", { port: relay.port, tls: "require" }));
      expect((await query(md5, "SELECT current_user")).rows).toEqual([["md5_user"]]);
      // ...SCRAM-SHA-256-PLUS binds the relay's certificate, and the server, which sees its own, refuses.
      expect(await refusal(connect("scram", { port: relay.port, tls: "require" }))).toMatch(/channel binding/i);
    } finally {
      relay.close();
    }
  });
});

describe("outbound rules", () => {
  test("CREDGATE_RESOLVE pins the address and the certificate is still checked against the credential's host", async () => {
    const name = "db.credgate.test";
    const pinned = deps({ resolve: new Map([[`${name}:${db.port}`, "127.0.0.1"]]) });
    const s = kept(await connectUpstream(cred("scram", { host: name, tls: "require" }), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: pinned }));
    expect((await query(s, "SELECT current_user")).rows).toEqual([["scram_user"]]);
    expect(await refusal(connectUpstream(cred("scram", { host: name }), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: pinned }))).toContain(
      `not valid for ${name}`,
    );
  });

  test("CREDGATE_CONNECT_TO moves the host and port", async () => {
    const moved = deps({ connectTo: new Map([["localhost:5432", { host: "127.0.0.1", port: db.port }]]) });
    const s = kept(await connectUpstream(cred("scram", { host: "localhost", port: 5432 }), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: moved }));
    expect(s.authentication).toBe("SCRAM-SHA-256-PLUS");
  });

  test("the egress guard refuses an address its rules refuse (loopback in cloud mode), before any connection", async () => {
    const before = await db.admin<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'scram_user'");
    const reason = await refusal(connectUpstream(cred("scram"), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: deps({}, "cloud") }));
    expect(reason).toBe(`credgate does not connect to 127.0.0.1 (127.0.0.1): the destination is an internal or reserved address`);
    expect(await db.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'scram_user'")).toEqual(before);
  });

  test("tls off is refused when the address dialled is not loopback", async () => {
    const pinned = deps({ resolve: new Map([[`localhost:${db.port}`, "10.255.255.1"]]) });
    const reason = await refusal(connectUpstream(cred("scram", { host: "localhost", tls: "off" }), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: pinned }));
    expect(reason).toContain("tls off is only allowed for a loopback database");
  });

  test("through the upstream proxy (HTTP CONNECT to the judged address)", async () => {
    const proxy = await startTinyproxy({ user: "u", password: "p", connectPorts: [db.port] });
    try {
      const viaProxy = deps({ upstreamProxy: parseProxySetting(`http://u:p@127.0.0.1:${proxy.port}`) });
      const s = kept(await connectUpstream(cred("scram"), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: viaProxy }));
      expect(s.authentication).toBe("SCRAM-SHA-256-PLUS");
      expect((await query(s, "SELECT current_user")).rows).toEqual([["scram_user"]]);
      expect(proxy.targets()).toContain(`127.0.0.1:${db.port}`);
      const plain = await refusal(connectUpstream(cred("scram", { tls: "off" }), db.users.scram.password, { database: db.database, startupParams: {}, readOnly: false, deps: viaProxy }));
      expect(plain).toContain("reached directly");
    } finally {
      await proxy.stop();
    }
  });
});

describe("cancel", () => {
  test.each(["verify-full", "off"] as const)("a running pg_sleep is cancelled with the server's real key (tls %s)", async (mode) => {
    const s = kept(await connect("scram", { tls: mode }));
    const running = query(s, "SELECT pg_sleep(60)");
    // Wait until the statement runs on the server.
    for (;;) {
      const [row] = await db.admin<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${s.backendKey.processId} AND query LIKE 'SELECT pg_sleep%' AND state = 'active'`);
      if (row!.n === 1) break;
      await Bun.sleep(20);
    }
    await forwardCancel(cred("scram", { tls: mode }), s.backendKey, deps());
    const { error } = await running;
    expect(error?.get("C")).toBe("57014");
    expect(error?.get("M")).toBe("canceling statement due to user request");
  });
});

// --- servers that misbehave (raw sockets written here) ---

interface RawServer {
  port: number;
  /** Everything each connection sent, in order of connections. */
  received: Buffer[];
  close(): void;
}

async function rawServer(onConnection: (socket: net.Socket, received: () => Buffer) => void): Promise<RawServer> {
  const received: Buffer[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    const i = received.push(Buffer.alloc(0)) - 1;
    socket.on("data", (c: Buffer) => (received[i] = Buffer.concat([received[i]!, c])));
    socket.on("error", () => {});
    onConnection(socket, () => received[i]!);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** Waits until `has(bytes)` holds for what the connection sent. */
async function until(received: () => Buffer, has: (b: Buffer) => boolean): Promise<void> {
  while (!has(received())) await Bun.sleep(5);
}

const R = (code: number, extra: Buffer = Buffer.alloc(0)) => {
  const body = Buffer.concat([Buffer.from([0, 0, 0, code]), extra]);
  return Buffer.from(message("R", body));
};

describe("servers that misbehave", () => {
  test("`N` to the TLS request: refused, nothing more sent", async () => {
    const server = await rawServer((socket) => socket.once("data", () => socket.write("N")));
    try {
      expect(await refusal(connect("scram", { port: server.port }))).toBe("the server does not support TLS (the credential's tls setting requires it)");
      expect(server.received[0]!.length).toBe(8);
    } finally {
      server.close();
    }
  });

  test("clear bytes after `S` (CVE-2021-23222): refused", async () => {
    const server = await rawServer((socket) => socket.once("data", () => socket.write(Buffer.concat([Buffer.from("S"), R(0)]))));
    try {
      expect(await refusal(connect("scram", { port: server.port, tls: "require" }))).toBe("the server sent unencrypted data after agreeing to TLS");
    } finally {
      server.close();
    }
  });

  test("a cleartext password asked without TLS is never sent", async () => {
    const server = await rawServer((socket, received) => void until(received, (b) => b.length > 8).then(() => socket.write(R(3))));
    try {
      const password = db.users.scram.password;
      expect(await refusal(connect("scram", { port: server.port, tls: "off" }))).toBe("the server asked for a cleartext password without TLS");
      await Bun.sleep(50);
      expect(server.received[0]!.toString("latin1")).not.toContain(password);
    } finally {
      server.close();
    }
  });

  test("GSSAPI, SSPI and Kerberos are named", async () => {
    for (const [code, name] of [[7, "GSSAPI"], [9, "SSPI"], [2, "Kerberos V5"]] as const) {
      const server = await rawServer((socket, received) => void until(received, (b) => b.length > 8).then(() => socket.write(R(code))));
      try {
        expect(await refusal(connect("scram", { port: server.port, tls: "off" }))).toContain(`asked for ${name} authentication`);
      } finally {
        server.close();
      }
    }
  });

  test("a login 'accepted' before the server proved the password is refused", async () => {
    const server = await rawServer((socket, received) => {
      void (async () => {
        await until(received, (b) => b.length > 8);
        socket.write(R(10, Buffer.from("SCRAM-SHA-256\0\0")));
        const startup = received().length;
        await until(received, (b) => b.length > startup);
        socket.write(R(0));
      })();
    });
    try {
      expect(await refusal(connect("scram", { port: server.port, tls: "off" }))).toBe("the server accepted the login without proving that it knows the password");
    } finally {
      server.close();
    }
  });

  test("a server that never answers: the login times out; the agent leaving ends it at once", async () => {
    const server = await rawServer(() => {});
    try {
      expect(await refusal(connect("scram", { port: server.port, tls: "off" }, { timeoutMs: 300 }))).toBe("connecting to the database timed out after 0.3 s");
      const gone = new AbortController();
      const attempt = connect("scram", { port: server.port, tls: "require" }, { signal: gone.signal });
      await until(() => server.received[1] ?? Buffer.alloc(0), (b) => b.length === 8);
      gone.abort();
      expect(await refusal(attempt)).toBe("the client went away");
    } finally {
      server.close();
    }
  });
});

/** A relay that answers the TLS request itself with its own certificate and opens its own TLS to the server. */
async function tlsTerminatingRelay(serverPort: number): Promise<{ port: number; close(): void }> {
  const dir = dirname(db.caFile);
  // The fixture's directory holds its CA key: a certificate for 127.0.0.1 from that CA (but not the server's).
  const { spawnSync } = await import("node:child_process");
  const sh = (cmd: string) => {
    const r = spawnSync("sh", ["-c", cmd], { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(r.stderr);
  };
  sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout relay.key -out relay.csr -subj /CN=relay");
  sh(`printf 'subjectAltName=IP:127.0.0.1\\n' > relay.ext && openssl x509 -req -in relay.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out relay.crt -days 1 -sha384 -extfile relay.ext`);
  const key = readFileSync(join(dir, "relay.key"));
  const cert = readFileSync(join(dir, "relay.crt"));
  const relay = await rawServer((client) => {
    client.once("data", () => {
      client.removeAllListeners("data");
      client.write("S");
      const front = new tls.TLSSocket(client, { isServer: true, key, cert });
      front.on("error", () => {});
      const back = net.connect({ host: "127.0.0.1", port: serverPort }, () => back.write(Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f])));
      back.once("data", () => {
        const secure = tls.connect({ socket: back, rejectUnauthorized: false });
        secure.on("error", () => front.destroy());
        secure.on("secureConnect", () => {
          front.pipe(secure);
          secure.pipe(front);
        });
      });
      back.on("error", () => front.destroy());
    });
  });
  return relay;
}
