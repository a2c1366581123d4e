// What credgate logs is what the origin executed, request for request (docs/gateway.md#message-framing): a
// property over generated traffic through the real gateway — HTTP/2 streams written frame by frame (declared
// lengths that agree and disagree with their DATA, END_STREAM on HEADERS, DATA or trailers, client resets,
// heads and bodies split across writes, streams of a burst interleaved frame by frame, several connections at
// once) and HTTP/1.1 requests (Content-Length or chunked, some cut off mid-body) — against a recording HTTP/1.1
// origin of the test's own that parses every request on each pooled connection the way a keep-alive server does,
// and (for about a quarter of the connections) a recording h2 origin.
//
// Checked for every request: a well-formed one is answered with its own response, reaches the origin exactly
// once with exactly its body, and is logged allowed 200; a malformed stream is refused (RST_STREAM
// PROTOCOL_ERROR or 400), never reaches the origin whole, and is logged blocked 400 or not at all; a request the
// agent abandoned never reaches the origin whole and is not logged as allowed; the origin sees nothing else
// (a smuggled request would be a request nobody sent). Paths starting `/early` are answered by the origin as
// soon as their head is read; those are sent whole in one write (a split malformed one may have its head
// forwarded before it turns out malformed, and then its early answer has already gone back).
//
// RUNS × the generated requests: about 2,500 requests (the exact number is printed), 10–30 s on a loaded CI box.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { ERR, FLAG, FRAME, frame, headerBlock, RawH2, statusOf } from "../support/h2.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, type TestPki } from "../support/upstream.ts";
import { startRecordingH2Origin, startRecordingOrigin, type RecordedRequest, type RecordingOrigin } from "../support/recordingOrigin.ts";
import { eventually, gatewayCa, openTlsTunnel, resolveEntries } from "../support/gateway.ts";

const HOST = "property.framing.test";
/** The same, served by an h2 origin (the gateway speaks h2 upstream: no early answers there). */
const H2_HOST = "h2.property.framing.test";
const RUNS = 100;

let pki: TestPki;
let cg: RunningCredgate;
let origin: RecordingOrigin;
let h2Origin: RecordingOrigin;
let ca: { pem: string; file: string };

/** Where a connection goes: the HTTP/1.1 origin or the h2 one. */
type Target = "h1" | "h2";
const hostOf = (t: Target) => (t === "h1" ? HOST : H2_HOST);
const authorityOf = (t: Target) => (t === "h1" ? `${HOST}:${origin.port}` : `${H2_HOST}:${h2Origin.port}`);
/** Every request either origin has read whole. */
const executedAll = () => [...origin.requests, ...h2Origin.requests];

beforeAll(async () => {
  pki = makePki([HOST, H2_HOST]);
  origin = await startRecordingOrigin(pki);
  h2Origin = await startRecordingH2Origin(pki);
  cg = await startCredgate({
    env: { CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: [resolveEntries([HOST], origin.port), resolveEntries([H2_HOST], h2Origin.port)].join(",") },
  });
  ca = await gatewayCa(cg);
});

afterAll(async () => {
  await cg?.stop();
  await origin?.stop();
  await h2Origin?.stop();
});

// ── the generated traffic ─────────────────────────────────────────────────────────────────────────────────

type Ending = "data" | "headers" | "trailers" | "reset";

interface H2Spec {
  early: boolean;
  method: string;
  /** content-length, or null for none. */
  declared: number | null;
  /** Body bytes actually sent, in this many DATA frames. */
  actual: number;
  frames: number;
  ending: Ending;
  /** The head (and the first DATA frames) in one write, the rest in a later one. */
  split: boolean;
}

interface H1Spec {
  early: boolean;
  method: string;
  length: number;
  chunked: boolean;
  /** The agent closes its connection half-way through the body (always its connection's last request). */
  abort: boolean;
}

