// Property-based fuzzing of every API route family through the real process (docs/api.md#bodies-and-formats, docs/api.md#error-shapes): requests
// generated with fast-check from /v1/openapi.json — path ids, query strings, headers and bodies (random JSON,
// the route's own fields with random values, broken JSON, deep nesting) — to every operation of every family.
// Every answer must be below 500, every error body one of the two shapes of docs/api.md#error-shapes and every success body the
// documented schema (test/support/openapiCheck.ts via `cg.api`); the process stays healthy, and its resident
// memory (read from its own /metrics) returns near where it started. The seed is fixed; CREDGATE_FUZZ_RUNS
// (runs per family, each a batch of concurrent requests) and CREDGATE_FUZZ_SEED make a larger or another run.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { freePort } from "../support/ports.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { parseExposition, sampleValue } from "../support/prometheus.ts";

const RUNS = Number(process.env.CREDGATE_FUZZ_RUNS ?? 100);
const SEED = Number(process.env.CREDGATE_FUZZ_SEED ?? 20261125);
const BATCH = 10;

interface Operation {
  method: string;
  path: string;
  family: string;
  query: string[];
  bodyFields: string[] | null;
}

let cg: RunningCredgate;
let ops: Operation[];
let closedPort: number;
/** Ids that exist, so generated paths also reach the handlers' own checks. */
let realIds: string[];

beforeAll(async () => {
  closedPort = await freePort();
  // A short approval long-poll: the fuzzer must not sit in 30 s holds.
  cg = await startCredgate({ env: { CREDGATE_APPROVAL_POLL_SECONDS: "0.2" } });
  const doc = (await cg.api("GET", "/v1/openapi.json", { key: null })).body;
  ops = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      // Regenerating the keys this run authenticates with would turn the rest of it into 401s.
      if (/api-key\/regenerate$/.test(path)) continue;
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      const resolved = schema?.$ref ? doc.components.schemas[schema.$ref.split("/").at(-1)] : schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        family: op.tags[0],
        query: (op.parameters ?? []).filter((p: any) => p.in === "query").map((p: any) => p.name),
        bodyFields: op.requestBody ? Object.keys(resolved?.properties ?? {}) : null,
      });
    }
  }
  const agent = (await cg.api("POST", "/v1/agents", { body: { name: "Fuzz", identifier: "fuzz-target" } })).body;
  const secret = (await cg.api("POST", "/v1/secrets", { body: { name: "Fuzz", type: "generic", value: "fuzz-value-123456", hostPattern: "fuzz.test", injectionConfig: { headerName: "x-k" } } })).body;
  const rule = (await cg.api("POST", "/v1/policy/rules", { body: { name: "Fuzz", action: "allow", targets: [{ kind: "network", hostPattern: "fuzz.test" }] } })).body;
  realIds = [agent.id, secret.id, rule.id, "github", "resend", "codex", "default"];
}, 60_000);

afterAll(async () => {
  await cg?.stop();
});

const weird = fc.constantFrom("..", "%2e%2e", "%00", "%ff", "a%2Fb", "%", "%E2%82", "null", "undefined", "0", "-1", "1e309", " ", "'; DROP TABLE agents;--", "🙂", "x".repeat(300));
const pathId = () =>
  fc.oneof(
    fc.uuid().map(String),
    fc.string({ maxLength: 80 }).map(encodeURIComponent),
    fc.string({ unit: "grapheme", maxLength: 20 }).map(encodeURIComponent),
    weird,
    fc.constantFrom(...realIds),
  );
const scalar = () => fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: "grapheme", maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom(...realIds), weird);
const value = () => fc.oneof({ depthSize: "small" }, scalar(), fc.array(scalar(), { maxLength: 5 }), fc.dictionary(fc.string({ maxLength: 12 }), scalar(), { maxKeys: 5 }), fc.jsonValue({ maxDepth: 3 }));

function body(op: Operation) {
  const fields = op.bodyFields ?? [];
  const known = fields.length > 0 ? fc.dictionary(fc.constantFrom(...fields), value(), { maxKeys: fields.length + 2 }) : fc.dictionary(fc.string({ maxLength: 10 }), value(), { maxKeys: 4 });
  // Migration export dials its cloudUrl: only a loopback port nobody listens on, so nothing leaves the machine.
  const safe = (b: Record<string, unknown>) => (op.path === "/migrate/export" && b.cloudUrl !== undefined ? { ...b, cloudUrl: `http://127.0.0.1:${closedPort}` } : b);
  return fc.oneof(
    { arbitrary: known.map((b) => JSON.stringify(safe(b))), weight: 5 },
    { arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)), weight: 2 },
    { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
    { arbitrary: fc.constantFrom("", "{", "[1,", '{"a":1}}', "\u0000", '{"name":"\\u0000"}', "[".repeat(5000) + "]".repeat(5000), "{}".repeat(1000), "null", "[]", "true"), weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 },
  );
}

