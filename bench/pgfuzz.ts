// A longer protocol fuzz of credgate's database listener than test/e2e/database-fuzz.test.ts (docs/databases.md):
// thousands of seeded hostile sessions — mutated startup packets, and logged-in sessions sent random typed
// messages (random type, random body, lengths that lie) — with a real client checked every 100 sessions and the
// server's backends counted at the end. Prints what the hostile sessions got; exits 1 when the listener stopped
// serving, the process died or a backend was left behind.
//
//   bun bench/pgfuzz.ts [--sessions n] [--seed n]
import { startBroker } from "../test/support/databaseBroker.ts";
import { pgClient } from "../test/support/databaseClients.ts";
import { eventually } from "../test/support/gateway.ts";
import { describeMessage, fe, RawPg, type Seen } from "../test/support/pgRawClient.ts";
import { numberOption } from "./options.ts";

const sessions = Math.round(numberOption("--sessions", "PGFUZZ_SESSIONS", 3000));
const seed = Math.round(numberOption("--seed", "PGFUZZ_SEED", 1));
const SECRET = "fuzz_db";

function prng(s: number): () => number {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(seed);
const int = (n: number) => Math.floor(rand() * n);
const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));

const b = await startBroker();
await b.secret(SECRET, { user: "scram", tls: "off" });
const outcomes = new Map<string, number>();
const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
let failed = "";

/** What a hostile session got: an error's SQLSTATE, another message's type, the close or silence. */
async function answer(c: RawPg): Promise<string> {
  const m = await c.next(500);
  const f: Seen | null = m && describeMessage(m);
  return f ? (f.type === "E" ? `E ${f.code}` : f.type) : c.closed ? "closed" : "silence";
}

async function hostileStartup(): Promise<void> {
  const packet = Buffer.from(fe.startup({ user: SECRET, database: "app", application_name: "fuzz" }));
  const kind = int(3);
  if (kind === 0) for (let k = 0; k <= int(8); k++) packet[int(packet.length)] = int(256);
  if (kind === 1) packet.writeInt32BE(int(0xffffffff) | 0, 0);
  const chunk = kind === 2 ? bytes(1 + int(400)) : packet.subarray(0, 1 + int(packet.length));
  const c = await RawPg.open(b.dbPort);
  c.send(chunk);
  count(`startup → ${await answer(c)}`);
  c.close();
}

async function hostileSession(): Promise<void> {
  const c = await RawPg.open(b.dbPort);
  c.send(fe.startup({ user: SECRET, database: "app" }));
  const asked = await c.next();
  if (asked === null || String.fromCharCode(asked.type) !== "R") throw new Error("no password request");
  c.send(fe.password(b.token));
  await c.until((f) => f.type === "Z");
  const type = rand() < 0.5 ? int(256) : "QPBEDSHCcdfFX".charCodeAt(int(13));
  const body = bytes(int(200));
  const frame = Buffer.from(fe.typed(type, body));
  // A third of them lie about their length.
  if (rand() < 0.33) frame.writeInt32BE(int(0xffffffff) | 0, 1);
  c.send(frame);
  count(`session ${String.fromCharCode(type).replace(/[^\x21-\x7e]/, "?")} → ${await answer(c)}`);
  c.close();
}

async function serving(): Promise<void> {
  if (b.cg.proc.exitCode !== null) throw new Error(`credgate exited with ${b.cg.proc.exitCode}`);
  const client = await pgClient(b.pgConfig(SECRET, { sslmode: "disable" }));
  try {
    const r = await client.query("SELECT 42 AS n");
    if (r.rows[0]?.n !== 42) throw new Error("wrong answer");
  } finally {
    await client.end();
  }
}

const started = Date.now();
try {
  for (let i = 0; i < sessions; i++) {
    await (rand() < 0.5 ? hostileStartup() : hostileSession());
    if (i % 100 === 99) await serving();
  }
  await serving();
  const left = await eventually(async () => (await b.db.admin<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'scram_user'"))[0]!.n === 0, 20_000);
  if (!left) failed = "server backends were left behind";
  if (/Uncaught|unhandled|RangeError|TypeError|panic/i.test(b.cg.output())) failed ||= "credgate wrote an uncaught error";
} catch (err) {
  failed = String((err as Error).stack ?? err);
}
await b.stop();
b.db.stop();
console.log(`pgfuzz: ${sessions} hostile sessions (seed ${seed}) in ${((Date.now() - started) / 1000).toFixed(1)} s; ${failed ? `FAILED: ${failed}` : "the listener served throughout"}`);
for (const [k, n] of [...outcomes].sort((x, y) => y[1] - x[1]).slice(0, 30)) console.log(`  ${String(n).padStart(6)}  ${k}`);
process.exit(failed ? 1 : 0);