const h2Spec: fc.Arbitrary<H2Spec> = fc
  .record({
    early: fc.boolean(),
    method: fc.constantFrom("GET", "POST", "PUT"),
    declared: fc.option(fc.nat(400), { nil: null, freq: 4 }),
    delta: fc.constantFrom(0, 0, 0, 0, -1, 1, -7, 13, -1000),
    free: fc.nat(400),
    frames: fc.integer({ min: 1, max: 3 }),
    ending: fc.constantFrom<Ending>("data", "data", "data", "headers", "trailers", "trailers", "reset"),
    split: fc.boolean(),
  })
  .map(({ early, method, declared, delta, free, frames, ending, split }) => {
    let actual = declared === null ? free : Math.max(0, declared + delta);
    if (ending === "headers") actual = 0;
    const spec: H2Spec = { early, method, declared, actual, frames, ending, split };
    // An early answer goes back as soon as the head is forwarded: what may turn out malformed or be abandoned later
    // is sent whole, and a client reset only on a late path.
    if (early && (ending === "reset" || (split && malformed(spec)))) spec.early = false;
    return spec;
  });

const h1Spec: fc.Arbitrary<H1Spec> = fc.record({
  early: fc.boolean(),
  method: fc.constantFrom("GET", "POST", "PATCH"),
  length: fc.nat(400),
  chunked: fc.boolean(),
  abort: fc.integer({ min: 0, max: 11 }).map((n) => n === 0),
});

const target = fc.constantFrom<Target>("h1", "h1", "h1", "h2");
const plan = fc.record({
  h2: fc.array(fc.record({ to: target, specs: fc.array(h2Spec, { minLength: 4, maxLength: 40 }) }), { minLength: 1, maxLength: 3 }),
  h1: fc.array(fc.record({ to: target, specs: fc.array(h1Spec, { minLength: 1, maxLength: 12 }) }), { maxLength: 2 }),
  burst: fc.integer({ min: 1, max: 8 }),
  seed: fc.integer(),
});

/** The stream's DATA disagrees with its declared length (RFC 9113 §8.1.1). */
function malformed(s: H2Spec): boolean {
  if (s.declared === null) return false;
  if (s.actual > s.declared) return true;
  return s.ending !== "reset" && s.actual !== s.declared;
}

/** What must be true of one request afterwards. */
type Expected = "done" | "refused" | "abandoned";

interface Sent {
  path: string;
  body: Buffer;
  expected: Expected;
  /** Refused before it reached the pipeline (END_STREAM on HEADERS): no log row. */
  unlogged: boolean;
  /** How it was sent, for the failure message. */
  spec: H2Spec | H1Spec;
}

/** A body nobody could mistake for another: the path, then a counter, to `n` bytes. */
function bodyFor(path: string, n: number): Buffer {
  let s = "";
  for (let i = 0; s.length < n; i++) s += `${path}#${i};`;
  return Buffer.from(s.slice(0, n), "latin1");
}

/** A small deterministic generator for the interleavings (fast-check gives the seed). */
function prng(seed: number): () => number {
  let x = seed | 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/**
 * The frames of several streams merged in a random order that keeps each stream's own order, and opens the
 * streams in the order of their ids (a HEADERS below the highest id opened so far is a connection error).
 */
function interleave(lists: Buffer[][], rnd: () => number, opening: boolean): Buffer {
  const queues = lists.map((l) => [...l]);
  const out: Buffer[] = [];
  let opened = opening ? 0 : queues.length;
  for (;;) {
    const ready: number[] = [];
    for (let i = 0; i < queues.length; i++) if (queues[i]!.length > 0 && i <= opened) ready.push(i);
    if (ready.length === 0) break;
    const i = ready[Math.floor(rnd() * ready.length)]!;
    if (i === opened) opened++;
    out.push(queues[i]!.shift()!);
  }
  return Buffer.concat(out);
}

// ── sending ───────────────────────────────────────────────────────────────────────────────────────────────

/** A stream's frames: the first write's and the second's (empty unless split). */
function h2Frames(stream: number, s: H2Spec, path: string, body: Buffer, authority: string): [Buffer[], Buffer[]] {
  const fields: [string, string][] = [
    [":method", s.method],
    [":scheme", "https"],
    [":authority", authority],
    [":path", path],
  ];
  if (s.declared !== null) fields.push(["content-length", String(s.declared)]);
  const frames: Buffer[] = [frame(FRAME.HEADERS, FLAG.END_HEADERS | (s.ending === "headers" ? FLAG.END_STREAM : 0), stream, headerBlock(fields))];
  if (s.ending !== "headers") {
    const n = Math.min(s.frames, Math.max(1, body.length));
    const size = Math.ceil(body.length / n);
    for (let i = 0; i < n; i++) {
      const part = body.subarray(i * size, (i + 1) * size);
      const last = i === n - 1;
      if (part.length === 0 && !(last && s.ending === "data")) continue;
      frames.push(frame(FRAME.DATA, last && s.ending === "data" ? FLAG.END_STREAM : 0, stream, part));
    }
    if (s.ending === "trailers") frames.push(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, stream, headerBlock([["x-checksum", "abc"]])));
    if (s.ending === "reset") {
      const p = Buffer.alloc(4);
      p.writeUInt32BE(ERR.CANCEL);
      frames.push(frame(FRAME.RST_STREAM, 0, stream, p));
    }
  }
  if (!s.split || frames.length < 2) return [frames, []];
  const cut = 1 + Math.floor((frames.length - 1) / 2);
  return [frames.slice(0, cut), frames.slice(cut)];
}

