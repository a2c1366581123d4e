// gRPC through the real gateway (docs/gateway.md#http2-and-grpc, docs/agent-errors.md#grpc): real clients —
// @grpc/grpc-js under node and Python grpcio (/usr/bin/python3) — set the proxy as users do
// (grpc_proxy=http://x:<token>@…) and make all four call kinds to a real grpc-js origin over TLS, through
// the MITM gateway on HTTP/2 both sides: messages and trailers pass, metadata is injected (and never seen by
// the client), every call is one log row; refusals reach the client as gRPC statuses, never JSON; an
// HTTP/1.1-only origin is status 14; a token regenerated while the connection is open answers the next call 16.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { join } from "node:path";
import { startGrpcOrigin, type GrpcOrigin } from "../support/grpc.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { basic, eventually, gatewayCa, openConnect, resolveEntries, ROOT, run } from "../support/gateway.ts";
import { clearOfWindowEdge, HOUR_MS } from "../support/windowEdge.ts";

const HOST = "api.grpc.test";
const BLOCKED = "blocked.grpc.test";
const LIMITED = "limited.grpc.test";
const H1_ONLY = "h1only.grpc.test";
const SECRET = `GRPC-SECRET-${crypto.randomUUID()}`;
const NODE_CLIENT = join(ROOT, "test/support/grpc/client.cjs");
const PY_CLIENT = join(ROOT, "test/support/grpc/client.py");

let cg: RunningCredgate;
let origin: GrpcOrigin;
let h1: TestUpstream;
let ca: { pem: string; file: string };
let proxy: string;

