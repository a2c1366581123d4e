// HTTP/2 floods and flow-control games against the real gateway (docs/gateway.md#http2-and-grpc), each played
// with one agent token: a PING flood and a SETTINGS flood from an agent that never reads (CVE-2019-9512/9515),
// WINDOW_UPDATE games (overflow, zero increments, idle and closed streams), an agent that shuts its window and
// asks for an endless response, and one that opens every window and stops reading its socket (either way the
// origin is held back and nothing piles up in the gateway), and "MadeYouReset"
// (CVE-2025-8671): resets the agent provokes the gateway into sending count toward the rapid-reset limit. The
// gateway's memory is read from /proc/<pid>/status (one gateway process: CREDGATE_GATEWAY_WORKERS=1), and a
// second agent is served while each attack runs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import * as http2 from "node:http2";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ERR, FRAME, frame, RawH2, settings, startH2Origin, type H2Origin } from "../support/h2.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";
import { eventually, gatewayCa, resolveEntries, ROOT, run } from "../support/gateway.ts";

const H2_HOST = "api.floods.test";
/** An h2 origin with an endless response that counts what it managed to write. */
const ENDLESS_H2 = "endless-h2.floods.test";
/** The same over HTTP/1.1 (Bun.serve). */
const ENDLESS_H1 = "endless-h1.floods.test";
const FLOODER = join(ROOT, "test/support/h2flood.cjs");

const FLOW_CONTROL_ERROR = 3;
const SETTINGS_INITIAL_WINDOW_SIZE = 4;
const MiB = 1024 * 1024;
/** What the gateway's memory may grow by under any one attack. */
const RSS_BUDGET_MB = 64;

let pki: TestPki;
let cg: RunningCredgate;
let origin: H2Origin;
let endless: EndlessH2;
let h1: TestUpstream;
/** Body bytes Bun.serve's endless stream has handed out. */
let h1Written = 0;
let ca: { pem: string; file: string };

interface EndlessH2 {
  port: number;
  /** Bytes `stream.write` took on `/endless` streams. */
  written: number;
  stop(): Promise<void>;
}

/** node:http2 origin: `/endless` writes 16 KiB chunks for as long as the stream takes them. */
async function startEndlessH2(p: TestPki): Promise<EndlessH2> {
  const server = http2.createSecureServer({ cert: readFileSync(p.certFile), key: readFileSync(p.keyFile), allowHTTP1: false });
  const o: EndlessH2 = { port: 0, written: 0, stop: async () => {} };
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  server.on("stream", (stream: http2.ServerHttp2Stream) => {
    stream.on("error", () => {});
    stream.respond({ ":status": 200, "content-type": "application/octet-stream" });
    const chunk = Buffer.alloc(16 * 1024, 0x62);
    const write = () => {
      while (!stream.destroyed) {
        o.written += chunk.length;
        if (!stream.write(chunk)) return void stream.once("drain", write);
      }
    };
    write();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  o.port = (server.address() as { port: number }).port;
  o.stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sessions) s.destroy();
      server.close(() => resolve());
    });
  return o;
}

beforeAll(async () => {
  pki = makePki([H2_HOST, ENDLESS_H2, ENDLESS_H1]);
  origin = await startH2Origin(pki);
  endless = await startEndlessH2(pki);
  h1 = startUpstream(pki);
  h1.handle((req) => {
    if (!new URL(req.url).pathname.startsWith("/endless")) return undefined;
    const chunk = new Uint8Array(16 * 1024).fill(0x63);
    // pull runs only when the response stream wants more: what it handed out is what the socket took.
    return new Response(
      new ReadableStream({
        pull(controller) {
          h1Written += chunk.length;
          controller.enqueue(chunk);
        },
      }),
      { headers: { "content-type": "application/octet-stream" } },
    );
  });
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: [resolveEntries([H2_HOST], origin.port), resolveEntries([ENDLESS_H2], endless.port), resolveEntries([ENDLESS_H1], h1.port)].join(","),
    },
  });
  ca = await gatewayCa(cg);
  // Warm: the h2 paths are loaded before the baseline is read.
  await served("warm");
});

afterAll(async () => {
  await cg?.stop();
  await origin?.stop();
  await endless?.stop();
  await h1?.stop();
});