/** One h2 connection's requests, in bursts of interleaved streams; checks what each stream got back. */
async function runH2(to: Target, specs: H2Spec[], run: string, conn: number, burst: number, rnd: () => number, sent: Sent[], open: (() => void)[]): Promise<void> {
  const authority = authorityOf(to);
  const h2 = await RawH2.open(cg.gatewayPort, authority, cg.keys.defaultAgentToken, ca.pem, hostOf(to));
  // Closed once the origin has read every body: an early answer comes back before it has.
  open.push(() => h2.close());
  let stream = 1;
  const doneStreams = new Map<number, string>();
  {
    for (let at = 0; at < specs.length; at += burst) {
      const group = specs.slice(at, at + burst).map((s, i) => {
        const path = `${s.early ? "/early" : ""}/p/${run}/h2-${conn}-${at + i}`;
        const body = bodyFor(path, s.actual);
        const id = stream;
        stream += 2;
        const bad = malformed(s);
        const expected: Expected = bad ? "refused" : s.ending === "reset" ? "abandoned" : "done";
        const record: Sent = { path, body, expected, unlogged: bad && s.ending === "headers", spec: s };
        sent.push(record);
        return { s, id, record, frames: h2Frames(id, s, path, body, authority) };
      });
      h2.write(interleave(group.map((g) => g.frames[0]), rnd, true));
      if (group.some((g) => g.frames[1].length > 0)) {
        await Bun.sleep(15);
        h2.write(interleave(group.map((g) => g.frames[1]), rnd, false));
      }
      for (const g of group) {
        if (g.record.expected === "abandoned") continue;
        const end = await h2.waitFor(
          (f) => f.stream === g.id && (f.type === FRAME.RST_STREAM || ((f.flags & FLAG.END_STREAM) !== 0 && (f.type === FRAME.DATA || f.type === FRAME.HEADERS))),
          20_000,
        );
        if (end === null) {
          const away = h2.frames.find((f) => f.type === FRAME.GOAWAY);
          throw new Error(`${g.record.path}: no answer (${JSON.stringify(g.s)})${away ? `; GOAWAY ${away.payload.readUInt32BE(4)} ${away.payload.subarray(8).toString()}` : ""}${h2.closed ? "; closed" : ""}`);
        }
        const headersFrame = h2.frames.find((f) => f.stream === g.id && f.type === FRAME.HEADERS);
        const status = headersFrame ? statusOf(headersFrame) : null;
        if (g.record.expected === "refused") {
          const reset = end.type === FRAME.RST_STREAM ? end.payload.readUInt32BE(0) : null;
          if (!(reset === ERR.PROTOCOL_ERROR || status === 400)) throw new Error(`${g.record.path}: malformed but answered ${status} / reset ${reset} (${JSON.stringify(g.s)})`);
          continue;
        }
        if (end.type === FRAME.RST_STREAM || status !== 200) throw new Error(`${g.record.path}: answered ${status}, reset ${end.type === FRAME.RST_STREAM} (${JSON.stringify(g.s)})`);
        const answer = JSON.parse(h2.body(g.id).text);
        if (answer.path !== g.record.path) throw new Error(`${g.record.path} got the answer to ${answer.path}`);
        doneStreams.set(g.id, `${g.record.path} ${JSON.stringify(g.s)}`);
      }
    }
  }
  await Bun.sleep(50);
  for (const f of h2.frames) if (f.type === FRAME.RST_STREAM && doneStreams.has(f.stream)) throw new Error(`${doneStreams.get(f.stream)}: answered, then reset ${f.payload.readUInt32BE(0)}`);
  // Nothing above is a connection error: the gateway kept the connection.
  const away = h2.frames.find((f) => f.type === FRAME.GOAWAY);
  if (away) throw new Error(`GOAWAY ${away.payload.readUInt32BE(4)} ${away.payload.subarray(8).toString()} on ${JSON.stringify(specs)}`);
}

