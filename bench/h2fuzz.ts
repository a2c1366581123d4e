// Fuzzing the gateway's HTTP/2 frame layer through the built binary (`npm run bench:h2fuzz`, not in CI;
// bench/README.md#h2-fuzz). Each case is one agent connection (CONNECT, TLS with ALPN h2, the preface) that
// receives a seeded random sequence of frames: well-formed requests (some split over CONTINUATION, padded,
// with bodies and right or wrong content-length), control frames with random values (SETTINGS, PING,
// WINDOW_UPDATE, PRIORITY, RST_STREAM, GOAWAY, unknown types), mutations of well-formed frames (bytes flipped,
// lengths changed) and junk, written in random splits. After each case:
//   - every stream of a well-formed request that was answered got its own answer (the origin echoes the path:
//     an answer naming another stream's path is a desync), and no frame the gateway sent is malformed;
//   - on the fuzzed connection, if the gateway neither closed it nor said GOAWAY, a probe request (after
//     windows and settings are set back to sane values) is answered, refused or reset within 10 s;
//   - a fresh connection's well-formed request is answered correctly within 10 s (else: a hang);
//   - the gateway process is still running (else: a crash).
// Prints progress every 30 s and a summary (cases, frames, GOAWAY codes, crashes, hangs, desyncs); the seed
// of every failing case is printed so that it can be replayed with --seed <seed> --cases 1.
//   bun bench/h2fuzz.ts [--minutes 10] [--seed N] [--cases N]
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startCredgate } from "../test/support/process.ts";
import { gatewayCa, resolveEntries } from "../test/support/gateway.ts";
import { FRAME, frame, headerBlock, RawH2, settings, startH2Origin, type Frame } from "../test/support/h2.ts";
import { makePki } from "../test/support/upstream.ts";
import { onCleanup } from "./procs.ts";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const MINUTES = Number(flag("minutes", process.env.H2FUZZ_MINUTES ?? "10"));
const FIRST_SEED = Number(flag("seed", String(Date.now() % 1_000_000_007)));
const MAX_CASES = Number(flag("cases", "Infinity"));
const BINARY = join(import.meta.dir, "../dist/credgate");
const HOST = "fuzz.h2.test";
const PROBE_MS = 10_000;