/** The gateway process's resident memory, MB. */
function rssMb(): number {
  const status = readFileSync(`/proc/${cg.proc.pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

/** Watches the gateway's RSS every 100 ms; `stop` gives the peak. */
function watchRss(): { stop(): number } {
  let peak = rssMb();
  const timer = setInterval(() => (peak = Math.max(peak, rssMb())), 100);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssMb());
    },
  };
}

/** A second agent (curl, h2) is answered by the origin through the gateway. */
async function served(tag: string): Promise<void> {
  const r = await run(["curl", "-sS", "-i", "--http2", "--max-time", "20", "--proxy", `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`, "--cacert", ca.file, `https://${H2_HOST}:${origin.port}/second/${tag}`]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/HTTP\/2 200 /);
  expect(r.stdout).toContain(`"path":"/second/${tag}"`);
}

interface FloodResult {
  sent: number;
  stalled: boolean;
  writeError: string | null;
  pingAcks: number;
  settingsAcks: number;
  goaway: number | null;
  ended: boolean;
}

/** Runs the flooder (node) and a second agent once the flood is well under way. */
async function flood(kind: "ping" | "settings", bytes: number): Promise<{ result: FloodResult; growthMb: number }> {
  const before = rssMb();
  const watch = watchRss();
  const proc = spawn(["node", FLOODER, JSON.stringify({ gatewayPort: cg.gatewayPort, token: cg.keys.defaultAgentToken, authority: `${H2_HOST}:${origin.port}`, caFile: ca.file, kind, bytes })], { stdout: "pipe", stderr: "pipe" });
  const lines: Record<string, unknown>[] = [];
  const reading = (async () => {
    let buf = "";
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) {
      buf += decoder.decode(chunk);
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)) as Record<string, unknown>);
        buf = buf.slice(i + 1);
      }
    }
  })();
  // Once 8 MB are in (or the flooder is done), another agent is served.
  await eventually(() => (lines.some((l) => Number(l.progress ?? 0) >= 8 * MiB || "sent" in l || "error" in l) || proc.exitCode !== null ? true : null), 60_000);
  await served(kind);
  const code = await proc.exited;
  await reading;
  const growthMb = watch.stop() - before;
  const result = lines.find((l) => "sent" in l) as FloodResult | undefined;
  if (code !== 0 || !result) throw new Error(`flooder exited ${code}: ${JSON.stringify(lines)} ${await new Response(proc.stderr).text()}`);
  return { result, growthMb };
}

describe("control-frame floods from an agent that never reads", () => {
  test("50 MB of PINGs: GOAWAY ENHANCE_YOUR_CALM, memory flat, another agent served meanwhile", async () => {
    const { result, growthMb } = await flood("ping", 50 * MiB);
    console.log(`ping flood: sent ${(result.sent / MiB).toFixed(1)} MiB, ${result.pingAcks} PING ACKs read, gateway RSS +${growthMb.toFixed(1)} MB`);
    expect(growthMb).toBeLessThanOrEqual(RSS_BUDGET_MB);
    expect(result.goaway).toBe(ERR.ENHANCE_YOUR_CALM);
    expect(result.ended).toBe(true);
    // The answers that were queued are bounded: 1 MiB, plus what the sockets' buffers held (17 bytes each).
    expect(result.pingAcks * 17).toBeLessThan(32 * MiB);
    await served("after-ping");
    console.log(cg.output().split("\n").filter((l) => l.includes("H2DEBUG") || l.includes("protocol violation")).join("\n"));
  }, 120_000);

  test("50 MB of SETTINGS: GOAWAY ENHANCE_YOUR_CALM, memory flat, another agent served meanwhile", async () => {
    const { result, growthMb } = await flood("settings", 50 * MiB);
    console.log(`settings flood: sent ${(result.sent / MiB).toFixed(1)} MiB, ${result.settingsAcks} SETTINGS ACKs read, gateway RSS +${growthMb.toFixed(1)} MB`);
    expect(growthMb).toBeLessThanOrEqual(RSS_BUDGET_MB);
    expect(result.goaway).toBe(ERR.ENHANCE_YOUR_CALM);
    expect(result.ended).toBe(true);
    await served("after-settings");
  }, 120_000);

  test("an agent that reads its answers may ping as much as it likes", async () => {
    const raw = await open();
    for (let round = 0; round < 20; round++) {
      const pings = Buffer.concat(Array.from({ length: 2000 }, (_, i) => frame(FRAME.PING, 0, 0, Buffer.from([0, 0, 0, 0, 0, round, i >> 8, i & 0xff]))));
      raw.write(pings);
      await eventually(() => (raw.frames.filter((f) => f.type === FRAME.PING).length >= (round + 1) * 2000 ? true : null), 20_000);
    }
    expect(raw.frames.some((f) => f.type === FRAME.GOAWAY)).toBe(false);
    raw.request(1, authority(), "/after-pings");
    await eventually(() => (raw.body(1).ended ? true : null));
    expect(raw.body(1).text).toContain('"path":"/after-pings"');
    raw.close();
  }, 60_000);
});

const authority = () => `${H2_HOST}:${origin.port}`;
const open = () => RawH2.open(cg.gatewayPort, authority(), cg.keys.defaultAgentToken, ca.pem, H2_HOST);