/** One HTTP/1.1 tunnel's requests, one after another (an abort ends it). */
async function runH1(to: Target, specs: H1Spec[], run: string, conn: number, sent: Sent[], open: (() => void)[]): Promise<void> {
  const authority = authorityOf(to);
  const t = await openTlsTunnel(cg.gatewayPort, authority, cg.keys.defaultAgentToken, ca.pem, hostOf(to));
  open.push(() => t.tls.destroy());
  {
    for (let i = 0; i < specs.length; i++) {
      const s = specs[i]!;
      const abort = s.abort && s.length > 1;
      const path = `${s.early && !abort ? "/early" : ""}/p/${run}/h1-${conn}-${i}`;
      const body = bodyFor(path, s.length);
      const record: Sent = { path, body, expected: abort ? "abandoned" : "done", unlogged: false, spec: s };
      sent.push(record);
      const framing = s.chunked ? "transfer-encoding: chunked" : `content-length: ${body.length}`;
      const head = Buffer.from(`${s.method} ${path} HTTP/1.1\r\nhost: ${authority}\r\n${framing}\r\n\r\n`, "latin1");
      const payload = s.chunked ? Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n"), Buffer.from("0\r\n\r\n")]) : body;
      const chunkedBody = s.chunked && body.length === 0 ? Buffer.from("0\r\n\r\n") : payload;
      if (abort) {
        t.tls.write(Buffer.concat([head, chunkedBody.subarray(0, Math.floor(chunkedBody.length / 2))]));
        await Bun.sleep(15);
        t.tls.destroy();
        return;
      }
      t.tls.write(Buffer.concat([head, chunkedBody]));
      const res = await t.reader.response();
      if (res.status !== 200) throw new Error(`${path}: answered ${res.status} ${res.text}`);
      const answer = JSON.parse(res.text);
      if (answer.path !== path) throw new Error(`${path} got the answer to ${answer.path}`);
    }
  }
}

/** This run's requests as the origin read them, once it has read every body it is going to get. */
async function settled(run: string, sent: Sent[]) {
  const ofRun = () => executedAll().filter((r) => r.path.startsWith(`/p/${run}/`) || r.path.startsWith(`/early/p/${run}/`));
  // An early answer comes back before the origin has read the body: wait for the last bytes to land.
  const done = sent.filter((s) => s.expected === "done").length;
  await eventually(() => ofRun().length >= done, 5_000, 10);
  return ofRun();
}

/**
 * The origin: each finished request exactly once with exactly its body, nothing else of this run whole.
 * (Abandoned and refused ones are checked again at the end, once every connection has settled.)
 */
function checkOrigin(run: string, sent: Sent[], seen: RecordedRequest[]): void {
  const byPath = new Map(sent.map((s) => [s.path, s]));
  for (const r of seen) {
    const s = byPath.get(r.path);
    if (!s) throw new Error(`the origin executed ${r.method} ${r.path}, which nobody sent (run ${run})`);
    if (s.expected !== "done") throw new Error(`the origin executed ${r.path} (${s.expected})`);
    if (!r.body.equals(s.body)) throw new Error(`${r.path}: the origin read ${r.body.length} bytes, not the ${s.body.length} sent`);
  }
  for (const s of sent) {
    if (s.expected !== "done") continue;
    const n = seen.filter((r) => r.path === s.path).length;
    if (n !== 1) throw new Error(`${s.path}: executed ${n} times (${JSON.stringify(s.spec)}); the origin is reading ${JSON.stringify([...origin.reading.values()])}, cut off ${JSON.stringify(origin.cutOff.filter((c) => c.includes(s.path)))}; `);
  }
}