/** xorshift32: the same case for the same seed. */
class Rand {
  constructor(private s: number) {
    if (this.s === 0) this.s = 0x2026;
  }
  next(): number {
    let s = this.s;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.s = s >>> 0;
    return this.s;
  }
  int(n: number): number {
    return this.next() % n;
  }
  chance(p: number): boolean {
    return this.next() / 0x1_0000_0000 < p;
  }
  bytes(n: number): Buffer {
    return Buffer.from(Array.from({ length: n }, () => this.int(256)));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

interface Case {
  bytes: Buffer[];
  frames: number;
  /** Well-formed requests: stream id → the path it asked for. */
  requests: Map<number, string>;
  /** Every path a stream may have asked for: its request's, and those of request frames moved onto it by a mutation. */
  mayAsk: Map<number, Set<string>>;
  /** The highest stream id the case used. */
  maxStream: number;
}

/** One case: a random mix of well-formed requests, control frames, mutations and junk. */
function generate(rand: Rand, authority: string, tag: string): Case {
  const out: Buffer[] = [];
  /** The path of the request each entry of `out` belongs to (its HEADERS, CONTINUATION or DATA), if any. */
  const pathOf: (string | null)[] = [];
  const push = (b: Buffer, path: string | null = null) => {
    out.push(b);
    pathOf.push(path);
  };
  const requests = new Map<number, string>();
  const mayAsk = new Map<number, Set<string>>();
  const may = (id: number, path: string) => {
    if (!mayAsk.has(id)) mayAsk.set(id, new Set());
    mayAsk.get(id)!.add(path);
  };
  let next = 1;
  let frames = 0;
  const used: number[] = [];
  const anyStream = () => (used.length > 0 && rand.chance(0.7) ? rand.pick(used) : rand.int(40));
  const items = 1 + rand.int(30);
  for (let i = 0; i < items; i++) {
    const kind = rand.int(100);
    // Most items keep the framing intact (so the frames after them are read too); a few break it.
    if (kind < 45) {
      // A well-formed request (its stream id in order, unless the case already broke that).
      const id = next;
      next += 2;
      used.push(id);
      const path = `/fuzz/${tag}/${id}`;
      const post = rand.chance(0.3);
      const body = post ? rand.bytes(rand.int(3000)) : Buffer.alloc(0);
      const fields: [string, string][] = [
        [":method", post ? "POST" : "GET"],
        [":scheme", "https"],
        [":authority", authority],
        [":path", path],
      ];
      if (post && rand.chance(0.5)) fields.push(["content-length", String(rand.chance(0.8) ? body.length : rand.int(5000))]);
      if (rand.chance(0.3)) fields.push([`x-fuzz-${rand.int(100)}`, "v".repeat(rand.int(200))]);
      let block = headerBlock(fields);
      const endStream = !post;
      let flags = endStream ? 0x1 : 0;
      if (rand.chance(0.2)) {
        // PRIORITY flag: 5 bytes of dependency and weight before the block.
        flags |= 0x20;
        block = Buffer.concat([u32(rand.int(id)), Buffer.from([rand.int(256)]), block]);
      }
      if (rand.chance(0.2)) {
        const pad = rand.int(40);
        flags |= 0x8;
        block = Buffer.concat([Buffer.from([pad]), block, Buffer.alloc(pad)]);
      }
      if (rand.chance(0.25) && block.length > 4) {
        // Split over CONTINUATION (the padding and priority stay in the HEADERS frame's share).
        const cut = 1 + rand.int(block.length - 1);
        push(frame(FRAME.HEADERS, flags, id, block.subarray(0, cut)), path);
        push(frame(FRAME.CONTINUATION, 0x4, id, block.subarray(cut)), path);
        frames += 2;
      } else {
        push(frame(FRAME.HEADERS, flags | 0x4, id, block), path);
        frames++;
      }
      if (post) {
        for (let at = 0; at < body.length || at === 0; at += 1000) {
          const part = body.subarray(at, at + 1000);
          const last = at + 1000 >= body.length;
          push(frame(FRAME.DATA, last ? 0x1 : 0, id, part), path);
          frames++;
          if (last) break;
        }
      }
      requests.set(id, path);
      may(id, path);
    } else if (kind < 80) {
      // A control frame with random values.
      const c = rand.int(9);
      let f: Buffer;
      if (c === 0) f = frame(FRAME.PING, rand.chance(0.2) ? 1 : 0, 0, rand.bytes(8));
      else if (c === 1) {
        const ids = [1, 2, 3, 4, 5, 6, 7, 0x99];
        f = settings(Array.from({ length: rand.int(4) }, () => [rand.pick(ids), rand.chance(0.5) ? rand.int(70_000) : rand.next()] as [number, number]));
      } else if (c === 2) f = frame(FRAME.SETTINGS, 1, 0);
      else if (c === 3) f = frame(FRAME.WINDOW_UPDATE, 0, rand.chance(0.3) ? 0 : anyStream(), u32(rand.chance(0.2) ? 0 : rand.chance(0.2) ? 0x7fffffff : rand.int(1 << 20)));
      else if (c === 4) f = frame(2 /* PRIORITY */, 0, anyStream(), rand.chance(0.8) ? Buffer.concat([u32(rand.int(50)), Buffer.from([rand.int(256)])]) : rand.bytes(rand.int(8)));
      else if (c === 5) f = frame(FRAME.RST_STREAM, 0, anyStream(), u32(rand.int(14)));
      else if (c === 6) f = frame(FRAME.GOAWAY, 0, 0, Buffer.concat([u32(rand.int(50)), u32(rand.int(14))]));
      else if (c === 7) f = frame(10 + rand.int(246), rand.int(256), anyStream(), rand.bytes(rand.int(64)));
      else f = frame(FRAME.DATA, rand.int(2), anyStream(), rand.bytes(rand.int(200)));
      push(f);
      frames++;
    } else if (kind < 96 && out.length > 0) {
      // A mutation of an earlier frame that keeps its length: its type, flags, stream id or payload bytes.
      const v = rand.int(out.length);
      const victim = Buffer.from(out[v]!);
      if (victim.length >= 9) {
        const m = rand.int(4);
        if (m === 0) victim[3] = rand.int(11);
        else if (m === 1) victim[4] = rand.int(256);
        else if (m === 2) victim.writeUInt32BE(rand.chance(0.5) ? rand.int(60) : rand.next(), 5);
        else if (victim.length > 9) for (let k = 0; k < 1 + rand.int(3); k++) victim[9 + rand.int(victim.length - 9)] = rand.int(256);
        const path = pathOf[v] ?? null;
        if (path !== null) may(victim.readUInt32BE(5) & 0x7fffffff, path);
        push(victim, path);
        frames++;
      }
    } else if (kind < 98 && out.length > 0) {
      // A frame whose length no longer matches its bytes, or cut short.
      const victim = Buffer.from(rand.pick(out));
      if (rand.chance(0.5) && victim.length >= 3) victim.writeUIntBE(rand.int(1 << 15), 0, 3);
      push(rand.chance(0.5) ? victim : victim.subarray(0, rand.int(victim.length)));
      frames++;
    } else {
      push(rand.bytes(1 + rand.int(64)));
    }
  }
  return { bytes: out, frames, requests, mayAsk, maxStream: Math.max(next, 41) };
}

interface Totals {
  cases: number;
  frames: number;
  bytes: number;
  goaways: Map<number, number>;
  requestsAnswered: number;
  probesOnFuzzed: { answered: number; refused: number; closed: number };
  crashes: number;
  hangs: number;
  desyncs: number;
  failures: string[];
}

/** The first JSON `"path":"…"` in a body (the origin's echo). */
function echoedPath(text: string): string | null {
  return /"path":"([^"]*)"/.exec(text)?.[1] ?? null;
}

