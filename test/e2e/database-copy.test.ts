// A 1 GB COPY each way through credgate's database broker (docs/databases.md) with the gateway process's resident
// memory read from /proc while it runs: the relay streams with backpressure both ways, so a stalled side (the
// server sleeping in a trigger, the agent not reading) stops the other instead of piling bytes up in credgate.
// The client is porsager's COPY streams (they honour backpressure themselves). The figures are printed; the bound
// asserted is generous (256 MB over the idle RSS) — a relay that buffered would hold most of a gigabyte.
// CREDGATE_TEST_COPY_MB changes the size (default 1024).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { RssWatch } from "../../bench/rss.ts";
import { startBroker, type Broker } from "../support/databaseBroker.ts";
import { porsager } from "../support/databaseClients.ts";

const MB = 1024 * 1024;
const SIZE_MB = Number(process.env.CREDGATE_TEST_COPY_MB ?? 1024);
const LINE = Buffer.from(`${"x".repeat(1023)}\n`);
const CHUNK_LINES = 64; // 64 KB per write
const STALL_AT = 100 * MB;
const BOUND_MB = 256;
const SECRET = "copy_db";

let b: Broker;
let table: string;

beforeAll(async () => {
  b = await startBroker();
  await b.secret(SECRET, { user: "scram", tls: "off" });
  table = `sink_${crypto.randomUUID().slice(0, 8)}`;
  // A table that keeps nothing (the server's disk is not what is measured) and stalls 5 s on the line 'pause'.
  await b.db.admin(
    [
      `CREATE TABLE ${table} (line text)`,
      `CREATE FUNCTION ${table}_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.line = 'pause' THEN PERFORM pg_sleep(5); END IF; RETURN NULL; END $$`,
      `CREATE TRIGGER ${table}_drop BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_drop()`,
      `GRANT ALL ON ${table} TO scram_user`,
    ].join(";\n"),
  );
});

afterAll(async () => {
  await b?.stop();
});

function report(what: string, idle: number, peak: number, ms: number): void {
  console.log(`${what}: ${SIZE_MB} MB in ${(ms / 1000).toFixed(1)} s (${((SIZE_MB / ms) * 1000).toFixed(0)} MB/s); gateway RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (+${(peak - idle).toFixed(0)} MB)`);
}

describe("a 1 GB COPY through the broker keeps the gateway's memory bounded", () => {
  test("COPY FROM STDIN: the agent uploads 1 GB; the server stalls 5 s after 100 MB", async () => {
    const rss = new RssWatch(b.cg.proc.pid);
    const sql = porsager(b.url(SECRET, { sslmode: "disable" }));
    try {
      await sql`SELECT 1`;
      const idle = rss.now();
      rss.start();
      const started = Date.now();
      const chunks = (SIZE_MB * MB) / (LINE.length * CHUNK_LINES);
      const block = Buffer.concat(Array.from({ length: CHUNK_LINES }, () => LINE));
      async function* upload() {
        for (let i = 0; i < chunks; i++) {
          if (i * block.length === STALL_AT) yield Buffer.from("pause\n");
          yield block;
        }
      }
      const writable = await sql.unsafe(`COPY ${table} (line) FROM STDIN`).writable();
      await pipeline(Readable.from(upload(), { objectMode: false }), writable);
      rss.stop();
      report("COPY FROM STDIN", idle, rss.peak, Date.now() - started);
      expect(rss.peak - idle).toBeLessThan(BOUND_MB);
      // The session goes on after the COPY.
      expect([...(await sql`SELECT 7 AS seven`)]).toEqual([{ seven: 7 }]);
    } finally {
      rss.stop();
      await sql.end();
    }
  }, 300_000);

  test("COPY TO STDOUT: the server sends 1 GB; the agent stops reading for 5 s after 100 MB", async () => {
    const rss = new RssWatch(b.cg.proc.pid);
    const sql = porsager(b.url(SECRET, { sslmode: "disable" }));
    try {
      await sql`SELECT 1`;
      const idle = rss.now();
      rss.start();
      const started = Date.now();
      const lines = (SIZE_MB * MB) / LINE.length;
      const readable = await sql.unsafe(`COPY (SELECT repeat('x', 1023) FROM generate_series(1, ${lines})) TO STDOUT`).readable();
      let received = 0;
      let stalled = false;
      let sample = "";
      await pipeline(
        readable,
        new Writable({
          highWaterMark: 64 * 1024,
          write(chunk: Buffer, _enc, done) {
            received += chunk.length;
            if (sample.length < 2048) sample += chunk.toString("latin1", 0, Math.min(chunk.length, 2048));
            if (!stalled && received >= STALL_AT) {
              stalled = true;
              setTimeout(done, 5_000);
            } else done();
          },
        }),
      );
      rss.stop();
      report("COPY TO STDOUT", idle, rss.peak, Date.now() - started);
      expect(received).toBe(SIZE_MB * MB);
      expect(sample.startsWith(LINE.toString("latin1"))).toBe(true);
      expect(rss.peak - idle).toBeLessThan(BOUND_MB);
      expect([...(await sql`SELECT 8 AS eight`)]).toEqual([{ eight: 8 }]);
    } finally {
      rss.stop();
      await sql.end();
    }
  }, 300_000);
});
