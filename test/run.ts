// README's test command (`npm test`): the whole suite on the embedded SQLite store, and the suites where the
// engine matters again on a real PostgreSQL server (test/support/postgres.ts), plus the multi-instance suite,
// which only makes sense there. The runs share no state (each its own ports, data dirs and PostgreSQL server), so
// they go in three lanes side by side, each file placed by its recorded time (test/lanes.ts). The first lane
// prints as it goes; the other lanes' output is printed whole after it (their lines would interleave otherwise).
// Then the slowest files, the failed tests' names (CI keeps only the tail of a log) and the totals in bun's
// format (` N pass`, ` N fail`).
// `--fast` (`npm run test:fast`): the inner loop — unit, stage and API/store tests on SQLite only.
import { spawn } from "bun";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { balance, type Engine, type Item, type Timings } from "./lanes.ts";

const SQLITE_E2E = readdirSync("test/e2e")
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => `test/e2e/${f}`)
  .sort();
// The suites that drive Chromium stay together in one lane (test/lanes.ts).
const CHROMIUM = SQLITE_E2E.filter((f) => /^test\/e2e\/(dashboard|binary|lan-transport|notifications)/.test(f));
const UNIT_AND_API = ["test/unit", "test/api"];
// Suites whose path never reads the store (framing, h2 and gRPC, streaming, tunnels, clients, placeholder
// substitution: the gateway works from its snapshot and the API only sets them up) run on SQLite alone; the
// store itself is covered on both engines by test/api.
const POSTGRES_RUN = [
  "test/api",
  "test/unit/stages",
  "test/e2e/gateway-injection.test.ts",
  "test/e2e/gateway-lifecycle.test.ts",
  "test/e2e/gateway-workers.test.ts",
  // Secret-store references (the store_ref column) read through the instance's shared cache by two gateway processes.
  "test/e2e/secret-stores.test.ts",
  "test/e2e/policy-gateway.test.ts",
  "test/e2e/approval-store.test.ts",
  "test/e2e/notifications.test.ts",
  "test/e2e/remembered-approvals.test.ts",
  // The SSH CA in the store, push approvals held and decided, remembered per agent and key.
  "test/e2e/ssh-git.test.ts",
  // An SSH key from the external vault: the secret with its reference and the log rows live in the store.
  "test/e2e/ssh-vault.test.ts",
  // A decision served by an instance whose clock is past an approval held by another.
  "test/e2e/approval-expiry.test.ts",
  "test/e2e/apps-gateway.test.ts",
  // MCP tool calls held, remembered per arguments and logged: the approvals and log rows live in the store.
  "test/e2e/mcp-gateway.test.ts",
  // HTTP+SSE message POSTs through another instance than the stream: the mark holds across instances.
  "test/e2e/mcp-sse-processes.test.ts",
  "test/e2e/llm-metering.test.ts",
  "test/e2e/budgets.test.ts",
  "test/e2e/cloud-accounts.test.ts",
  "test/e2e/claim-required.test.ts",
  "test/e2e/partner-orgs.test.ts",
  "test/e2e/cross-tenant.test.ts",
  // Key sessions resolve through the key's hash in the store; placeholders and invites across both engines.
  "test/e2e/cross-tenant-credentials.test.ts",
  "test/e2e/sign-in-guards.test.ts",
  // OAuth refresh shared by two gateway processes, stored with compare-and-swap.
  "test/e2e/upstream-proxy.test.ts",
  "test/e2e/audit.test.ts",
  // A rotating refresh token (with reuse detection) due in two instances on one database: one refresh under the
  // connection's lease, the other instance waits for its token; a lease holder killed mid-refresh lets it lapse.
  "test/e2e/oauth-refresh-race.test.ts",
  // The same for an MCP server's login.
  "test/e2e/mcp-refresh-race.test.ts",
  // GitHub App tokens minted once for every process and instance (the minted_tokens row and its lease).
  "test/e2e/github-app.test.ts",
  // The database broker's approvals, remembered approvals and per-statement request logs live in the store.
  "test/e2e/database-statements.test.ts",
  // Cloud tokens minted once for two instances on one database (the minted_tokens lease).
  "test/e2e/cloud-identities.test.ts",
  // A Vault database lease revoked when its secret is deleted through another instance (the change event).
  "test/e2e/vault-database.test.ts",
  // Cloud mode: a whole project or organization deleted by the store's cascades still revokes its secrets' Vault leases.
  "test/e2e/vault-cloud.test.ts",
  "test/multi",
];