beforeAll(async () => {
  const pki = makePki([HOST, BLOCKED, LIMITED, H1_ONLY]);
  origin = await startGrpcOrigin(pki);
  h1 = startUpstream(pki);
  cg = await startCredgate({
    env: {
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_RESOLVE: [resolveEntries([HOST, BLOCKED, LIMITED], origin.port), resolveEntries([H1_ONLY], h1.port)].join(","),
    },
  });
  ca = await gatewayCa(cg);
  proxy = `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`;
  const secret = await cg.api("POST", "/v1/secrets", {
    body: { name: "grpc bearer", type: "generic", value: SECRET, hostPattern: HOST, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
  });
  expect(secret.status).toBe(201);
  for (const rule of [
    { name: "No blocked host", action: "block", targets: [{ kind: "network", hostPattern: BLOCKED }] },
    { name: "One call an hour", action: "allow", rateLimit: 1, rateLimitWindow: "hour", targets: [{ kind: "network", hostPattern: LIMITED }] },
  ]) {
    const r = await cg.api("POST", "/v1/policy/rules", { body: rule });
    expect(r.status).toBe(201);
  }
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
});

afterAll(async () => {
  await cg?.stop();
  await origin?.stop();
  await h1?.stop();
});

interface Outcome {
  ok: boolean;
  res?: { text: string; n: number };
  msgs?: { text: string; n: number }[];
  code?: number;
  details?: string;
  trailers?: Record<string, string>;
}

type Call = { kind: "unary" | "server"; text: string; n?: number; metadata?: Record<string, string> } | { kind: "client" | "bidi"; texts: string[]; metadata?: Record<string, string> };

async function nodeCalls(target: string, calls: Call[], token = cg.keys.defaultAgentToken): Promise<{ outcomes: Outcome[]; stdout: string; stderr: string }> {
  const r = await run(["node", NODE_CLIENT, JSON.stringify({ target, caFile: ca.file, calls })], {
    env: { ...process.env, grpc_proxy: `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, NODE_PATH: join(ROOT, "node_modules") },
    timeoutMs: 30_000,
  });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return { outcomes: r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Outcome), stdout: r.stdout, stderr: r.stderr };
}

const ALL_KINDS: Call[] = [
  { kind: "unary", text: "hello", n: 41 },
  { kind: "server", text: "tick", n: 5 },
  { kind: "client", texts: ["a", "b", "c"] },
  { kind: "bidi", texts: ["x", "y", "z"] },
];

function expectAllKinds(outcomes: Outcome[]) {
  expect(outcomes).toHaveLength(4);
  const [unary, server, client, bidi] = outcomes;
  expect(unary).toMatchObject({ ok: true, res: { text: "echo:hello", n: 42 } });
  expect(server!.ok).toBe(true);
  expect(server!.msgs!.map((m) => m.text)).toEqual(["tick#0", "tick#1", "tick#2", "tick#3", "tick#4"]);
  expect(client).toMatchObject({ ok: true, res: { text: "a,b,c", n: 3 } });
  expect(bidi!.ok).toBe(true);
  expect(bidi!.msgs!.map((m) => m.text)).toEqual(["echo:x", "echo:y", "echo:z"]);
}

/** The origin's calls since `from`, by method. */
const callsSince = (from: number) => origin.seen.slice(from);

describe("@grpc/grpc-js through grpc_proxy=http://x:<token>@gateway", () => {
  test("all four call kinds pass with their messages and trailers; metadata is injected and never reaches the client", async () => {
    const from = origin.seen.length;
    const { outcomes, stdout } = await nodeCalls(`${HOST}:${origin.port}`, ALL_KINDS);
    expectAllKinds(outcomes);
    // The origin's own trailer reached the client.
    expect(outcomes[0]!.trailers!["x-origin-trailer"]).toBe("unary");
    const seen = callsSince(from);
    expect(seen.map((s) => s.method)).toEqual(["Unary", "ServerStream", "ClientStream", "Bidi"]);
    for (const s of seen) {
      expect(s.metadata.authorization).toBe(`Bearer ${SECRET}`);
      expect(s.metadata["proxy-authorization"]).toBeUndefined();
      expect(JSON.stringify(s.metadata)).not.toContain(cg.keys.defaultAgentToken);
    }
    expect(stdout).not.toContain(SECRET);
  });

  test("every call is one log row, with its path and status 200", async () => {
    const { outcomes } = await nodeCalls(`${HOST}:${origin.port}`, [{ kind: "unary", text: "logged" }, { kind: "server", text: "s", n: 2 }]);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    const rows = await eventually(async () => {
      const res = await cg.api("GET", "/v1/logs?limit=500");
      const found = (res.body?.data ?? []).filter((r: any) => r.host.startsWith(HOST));
      return found.length >= 6 ? found : null;
    });
    const paths = rows!.map((r: any) => r.path);
    for (const p of ["/credgate.test.Echo/Unary", "/credgate.test.Echo/ServerStream", "/credgate.test.Echo/ClientStream", "/credgate.test.Echo/Bidi"]) expect(paths).toContain(p);
    for (const r of rows!) expect(r).toMatchObject({ method: "POST", status: 200 });
  });

  test("an origin's error status and its percent-encoded message pass through unchanged", async () => {
    const { outcomes } = await nodeCalls(`${HOST}:${origin.port}`, [{ kind: "unary", text: "fail" }]);
    expect(outcomes[0]).toMatchObject({ ok: false, code: 9, details: "no ünïcode 100%" });
  });

  test("a policy block is PERMISSION_DENIED (7) with `<error>: <message>`, and the origin sees nothing", async () => {
    const from = origin.seen.length;
    const { outcomes } = await nodeCalls(`${BLOCKED}:${origin.port}`, [{ kind: "unary", text: "no" }, { kind: "bidi", texts: ["no"] }]);
    for (const o of outcomes) {
      expect(o.ok).toBe(false);
      expect(o.code).toBe(7);
      expect(o.details).toBe(`blocked_by_policy: Blocked by credgate policy rule "No blocked host". POST /credgate.test.Echo/${o === outcomes[0] ? "Unary" : "Bidi"} is not allowed. Review this agent's access in your credgate dashboard.`);
    }
    expect(callsSince(from)).toHaveLength(0);
  });

  test("a rate limit is RESOURCE_EXHAUSTED (8) once the window's call is spent", async () => {
    await clearOfWindowEdge(HOUR_MS);
    const { outcomes } = await nodeCalls(`${LIMITED}:${origin.port}`, [{ kind: "unary", text: "first" }, { kind: "unary", text: "second" }]);
    expect(outcomes[0]).toMatchObject({ ok: true, res: { text: "echo:first" } });
    expect(outcomes[1]!.ok).toBe(false);
    expect(outcomes[1]!.code).toBe(8);
    expect(outcomes[1]!.details).toMatch(/^rate_limited: /);
  }, 60_000);

  test("an HTTP/1.1-only origin is UNAVAILABLE (14): gRPC is never translated to HTTP/1.1", async () => {
    const before = h1.seen.length;
    const { outcomes } = await nodeCalls(`${H1_ONLY}:${h1.port}`, [{ kind: "unary", text: "h1" }]);
    expect(outcomes[0]).toMatchObject({
      ok: false,
      code: 14,
      details: `upstream_unreachable: credgate could not connect to ${H1_ONLY}:${h1.port}: the origin does not speak HTTP/2`,
    });
    expect(h1.seen.length).toBe(before);
  });

  test("a token regenerated while the connection is open: the next call on it is UNAUTHENTICATED (16)", async () => {
    const agent = await cg.api("POST", "/v1/agents", { body: { name: "grpc-regen", identifier: "grpc-regen", mode: "all" } });
    expect(agent.status).toBe(201);
    const token = (await cg.api("GET", "/v1/agents")).body.find((a: any) => a.id === agent.body.id).accessToken as string;
    // The gateway knows the new agent once its snapshot has caught up.
    await eventually(async () => {
      const t = await openConnect(cg.gatewayPort, `${HOST}:${origin.port}`, basic(token));
      t.socket.destroy();
      return t.connect.status === 200 ? true : null;
    });
    const calls = [{ kind: "unary", text: "before" }, { kind: "wait" }, { kind: "unary", text: "after" }];
    const proc = spawn(["node", NODE_CLIENT, JSON.stringify({ target: `${HOST}:${origin.port}`, caFile: ca.file, calls })], {
      env: { ...process.env, grpc_proxy: `http://x:${token}@127.0.0.1:${cg.gatewayPort}`, NODE_PATH: join(ROOT, "node_modules") },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const lines: string[] = [];
    const decoder = new TextDecoder();
    let buffered = "";
    const reading = (async () => {
      for await (const chunk of proc.stdout) {
        buffered += decoder.decode(chunk);
        let i: number;
        while ((i = buffered.indexOf("\n")) >= 0) {
          lines.push(buffered.slice(0, i));
          buffered = buffered.slice(i + 1);
        }
      }
    })();
    await eventually(() => (lines.length >= 2 ? true : null), 20_000);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ok: true, res: { text: "echo:before" } });
    expect(JSON.parse(lines[1]!)).toEqual({ waiting: true });
    const regen = await cg.api("POST", `/v1/agents/${agent.body.id}/regenerate-token`);
    expect(regen.status).toBe(200);
    proc.stdin.write("go\n");
    await proc.stdin.end();
    expect(await proc.exited).toBe(0);
    await reading;
    const after = JSON.parse(lines[2]!) as Outcome;
    expect(after.ok).toBe(false);
    expect(after.code).toBe(16);
    expect(after.details).toMatch(/^proxy_authentication_required: /);
  });
});