function windowUpdate(stream: number, increment: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(increment >>> 0);
  return frame(FRAME.WINDOW_UPDATE, 0, stream, p);
}

const rstOn = (raw: RawH2, stream: number) => raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.stream === stream);

/** The connection still takes a stream: `id` is answered by the origin. */
async function stillServes(raw: RawH2, id: number): Promise<void> {
  raw.request(id, authority(), `/still/${id}`);
  await eventually(() => (raw.body(id).ended ? true : null));
  expect(raw.body(id).text).toContain(`"path":"/still/${id}"`);
}

describe("WINDOW_UPDATE games (RFC 9113 §6.9)", () => {
  test("a connection window pushed past 2^31-1 → GOAWAY FLOW_CONTROL_ERROR", async () => {
    const raw = await open();
    raw.write(windowUpdate(0, 0x7fffffff));
    expect(await raw.goaway()).toBe(FLOW_CONTROL_ERROR);
    raw.close();
  });

  test("a stream window pushed past 2^31-1 → RST_STREAM FLOW_CONTROL_ERROR, the connection kept", async () => {
    const raw = await open();
    raw.request(1, authority(), "/slow?ms=2000");
    raw.write(windowUpdate(1, 0x7fffffff));
    expect((await rstOn(raw, 1))!.payload.readUInt32BE(0)).toBe(FLOW_CONTROL_ERROR);
    await stillServes(raw, 3);
    expect(raw.frames.some((f) => f.type === FRAME.GOAWAY)).toBe(false);
    raw.close();
  });

  test("SETTINGS_INITIAL_WINDOW_SIZE that pushes an open stream's window past 2^31-1 → GOAWAY FLOW_CONTROL_ERROR", async () => {
    const raw = await open();
    raw.request(1, authority(), "/slow?ms=2000");
    raw.write(windowUpdate(1, 0x7fffffff - 65_535));
    raw.write(settings([[SETTINGS_INITIAL_WINDOW_SIZE, 0x7fffffff]]));
    expect(await raw.goaway()).toBe(FLOW_CONTROL_ERROR);
    raw.close();
  });

  test("a zero increment: on the connection → GOAWAY PROTOCOL_ERROR; on a stream → RST_STREAM PROTOCOL_ERROR", async () => {
    const a = await open();
    a.request(1, authority(), "/slow?ms=2000");
    a.write(windowUpdate(1, 0));
    expect((await rstOn(a, 1))!.payload.readUInt32BE(0)).toBe(ERR.PROTOCOL_ERROR);
    await stillServes(a, 3);
    a.write(windowUpdate(0, 0));
    expect(await a.goaway()).toBe(ERR.PROTOCOL_ERROR);
    a.close();
  });

  test("WINDOW_UPDATE on an idle stream → GOAWAY PROTOCOL_ERROR; on a closed stream it is ignored", async () => {
    const a = await open();
    await stillServes(a, 1);
    a.write(windowUpdate(1, 1000));
    await stillServes(a, 3);
    expect(a.frames.some((f) => f.type === FRAME.GOAWAY || f.type === FRAME.RST_STREAM)).toBe(false);
    a.write(windowUpdate(99, 1000));
    expect(await a.goaway()).toBe(ERR.PROTOCOL_ERROR);
    a.close();
  });
});

describe("an agent that shuts its window and never reads an endless response", () => {
  for (const [kind, host, writtenSoFar] of [
    ["h2", ENDLESS_H2, () => endless.written],
    ["HTTP/1.1", ENDLESS_H1, () => h1Written],
  ] as const) {
    test(`${kind} origin: held back by the agent's window, nothing piles up in the gateway, others served`, async () => {
      const before = rssMb();
      const watch = watchRss();
      const port = kind === "h2" ? endless.port : h1.port;
      const raw = await RawH2.open(cg.gatewayPort, `${host}:${port}`, cg.keys.defaultAgentToken, ca.pem, host);
      raw.write(settings([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]));
      const start = writtenSoFar();
      raw.request(1, `${host}:${port}`, "/endless");
      expect(await raw.waitFor((f) => f.type === FRAME.HEADERS && f.stream === 1)).not.toBeNull();
      // The origin writes until the backpressure reaches it, then stops: its count settles.
      let last = -1;
      await eventually(
        () => {
          const now = writtenSoFar();
          const settled = now === last;
          last = now;
          return settled ? true : null;
        },
        20_000,
        1500,
      );
      await served(`window-${kind}`);
      const written = writtenSoFar() - start;
      const growthMb = watch.stop() - before;
      console.log(`${kind} endless origin behind a shut window: origin wrote ${(written / MiB).toFixed(2)} MiB, gateway RSS +${growthMb.toFixed(1)} MB`);
      expect(raw.body(1).text.length).toBe(0);
      expect(written).toBeLessThan(16 * MiB);
      expect(growthMb).toBeLessThanOrEqual(RSS_BUDGET_MB);
      // Opening the window lets exactly that much through.
      raw.write(windowUpdate(0, 100_000));
      raw.write(windowUpdate(1, 100_000));
      await eventually(() => (raw.body(1).text.length >= 100_000 ? true : null));
      expect(raw.body(1).text.length).toBe(100_000);
      raw.close();
    }, 60_000);
  }
});