// ── the property ──────────────────────────────────────────────────────────────────────────────────────────

/** Every row the gateway logged for both origins' hosts (all pages). */
async function allRows(): Promise<any[]> {
  const rows: any[] = [];
  for (const t of ["h1", "h2"] as const) {
    let cursor: string | null = null;
    do {
      const q: string = `/v1/logs?host=${encodeURIComponent(authorityOf(t))}&limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const r = await cg.api("GET", q);
      rows.push(...r.body.data);
      cursor = r.body.nextCursor;
    } while (cursor);
  }
  return rows;
}

test(
  "what credgate logs equals what the origin executed, over generated h2 and HTTP/1.1 traffic",
  async () => {
    const everything: Sent[] = [];
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        const run = `r${runs++}`;
        const sent: Sent[] = [];
        const rnd = prng(p.seed);
        const open: (() => void)[] = [];
        try {
          await Promise.all([...p.h2.map((c, i) => runH2(c.to, c.specs, run, i, p.burst, rnd, sent, open)), ...p.h1.map((c, i) => runH1(c.to, c.specs, run, i, sent, open))]);
          everything.push(...sent);
          checkOrigin(run, sent, await settled(run, sent));
        } finally {
          for (const close of open) close();
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    console.log(`framing property: ${everything.length} requests (${everything.filter((s) => s.expected === "refused").length} malformed, ${everything.filter((s) => s.expected === "abandoned").length} abandoned) over ${runs} runs; executed: ${origin.requests.length} by the HTTP/1.1 origin, ${h2Origin.requests.length} by the h2 one`);

    // Nothing the origin ever parsed is unknown, or not meant to be executed.
    await Bun.sleep(300);
    const sentBy = new Map(everything.map((s) => [s.path, s]));
    for (const r of executedAll()) {
      const s = sentBy.get(r.path);
      expect(s === undefined ? `unknown ${r.method} ${r.path}` : s.expected === "done" ? "done" : `${s.expected} ${r.path}`).toBe("done");
    }
    expect(origin.refused).toBe(0);

    // The log, request for request: allowed 200 exactly for what the origin executed; a malformed stream is
    // blocked 400 (or unlogged when refused before the pipeline); an abandoned one is never logged as allowed.
    const mustLog = everything.filter((s) => s.expected !== "abandoned" && !s.unlogged).length;
    const rows = await eventually(async () => {
      const all = await allRows();
      return all.length >= mustLog ? all : null;
    }, 20_000);
    expect(rows).not.toBeNull();
    const rowsBy = new Map<string, any[]>();
    for (const row of rows!) rowsBy.set(row.path, [...(rowsBy.get(row.path) ?? []), row]);
    const executed = new Set(executedAll().map((r) => r.path));
    const mismatches: string[] = [];
    for (const s of everything) {
      const logged = rowsBy.get(s.path) ?? [];
      const got = logged.map((r) => `${r.decision} ${r.status}`).join(", ") || "none";
      const allowed = logged.length === 1 && logged[0].decision === "allowed" && logged[0].status === 200;
      if (allowed !== executed.has(s.path)) mismatches.push(`${s.path}: logged ${got}, executed ${executed.has(s.path)}`);
      if (s.expected === "refused" && !(logged.length === 0 ? s.unlogged : logged.length === 1 && got === "blocked 400")) mismatches.push(`${s.path}: malformed, logged ${got}`);
      if (s.expected === "done" && !allowed) mismatches.push(`${s.path}: logged ${got}`);
      if (logged.length > 1) mismatches.push(`${s.path}: ${logged.length} rows`);
    }
    expect(mismatches).toEqual([]);
  },
  240_000,
);