describe("Python grpcio (/usr/bin/python3) through grpc_proxy", () => {
  test("all four call kinds, injected, with trailers", async () => {
    const from = origin.seen.length;
    const r = await run(["/usr/bin/python3", PY_CLIENT, JSON.stringify({ target: `${HOST}:${origin.port}`, caFile: ca.file, calls: ALL_KINDS })], {
      env: { ...process.env, grpc_proxy: proxy },
      timeoutMs: 30_000,
    });
    expect(r.code).toBe(0);
    const outcomes = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Outcome);
    expectAllKinds(outcomes);
    expect(outcomes[0]!.trailers!["x-origin-trailer"]).toBe("unary");
    const seen = callsSince(from);
    expect(seen.map((s) => s.method)).toEqual(["Unary", "ServerStream", "ClientStream", "Bidi"]);
    for (const s of seen) expect(s.metadata.authorization).toBe(`Bearer ${SECRET}`);
    expect(r.stdout).not.toContain(SECRET);
  });

  test("a refusal is a gRPC status for Python too (7)", async () => {
    const r = await run(["/usr/bin/python3", PY_CLIENT, JSON.stringify({ target: `${BLOCKED}:${origin.port}`, caFile: ca.file, calls: [{ kind: "unary", text: "no" }] })], {
      env: { ...process.env, grpc_proxy: proxy },
      timeoutMs: 30_000,
    });
    expect(r.code).toBe(0);
    const outcome = JSON.parse(r.stdout.trim()) as Outcome;
    expect(outcome.ok).toBe(false);
    expect(outcome.code).toBe(7);
    expect(outcome.details).toMatch(/^blocked_by_policy: Blocked by credgate policy rule "No blocked host"\./);
  });
});