/** Frames the gateway sent that no HTTP/2 server may send. */
function malformed(f: Frame): string | null {
  if (f.type === FRAME.PING && (f.payload.length !== 8 || f.stream !== 0)) return "a malformed PING";
  if (f.type === FRAME.SETTINGS && (f.payload.length % 6 !== 0 || f.stream !== 0)) return "a malformed SETTINGS";
  if (f.type === FRAME.WINDOW_UPDATE && f.payload.length !== 4) return "a malformed WINDOW_UPDATE";
  if (f.type === FRAME.RST_STREAM && (f.payload.length !== 4 || f.stream === 0)) return "a malformed RST_STREAM";
  if (f.type === FRAME.GOAWAY && (f.payload.length < 8 || f.stream !== 0)) return "a malformed GOAWAY";
  if ((f.type === FRAME.DATA || f.type === FRAME.HEADERS) && (f.stream === 0 || f.stream % 2 === 0)) return `a ${f.type} frame on stream ${f.stream}`;
  return null;
}

async function main(): Promise<void> {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run npm run build first`);
  process.env.CREDGATE_TEST_BINARY = BINARY;
  const pki = makePki([HOST]);
  const origin = await startH2Origin(pki);
  const cg = await startCredgate({ env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], origin.port), CREDGATE_LOG_LEVEL: "error" } });
  onCleanup(() => cg.proc.kill("SIGTERM"));
  const r = await cg.api("POST", "/v1/secrets", { body: { name: "fuzz", type: "generic", value: `fuzz-${crypto.randomUUID()}`, hostPattern: HOST, injectionConfig: { headerName: "x-api-key" } } });
  if (r.status !== 201) throw new Error(`secret: ${r.status}`);
  const ca = await gatewayCa(cg);
  const authority = `${HOST}:${origin.port}`;
  const open = () => RawH2.open(cg.gatewayPort, authority, cg.keys.defaultAgentToken, ca.pem, HOST);
  const rss = () => {
    try {
      return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${cg.proc.pid}/status`, "utf8"))![1]) / 1024;
    } catch {
      return NaN;
    }
  };
  const rssStart = rss();

  const totals: Totals = { cases: 0, frames: 0, bytes: 0, goaways: new Map(), requestsAnswered: 0, probesOnFuzzed: { answered: 0, refused: 0, closed: 0 }, crashes: 0, hangs: 0, desyncs: 0, failures: [] };
  const fail = (kind: "hangs" | "desyncs" | "crashes", seed: number, what: string) => {
    totals[kind]++;
    const line = `${kind.slice(0, -1)} (seed ${seed}): ${what}`;
    totals.failures.push(line);
    console.error(line);
  };

  /** A fresh connection's request is answered with its own path. */
  const fresh = async (tag: string): Promise<string | null> => {
    let raw: RawH2 | null = null;
    try {
      raw = await Promise.race([open(), sleep(PROBE_MS).then(() => null)]);
      if (raw === null) return "the CONNECT and TLS handshake did not finish";
      const path = `/probe/${tag}`;
      raw.request(1, authority, path);
      const done = await raw.waitFor((f) => f.stream === 1 && (f.flags & 1) !== 0 && (f.type === FRAME.DATA || f.type === FRAME.HEADERS), PROBE_MS);
      if (!done) return `no answer in ${PROBE_MS} ms`;
      const got = echoedPath(raw.body(1).text);
      return got === path ? null : `answered ${JSON.stringify(raw.body(1).text.slice(0, 120))}`;
    } catch (err) {
      return (err as Error).message;
    } finally {
      raw?.close();
    }
  };

  const started = performance.now();
  const endAt = started + MINUTES * 60_000;
  let lastReport = started;
  console.error(`h2fuzz: ${MINUTES} min from seed ${FIRST_SEED}; gateway pid ${cg.proc.pid} (${BINARY}), RSS ${rssStart.toFixed(1)} MB`);
  for (let i = 0; i < MAX_CASES && performance.now() < endAt; i++) {
    const seed = (FIRST_SEED + i * 7919) >>> 0;
    const rand = new Rand(seed);
    const c = generate(rand, authority, String(seed));
    let raw: RawH2;
    try {
      raw = await open();
    } catch (err) {
      if (cg.proc.exitCode !== null) {
        fail("crashes", seed, `the gateway exited ${cg.proc.exitCode} before the case`);
        break;
      }
      fail("hangs", seed, `a connection could not be opened: ${(err as Error).message}`);
      continue;
    }
    // Written in random splits, now and then a turn apart.
    const all = Buffer.concat(c.bytes);
    for (let at = 0; at < all.length; ) {
      const n = 1 + rand.int(Math.min(4096, all.length - at));
      raw.write(all.subarray(at, at + n));
      at += n;
      if (rand.chance(0.2)) await sleep(0);
    }
    totals.cases++;
    totals.frames += c.frames;
    totals.bytes += all.length;

    // The well-formed requests' answers (or the connection's end).
    const settled = () => raw.closed || raw.frames.some((f) => f.type === FRAME.GOAWAY) || [...c.requests.keys()].every((id) => raw.body(id).ended || raw.frames.some((f) => f.type === FRAME.RST_STREAM && f.stream === id));
    const deadline = Date.now() + 3000;
    while (!settled() && Date.now() < deadline) await raw.waitFor(() => false, 50);

    for (const f of raw.frames) {
      const bad = malformed(f);
      if (bad) {
        fail("desyncs", seed, `the gateway sent ${bad}`);
        break;
      }
    }
    const streams = new Set(raw.frames.filter((f) => f.type === FRAME.DATA).map((f) => f.stream));
    for (const id of streams) {
      const got = echoedPath(raw.body(id).text);
      if (got === null) continue;
      const asked = c.mayAsk.get(id);
      if (got.startsWith("/probe/")) fail("desyncs", seed, `stream ${id} got the answer to another connection's probe, ${got}`);
      else if (asked !== undefined && !asked.has(got) && [...c.mayAsk.values()].some((paths) => paths.has(got))) fail("desyncs", seed, `stream ${id} asked for ${[...asked].join(" or ")} and got the answer for ${got}`);
      else if (c.requests.get(id) === got && raw.body(id).ended) totals.requestsAnswered++;
    }
    const goaway = raw.frames.find((f) => f.type === FRAME.GOAWAY);
    if (goaway) totals.goaways.set(goaway.payload.readUInt32BE(4), (totals.goaways.get(goaway.payload.readUInt32BE(4)) ?? 0) + 1);

    // The fuzzed connection, when the gateway kept it: sane settings and windows, then a probe.
    if (!raw.closed && !goaway) {
      const id = c.maxStream % 2 === 1 ? c.maxStream + 2 : c.maxStream + 1;
      raw.write(settings([[4, 65_535]]));
      raw.write(frame(FRAME.WINDOW_UPDATE, 0, 0, u32(1 << 20)));
      const path = `/fuzz/${seed}/probe`;
      raw.request(id, authority, path);
      const outcome = await raw.waitFor((f) => (f.stream === id && (f.type === FRAME.RST_STREAM || ((f.flags & 1) !== 0 && (f.type === FRAME.DATA || f.type === FRAME.HEADERS)))) || f.type === FRAME.GOAWAY, PROBE_MS);
      if (outcome === null && !raw.closed) {
        // The case may have left a frame half-sent (a length that runs past its bytes): the gateway rightly waits
        // for the rest. 16 KiB + 9 zero bytes complete any frame, and then read as DATA on stream 0, which the
        // gateway must answer with GOAWAY. Silence after that is a hang.
        raw.write(Buffer.alloc(16_384 + 9));
        const gone = await raw.waitFor((f) => f.type === FRAME.GOAWAY || (f.stream === id && f.type === FRAME.RST_STREAM), PROBE_MS);
        if (gone === null && !raw.closed) fail("hangs", seed, `the fuzzed connection neither answered stream ${id}, reset it, nor went away in ${PROBE_MS} ms, nor after a frame's worth of zeros`);
        else totals.probesOnFuzzed.closed++;
      } else if (outcome === null || outcome.type === FRAME.GOAWAY) totals.probesOnFuzzed.closed++;
      else if (outcome.type === FRAME.RST_STREAM) totals.probesOnFuzzed.refused++;
      else {
        const got = echoedPath(raw.body(id).text);
        if (outcome.type === FRAME.DATA && got !== path) fail("desyncs", seed, `the probe on the fuzzed connection got ${JSON.stringify(raw.body(id).text.slice(0, 120))}`);
        else totals.probesOnFuzzed.answered++;
      }
    }
    raw.close();

    if (cg.proc.exitCode !== null) {
      fail("crashes", seed, `the gateway exited ${cg.proc.exitCode}`);
      break;
    }
    const problem = await fresh(String(seed));
    if (problem) fail("hangs", seed, `a fresh connection's request: ${problem}`);

    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      console.error(`  ${Math.round((lastReport - started) / 1000)} s: ${totals.cases} cases, ${totals.frames} frames, ${totals.requestsAnswered} requests answered, crashes ${totals.crashes}, hangs ${totals.hangs}, desyncs ${totals.desyncs}, RSS ${rss().toFixed(1)} MB`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const rssEnd = rss();
  const goaways = [...totals.goaways.entries()].sort((a, b) => b[1] - a[1]).map(([code, n]) => `0x${code.toString(16)}×${n}`).join(" ");
  console.log(`h2fuzz: ${(seconds / 60).toFixed(1)} min, first seed ${FIRST_SEED}`);
  console.log(`cases ${totals.cases}, frames ${totals.frames} (${(totals.bytes / 1024 / 1024).toFixed(1)} MiB), well-formed requests answered ${totals.requestsAnswered}`);
  console.log(`GOAWAY codes: ${goaways || "none"}`);
  console.log(`probes on kept connections: answered ${totals.probesOnFuzzed.answered}, reset ${totals.probesOnFuzzed.refused}, gone ${totals.probesOnFuzzed.closed}`);
  console.log(`crashes ${totals.crashes}, hangs ${totals.hangs}, desyncs ${totals.desyncs}; gateway RSS ${rssStart.toFixed(1)} → ${rssEnd.toFixed(1)} MB`);
  for (const f of totals.failures.slice(0, 20)) console.log(`  ${f}`);
  await cg.stop();
  await origin.stop();
  process.exit(totals.crashes + totals.hangs + totals.desyncs > 0 ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