describe("an agent with every window open that stops reading its socket", () => {
  test("an endless h2 origin: held back by TCP through the gateway, memory flat, others served", async () => {
    const before = rssMb();
    const watch = watchRss();
    const start = endless.written;
    const proc = spawn(["node", FLOODER, JSON.stringify({ gatewayPort: cg.gatewayPort, token: cg.keys.defaultAgentToken, authority: `${ENDLESS_H2}:${endless.port}`, caFile: ca.file, kind: "unread", path: "/endless", holdMs: 60_000 })], { stdout: "pipe", stderr: "pipe" });
    try {
      // The origin writes until the sockets' buffers are full and the backpressure reaches it: its count settles.
      let last = -1;
      await eventually(
        () => {
          const now = endless.written;
          const settled = now > start && now === last;
          last = now;
          return settled ? true : null;
        },
        30_000,
        1500,
      );
      await served("unread");
      const written = endless.written - start;
      const growthMb = watch.stop() - before;
      console.log(`endless h2 origin, agent not reading its socket: origin wrote ${(written / MiB).toFixed(2)} MiB, gateway RSS +${growthMb.toFixed(1)} MB`);
      // What the kernel's socket buffers hold on both hops, and a window's worth in the gateway; never the stream.
      expect(written).toBeLessThan(48 * MiB);
      expect(growthMb).toBeLessThanOrEqual(RSS_BUDGET_MB);
    } finally {
      proc.kill();
      await proc.exited;
    }
  }, 60_000);
});

describe("MadeYouReset (CVE-2025-8671): resets the agent provokes count toward the rapid-reset limit", () => {
  async function provoke(kind: string, provocation: (raw: RawH2, id: number) => void): Promise<void> {
    const raw = await open();
    // Each stream reaches the origin (its request is complete), then the agent makes the gateway reset it.
    for (let i = 0; i < 250 && !raw.closed; i++) {
      const id = 1 + 2 * i;
      raw.request(id, authority(), `/slow?ms=3000&made-you-reset=${kind}-${i}`);
      provocation(raw, id);
      if (i % 50 === 49) await raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.stream === id, 5_000);
    }
    expect(await raw.goaway()).toBe(ERR.ENHANCE_YOUR_CALM);
    // The gateway reset up to the limit, and not one stream more.
    const resets = raw.frames.filter((f) => f.type === FRAME.RST_STREAM).length;
    expect(resets).toBe(200);
    raw.close();
    await served(`after-${kind}`);
  }

  test("a zero WINDOW_UPDATE on each open stream", () => provoke("zero-window", (raw, id) => raw.write(windowUpdate(id, 0))), 60_000);

  test("DATA on each half-closed stream", () => provoke("data", (raw, id) => raw.write(frame(FRAME.DATA, 0, id, Buffer.from("late")))), 60_000);

  test("a window overflow on each open stream", () => provoke("overflow", (raw, id) => raw.write(windowUpdate(id, 0x7fffffff))), 60_000);

  test("client resets and provoked resets share one limit", async () => {
    const raw = await open();
    for (let i = 0; i < 250 && !raw.closed; i++) {
      const id = 1 + 2 * i;
      raw.request(id, authority(), `/slow?ms=3000&shared=${i}`);
      if (i % 2 === 0) raw.write(frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, ERR.CANCEL])));
      else raw.write(windowUpdate(id, 0));
    }
    expect(await raw.goaway()).toBe(ERR.ENHANCE_YOUR_CALM);
    raw.close();
  }, 60_000);

  test("a stream the gateway refuses (over the concurrency limit) is not counted", async () => {
    const raw = await open();
    // 100 streams held open, then 150 more refused one by one: no GOAWAY.
    for (let i = 0; i < 250; i++) raw.request(1 + 2 * i, authority(), "/slow?ms=1500");
    await eventually(() => (raw.frames.filter((f) => f.type === FRAME.RST_STREAM).length >= 150 ? true : null), 20_000);
    expect(raw.frames.filter((f) => f.type === FRAME.RST_STREAM).every((f) => f.payload.readUInt32BE(0) === ERR.REFUSED_STREAM)).toBe(true);
    await eventually(() => (raw.body(1).ended ? true : null), 20_000);
    expect(raw.frames.some((f) => f.type === FRAME.GOAWAY)).toBe(false);
    raw.close();
  }, 60_000);
});
