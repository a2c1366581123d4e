// A protocol fuzz of credgate's database listener (docs/databases.md): malformed startup packets, absurd and
// negative lengths, unknown message types, truncated messages, garbage after TLS, random bytes before and after
// authentication. Each hostile connection is answered with an error or closed — never with a crash — and the
// listener keeps serving a real client (node pg) afterwards; sessions ended by garbage leave no server backend.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startBroker, type Broker } from "../support/databaseBroker.ts";
import { pgClient } from "../support/databaseClients.ts";
import { eventually } from "../support/gateway.ts";
import { describeMessage, fe, PROTOCOL_3, RawPg, type Seen } from "../support/pgRawClient.ts";

const { cancelRequest, gssencRequest, password, query, sslRequest, startup, typed, untyped } = fe;

const SECRET = "fuzz_db";
let b: Broker;

beforeAll(async () => {
  b = await startBroker();
  await b.secret(SECRET, { user: "scram", tls: "off" });
});

afterAll(async () => {
  await b?.stop();
});

/** A deterministic PRNG (mulberry32): a failing case can be replayed from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const bytesOf = (rand: () => number, n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));

/** The next message as seen, or null when the connection closed (or `ms` passed) first. */
async function nextSeen(c: RawPg, ms?: number): Promise<Seen | null> {
  const m = await c.next(ms);
  return m && describeMessage(m);
}

/** The listener still serves: a real client logs in and runs a query; the process is alive. */
async function stillServing(): Promise<void> {
  expect(b.cg.proc.exitCode).toBeNull();
  const client = await pgClient(b.pgConfig(SECRET, { sslmode: "disable" }));
  try {
    expect((await client.query("SELECT 41 + 1 AS n")).rows).toEqual([{ n: 42 }]);
  } finally {
    await client.end();
  }
}

/** Sends `bytes`, then waits (up to 10 s) for an ErrorResponse or the close; what came back. */
async function hostile(bytes: Uint8Array[], opts: { keepOpen?: boolean } = {}): Promise<{ closed: boolean; error: Seen | null; first: string | null }> {
  const c = await RawPg.open(b.dbPort);
  for (const chunk of bytes) c.send(chunk);
  let error: Seen | null = null;
  let first: string | null = null;
  const deadline = Date.now() + 10_000;
  while (!c.closed && Date.now() < deadline) {
    const f = await nextSeen(c, Math.max(1, deadline - Date.now()));
    if (!f) break;
    first ??= f.type;
    if (f.type === "E") {
      error = f;
      break;
    }
    // Asked for a password: the packet was taken as a valid startup; nothing more will come unasked.
    if (f.type === "R") break;
  }
  if (!opts.keepOpen && first !== "R") {
    await c.closedWithin(Math.max(0, deadline - Date.now()));
  }
  const closed = c.closed;
  c.close();
  return { closed, error, first };
}

/** A raw session logged in through credgate, ready for queries. */
async function loggedIn(): Promise<RawPg> {
  const c = await RawPg.open(b.dbPort);
  c.send(startup({ user: SECRET, database: "app" }));
  const auth = await c.next();
  expect(auth && String.fromCharCode(auth.type)).toBe("R");
  expect(Buffer.from(auth!.body).readInt32BE(0)).toBe(3); // AuthenticationCleartextPassword
  c.send(password(b.token));
  const frames = await c.until((f) => f.type === "Z");
  expect(frames.map((f) => f.type)).toContain("K");
  expect(frames.at(-1)?.type).toBe("Z");
  return c;
}