const FAST_RUN = ["test/unit", "test/api"];

const fast = process.argv.includes("--fast");
/** `--record-timings`: rewrite test/timings.json from this run's wall times (after the suite changed much). */
const record = process.argv.includes("--record-timings");
const TIMINGS_FILE = "test/timings.json";
// e2e suites start real processes and TLS servers: each test gets 60 s (bunfig.toml's `timeout` is not read by
// this Bun, whose default is 5 s — too tight for a loaded CI machine).
const extra = ["--timeout", "60000", ...process.argv.slice(2).filter((a) => a !== "--fast" && a !== "--record-timings")];

/** Writes to stdout and resolves once written: nothing printed later overtakes it, and exit cuts none of it. */
function print(text: string): Promise<void> {
  return new Promise((resolve) => process.stdout.write(text, () => resolve()));
}

interface Outcome {
  pass: number;
  fail: number;
  code: number;
  failed: string[];
  /** Seconds spent in each file's tests, from bun's per-test times. */
  seconds: Map<string, number>;
  /** Wall seconds from each file's first line to the next file's (hooks and process starts included). */
  wall: Map<string, number>;
  output: string;
}

/** Runs one pass; `live` prints its output as it comes, otherwise it is kept for the caller to print whole. */
async function run(label: string, paths: string[], env: Record<string, string>, live: boolean): Promise<Outcome> {
  const proc = spawn([process.execPath, "test", ...paths, ...extra], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  let pass = 0;
  let fail = 0;
  const failed: string[] = [];
  const seconds = new Map<string, number>();
  const wall = new Map<string, number>();
  let fileStarted = performance.now();
  const fileEnded = () => {
    if (file) wall.set(file, (wall.get(file) ?? 0) + (performance.now() - fileStarted) / 1000);
    fileStarted = performance.now();
  };
  let output = "";
  const emit = async (text: string) => (live ? print(text) : void (output += text));
  await emit(`\n── ${label} ──\n`);
  // bun names the file on a line of its own ("test/e2e/x.test.ts:") before that file's results, and prints a
  // failure's error before its "(fail)" line.
  let file = "";
  let error: string[] = [];
  // At the end bun lists the failures again ("N tests failed:"), under no file: those are counted already.
  let summary = false;
  const scan = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let rest = "";
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      await emit(text);
      const lines = (rest + text).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        if (/^\S.*\.test\.tsx?:$/.test(line) && !summary) {
          fileEnded();
          file = line.slice(0, -1);
        }
        if (/^\d+ tests? failed:$/.test(line)) summary = true;
        // The error's first lines (its message, Expected and Received) are enough to tell what broke.
        if (line.startsWith("error: ") && error.length === 0) error.push(line);
        else if (error.length > 0 && error.length < 5 && line.trim() && !line.startsWith("(")) error.push(line);
        if (line.startsWith("(fail) ") && !summary) failed.push([`${file}: ${line.slice(7)}`, ...error.map((e) => `    ${e.slice(0, 240)}`)].join("\n"));
        if (line.startsWith("(pass) ") || line.startsWith("(fail) ")) {
          error = [];
          const ms = /\[([\d.]+)(m?s)\]$/.exec(line);
          if (ms && !summary) seconds.set(file, (seconds.get(file) ?? 0) + Number(ms[1]) / (ms[2] === "ms" ? 1000 : 1));
        }
        const m = /^ *(\d+) (pass|fail)$/.exec(line);
        if (m) m[2] === "pass" ? (pass = Number(m[1])) : (fail = Number(m[1]));
      }
    }
  };
  await Promise.all([scan(proc.stdout), scan(proc.stderr)]);
  const code = await proc.exited;
  fileEnded();
  // A run that crashed before reporting counts as a failure, not as zero tests.
  if (code !== 0 && fail === 0) fail = 1;
  return { pass, fail, code, failed, seconds, wall, output };
}