function request(op: Operation) {
  const params = op.path.match(/\{[^}]+\}/g) ?? [];
  const queryKeys = op.query.length > 0 ? fc.constantFrom(...op.query, "x", "") : fc.constantFrom("x", "limit", "status");
  return fc.record({
    ids: fc.tuple(...params.map(() => pathId())),
    prefix: fc.constantFrom("/v1", "/api"),
    query: fc.array(fc.tuple(queryKeys, fc.oneof(fc.string({ maxLength: 40 }), weird, fc.integer().map(String), fc.constantFrom(...realIds))), { maxLength: 4 }),
    body: op.bodyFields !== null || op.method !== "GET" ? body(op) : fc.constant(undefined),
    key: fc.constantFrom<"project" | "org" | "none" | "garbage">("project", "project", "project", "org", "none", "garbage"),
    projectHeader: fc.option(fc.oneof(fc.constant(cg.keys.projectId), fc.string({ maxLength: 20 }).map(encodeURIComponent)), { nil: undefined }),
    requestId: fc.option(fc.string({ maxLength: 140 }), { nil: undefined }),
  });
}

type Generated = { ids: string[]; prefix: string; query: [string, string][]; body: string | undefined; key: string; projectHeader?: string; requestId?: string };

async function send(op: Operation, r: Generated): Promise<void> {
  let i = 0;
  const path = op.path.replace(/\{[^}]+\}/g, () => r.ids[i++] ?? "");
  const query = r.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
  const key = r.key === "project" ? cg.keys.projectApiKey : r.key === "org" ? cg.keys.orgApiKey : r.key === "garbage" ? "svc_" + "0".repeat(64) : null;
  const headers: Record<string, string> = {};
  if (r.projectHeader !== undefined) headers["x-project-id"] = r.projectHeader;
  if (r.requestId !== undefined && /^[\x20-\x7e]*$/.test(r.requestId)) headers["x-request-id"] = r.requestId;
  const res = await cg.api(op.method, `${r.prefix}${path}${query ? `?${query}` : ""}`, { key, body: r.body, headers });
  if (res.status >= 500) throw new Error(`${op.method} ${r.prefix}${path}?${query} (key ${r.key}, headers ${JSON.stringify(headers)}, body ${JSON.stringify(r.body)?.slice(0, 200)}) → ${res.status}: ${res.text.slice(0, 300)}`);
}

async function rss(): Promise<number> {
  const text = await (await fetch(`${cg.apiUrl}/metrics`)).text();
  return sampleValue(parseExposition(text), "process_resident_memory_bytes");
}

test(`every route family: ${RUNS} runs × ${BATCH} requests each, no 5xx, both error shapes, documented bodies; healthy, RSS back near its start`, async () => {
  const families = [...new Set(ops.map((o) => o.family))].sort();
  expect(families.length).toBeGreaterThanOrEqual(20);
  let sent = 0;
  let rssStart = 0;
  for (const [n, family] of families.entries()) {
    const members = ops.filter((o) => o.family === family);
    const batch = fc.array(fc.constantFrom(...members).chain((op) => request(op).map((r) => [op, r] as const)), { minLength: BATCH, maxLength: BATCH });
    await fc.assert(
      fc.asyncProperty(batch, async (items) => {
        await Promise.all(items.map(([op, r]) => send(op, r)));
        sent += items.length;
      }),
      { numRuns: RUNS, seed: SEED + n, endOnFailure: true },
    );
    const health = await fetch(`${cg.gatewayUrl}/healthz`);
    expect({ family, health: health.status }).toEqual({ family, health: 200 });
    // The start is taken once the process has warmed up (first family done: code paths compiled, caches filled).
    if (n === 0) rssStart = await rss();
  }
  expect(sent).toBe(families.length * RUNS * BATCH);
  expect((await cg.api("GET", "/v1/health", { key: null })).status).toBe(200);
  expect((await cg.api("GET", "/v1/agents")).status).toBe(200);
  // A fixed pause: the process's memory settles (no condition says when its collector has run).
  await Bun.sleep(500);
  const rssEnd = await rss();
  console.log(`[fuzz] ${sent} requests over ${families.length} families; RSS after warm-up ${(rssStart / 2 ** 20).toFixed(0)} MiB, at the end ${(rssEnd / 2 ** 20).toFixed(0)} MiB`);
  expect(rssEnd).toBeLessThan(rssStart * 1.5 + 32 * 2 ** 20);
  expect(cg.proc.exitCode).toBeNull();
}, 600_000);