async function backends(): Promise<number> {
  return (await b.db.admin<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'scram_user'"))[0]!.n;
}

describe("startup phase", () => {
  test("absurd, negative and too-small lengths are refused at once (error or close, no 2 GB wait)", async () => {
    const cases: [string, Uint8Array][] = [
      ["length 0", Buffer.from([0, 0, 0, 0, 0, 3, 0, 0])],
      ["length 4", Buffer.from([0, 0, 0, 4, 0, 3, 0, 0])],
      ["length 7", Buffer.from([0, 0, 0, 7, 0, 3, 0, 0])],
      ["negative length", Buffer.from([0x80, 0, 0, 0, 0, 3, 0, 0])],
      ["length 2^31-1", Buffer.from([0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0])],
      ["length 100 MB", Buffer.from([0x06, 0x40, 0, 0, 0, 3, 0, 0])],
    ];
    for (const [name, bytes] of cases) {
      const r = await hostile([bytes]);
      expect({ name, ended: r.closed || r.error !== null }).toEqual({ name, ended: true });
      if (r.error) expect({ name, severity: r.error.severity }).toEqual({ name, severity: "FATAL" });
    }
    await stillServing();
  });

  test("unknown protocol versions and codes, missing user, unterminated or odd parameters → FATAL or close", async () => {
    const cases: [string, Uint8Array][] = [
      ["protocol 2.0", untyped(2 << 16, Buffer.from("user\0x\0\0"))],
      ["protocol 4.0", untyped(4 << 16, Buffer.from("user\0x\0\0"))],
      ["code 1234/5678", untyped((1234 << 16) | 5678)],
      ["no user", startup({ database: "app" })],
      ["empty user", startup({ user: "", database: "app" })],
      ["unterminated parameters", untyped(PROTOCOL_3, Buffer.from("user\0fuzz_db\0database\0ap"))],
      ["odd parameter list", untyped(PROTOCOL_3, Buffer.from("user\0fuzz_db\0database\0\0"))],
      ["invalid UTF-8 user", untyped(PROTOCOL_3, Buffer.concat([Buffer.from("user\0"), Buffer.from([0xff, 0xfe, 0]), Buffer.from([0])]))],
      ["huge parameter value", startup({ user: SECRET, database: "app", application_name: "x".repeat(20_000) })],
      ["typed message first", typed("Q", Buffer.from("SELECT 1\0"))],
      ["password before startup", password(b?.token ?? "x")],
    ];
    for (const [name, bytes] of cases) {
      const r = await hostile([bytes]);
      // Either refused outright, or (a valid-looking startup) asked for the password: never silence that hangs.
      expect({ name, answered: r.closed || r.error !== null || r.first === "R" }).toEqual({ name, answered: true });
      if (r.error) expect({ name, severity: r.error.severity }).toEqual({ name, severity: "FATAL" });
    }
    await stillServing();
  });

  test("GSSENCRequest → N, then a real startup on the same connection proceeds", async () => {
    const c = await RawPg.open(b.dbPort);
    c.send(gssencRequest());
    expect(await c.byte()).toBe("N");
    c.send(startup({ user: SECRET, database: "app" }));
    expect((await nextSeen(c))?.type).toBe("R");
    c.close();
  });

  test("SSLRequest → S, then garbage instead of a ClientHello, or garbage after the handshake → closed", async () => {
    const garbage = await RawPg.open(b.dbPort);
    garbage.send(sslRequest());
    expect(await garbage.byte()).toBe("S");
    garbage.send(bytesOf(prng(1), 4096));
    expect(await garbage.closedWithin(10_000)).toBe(true);

    for (const [seed, payload] of [
      [2, null],
      [3, untyped(0x7fffffff)],
      [4, typed("Q", Buffer.from("SELECT 1\0"))],
    ] as const) {
      const c = await RawPg.open(b.dbPort);
      // SSLRequest, answered 'S' (or it throws), then the handshake.
      await c.startTls(b.ca.pem);
      c.send(payload ?? bytesOf(prng(seed), 2048));
      const f = await nextSeen(c, 10_000);
      if (f) expect({ seed, type: f.type, severity: f.severity }).toEqual({ seed, type: "E", severity: "FATAL" });
      expect({ seed, closed: await c.closedWithin(10_000) }).toEqual({ seed, closed: true });
    }
    await stillServing();
  });

  test("CancelRequest with a key nobody has is dropped quietly; a second SSLRequest inside TLS is refused", async () => {
    const r = await hostile([cancelRequest(12345, 67890)]);
    expect(r.closed).toBe(true);
    expect(r.error).toBeNull();
    const c = await RawPg.open(b.dbPort);
    await c.startTls(b.ca.pem);
    c.send(sslRequest());
    // Either an ErrorResponse or the close (no byte: ""): never a second 'S'.
    const answer = await c.byte(10_000).catch(() => "");
    expect(answer).not.toBe("S");
    c.close();
    await stillServing();
  });

  test("200 random startup packets (seeded mutations of a valid one) leave the listener serving", async () => {
    const valid = startup({ user: SECRET, database: "app", application_name: "fuzz" });
    const rand = prng(42);
    const open: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      const bytes = Buffer.from(valid);
      const kind = i % 4;
      if (kind === 0) for (let k = 0; k < 1 + Math.floor(rand() * 6); k++) bytes[Math.floor(rand() * bytes.length)] = Math.floor(rand() * 256);
      const chunk = kind === 1 ? bytes.subarray(0, Math.floor(rand() * bytes.length)) : kind === 2 ? bytesOf(rand, 1 + Math.floor(rand() * 300)) : bytes;
      if (kind === 3) bytes.writeInt32BE(Math.floor(rand() * 0xffffffff) | 0, 0);
      open.push(
        (async () => {
          const c = await RawPg.open(b.dbPort);
          c.send(chunk);
          // Hang up after a moment without waiting for an answer: half of them mid-packet.
          await c.closedWithin(50);
          c.close();
        })(),
      );
      if (open.length >= 20) await Promise.all(open.splice(0));
    }
    await Promise.all(open);
    await stillServing();
  });
});