const started = performance.now();
interface Run {
  label: string;
  engine: Engine;
  paths: string[];
  env: Record<string, string>;
}
const engineEnv = (engine: Engine) => ({ CREDGATE_TEST_ENGINE: engine });
// Three lanes on the two cores (e2e suites wait on processes and sockets much of the time), each picking its
// free ports from its own third of the range (test/support/ports.ts): one starts with the Chromium suites, one
// with the unit and API tests; every other SQLite e2e file and every path of the PostgreSQL run is spread over
// the three by recorded time (test/lanes.ts).
const timings: Timings = existsSync(TIMINGS_FILE) ? JSON.parse(readFileSync(TIMINGS_FILE, "utf8")) : { sqlite: {}, postgres: {} };
const LANES = 3;
function fullLanes(): Run[][] {
  const sqliteItem = (path: string): Item => ({ engine: "sqlite", path });
  const spread = balance(
    [CHROMIUM.map(sqliteItem), UNIT_AND_API.map(sqliteItem), []],
    [...SQLITE_E2E.filter((f) => !CHROMIUM.includes(f)).map(sqliteItem), ...POSTGRES_RUN.map((path): Item => ({ engine: "postgres", path }))],
    timings,
  );
  return spread.lanes.map((items, i) =>
    (["sqlite", "postgres"] as const)
      .map((engine) => ({ engine, paths: items.filter((item) => item.engine === engine).map((item) => item.path) }))
      .filter((r) => r.paths.length > 0)
      .map(({ engine, paths }) => ({
        label: `${engine === "sqlite" ? "SQLite" : "PostgreSQL"}, lane ${i + 1}`,
        engine,
        paths,
        env: { ...engineEnv(engine), CREDGATE_TEST_PORT_SLICE: `${i}/${LANES}` },
      })),
  );
}
const lanes: Run[][] = fast ? [[{ label: "SQLite, fast tier", engine: "sqlite", paths: FAST_RUN, env: engineEnv("sqlite") }]] : fullLanes();
const laneResults = lanes.map(async (lane, i) => {
  const outcomes: [Run, Outcome][] = [];
  for (const r of lane) outcomes.push([r, await run(r.label, r.paths, r.env, i === 0)]);
  return outcomes;
});
const results: [string, Outcome][] = [];
const engineOf = new Map<string, Engine>();
for (const pending of laneResults) {
  for (const [r, outcome] of await pending) {
    await print(outcome.output);
    results.push([r.label, outcome]);
    engineOf.set(r.label, r.engine);
  }
}
const slowest = results
  .flatMap(([label, r]) => [...r.seconds].map(([file, s]) => ({ label, file, s })))
  .sort((a, b) => b.s - a.s)
  .slice(0, 12);
const lines = [`\nSlowest files (seconds in their tests; the run took ${((performance.now() - started) / 1000).toFixed(0)} s):`];
for (const { label, file, s } of slowest) lines.push(`  ${s.toFixed(1).padStart(6)}  ${label}  ${file}`);
for (const [label, r] of results) {
  for (const name of r.failed) lines.push(`failed (${label}) ${name}`);
}
lines.push(`\n${results.map(([label, r]) => `${label}: ${r.pass} pass, ${r.fail} fail`).join(" · ")}`);
const total = (key: "pass" | "fail") => results.reduce((n, [, r]) => n + r[key], 0);
lines.push(` ${total("pass")} pass`, ` ${total("fail")} fail`);
if (record) {
  const measured: Timings = { sqlite: { ...timings.sqlite }, postgres: { ...timings.postgres } };
  for (const [label, r] of results) for (const [file, s] of r.wall) measured[engineOf.get(label)!][file] = Math.round(s * 10) / 10;
  const sorted = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(TIMINGS_FILE, `${JSON.stringify({ sqlite: sorted(measured.sqlite), postgres: sorted(measured.postgres) }, null, 1)}\n`);
  lines.push(`wrote ${TIMINGS_FILE}`);
}
// The totals are the last lines CI reads: everything before them has been written whole when they are.
await print(`${lines.join("\n")}\n`);
process.exit(results.every(([, r]) => r.code === 0) ? 0 : 1);