describe("after authentication", () => {
  test("unknown message types, absurd lengths and malformed messages → ErrorResponse (FATAL ends the session), never a crash; no backend is left", async () => {
    const baseline = await backends();
    const cases: [string, Uint8Array][] = [
      ["type 0x00", typed(0, Buffer.from("abc"))],
      ["type 'z'", typed("z")],
      ["type 0xff", typed(0xff, Buffer.alloc(16))],
      ["length 2^31-1", Buffer.concat([Buffer.from("Q"), Buffer.from([0x7f, 0xff, 0xff, 0xff])])],
      ["negative length", Buffer.concat([Buffer.from("Q"), Buffer.from([0xff, 0xff, 0xff, 0xf0])])],
      ["length 3", Buffer.concat([Buffer.from("Q"), Buffer.from([0, 0, 0, 3])])],
      ["Query without its NUL", typed("Q", Buffer.from("SELECT 1"))],
      ["Parse cut short", typed("P", Buffer.from("stmt\0SELECT"))],
      ["Bind to nothing", typed("B", Buffer.from("portal\0nope\0\0\0\0\0\0\0"))],
      ["a password again", password("again")],
      ["random bytes", bytesOf(prng(7), 1024)],
    ];
    for (const [name, bytes] of cases) {
      const c = await loggedIn();
      c.send(bytes);
      // Every one is answered with an ErrorResponse (credgate's or the server's); a FATAL one ends the session.
      const frames: Seen[] = [];
      const deadline = Date.now() + 10_000;
      while (!c.closed && Date.now() < deadline) {
        const f = await nextSeen(c, Math.max(1, deadline - Date.now()));
        if (!f) break;
        frames.push(f);
        if (f.type === "Z" || f.type === "E") break;
      }
      const error = frames.find((f) => f.type === "E");
      expect({ name, answered: error ? "E" : frames.map((f) => f.type).join("") }).toEqual({ name, answered: "E" });
      if (error!.severity === "FATAL") {
        expect({ name, closed: await c.closedWithin(10_000) }).toEqual({ name, closed: true });
      }
      c.close();
      expect({ name, crashed: b.cg.proc.exitCode !== null }).toEqual({ name, crashed: false });
    }
    // Truncated messages: the rest never comes, the agent hangs up mid-message.
    for (const partial of [Buffer.from([0x51, 0, 0, 0]), Buffer.concat([Buffer.from("Q"), Buffer.from([0, 0, 0, 100]), Buffer.from("SELECT")]), Buffer.from("P")]) {
      const c = await loggedIn();
      c.send(partial);
      await Bun.sleep(20);
      c.close();
    }
    await stillServing();
    // Every session ended with its agent connection: the server's backends return to the baseline.
    expect(await eventually(async () => (await backends()) <= baseline, 15_000)).toBe(true);
  });

  test("a valid Query right after garbage-free framing still works on a raw session (the fuzz harness is sound)", async () => {
    const c = await loggedIn();
    c.send(query("SELECT 'raw' AS r"));
    const frames = await c.until((f) => f.type === "Z");
    expect(frames.map((f) => f.type)).toEqual(["T", "D", "C", "Z"]);
    c.close();
  });
});

describe("the process", () => {
  test("wrote no uncaught error after all of the above", () => {
    expect(b.cg.proc.exitCode).toBeNull();
    expect(b.cg.output()).not.toMatch(/Uncaught|unhandled|RangeError|TypeError|panic/i);
  });
});
