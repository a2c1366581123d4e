// README's test command (`npm test`): the whole suite on the embedded SQLite store, and the suites where the
// engine matters again on a real PostgreSQL server (test/support/postgres.ts), plus the multi-instance suite,
// which only makes sense there. The runs share no state (each its own ports, data dirs and PostgreSQL server), so
// they go in three lanes side by side (below), sized so that they end about together. The first lane
// prints as it goes; the other lanes' output is printed whole after it (their lines would interleave otherwise).
// Then the slowest files, the failed tests' names (CI keeps only the tail of a log) and the totals in bun's
// format (` N pass`, ` N fail`).
// `--fast` (`npm run test:fast`): the inner loop — unit, stage and API/store tests on SQLite only.
import { spawn } from "bun";
import { readdirSync } from "node:fs";

/**
 * SQLite suites that run after the PostgreSQL run's lane has no more PostgreSQL work: the unit and API tests and a
 * few long e2e files (~220 s of a quiet 2-core machine's run).
 */
const SQLITE_LAST = ["test/unit", "test/api", "test/e2e/fuzz.test.ts", "test/e2e/budgets.test.ts", "test/e2e/oauth-connection.test.ts"];
const SQLITE_E2E = readdirSync("test/e2e")
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => `test/e2e/${f}`)
  .filter((f) => !SQLITE_LAST.includes(f))
  .sort();
// The suites that drive Chromium stay together in one lane: with two Chromiums at once, a page waited 30 s in vain.
const CHROMIUM = new Set(readdirSync("test/e2e").filter((f) => /^(dashboard|binary|lan-transport|notifications)/.test(f)).map((f) => `test/e2e/${f}`));
const rest = SQLITE_E2E.filter((f) => !CHROMIUM.has(f));
/** The SQLite e2e suites in two halves: the Chromium ones and every other of the rest, and the rest's other half. */
const SQLITE_E2E_A = [...SQLITE_E2E.filter((f) => CHROMIUM.has(f)), ...rest.filter((_, i) => i % 2 === 1)].sort();
const SQLITE_E2E_B = rest.filter((_, i) => i % 2 === 0);
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
  // GitHub App tokens minted once for every process and instance (the minted_tokens row and its lease).
  "test/e2e/github-app.test.ts",
  // The database broker's approvals, remembered approvals and per-statement request logs live in the store.
  "test/e2e/database-statements.test.ts",
  // Cloud tokens minted once for two instances on one database (the minted_tokens lease).
  "test/e2e/cloud-identities.test.ts",
  "test/multi",
];

const FAST_RUN = ["test/unit", "test/api"];

const fast = process.argv.includes("--fast");
// e2e suites start real processes and TLS servers: each test gets 60 s (bunfig.toml's `timeout` is not read by
// this Bun, whose default is 5 s — too tight for a loaded CI machine).
const extra = ["--timeout", "60000", ...process.argv.slice(2).filter((a) => a !== "--fast")];

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
  output: string;
}

/** Runs one pass; `live` prints its output as it comes, otherwise it is kept for the caller to print whole. */
async function run(label: string, paths: string[], env: Record<string, string>, live: boolean): Promise<Outcome> {
  const proc = spawn([process.execPath, "test", ...paths, ...extra], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  let pass = 0;
  let fail = 0;
  const failed: string[] = [];
  const seconds = new Map<string, number>();
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
        if (/^\S.*\.test\.tsx?:$/.test(line)) file = line.slice(0, -1);
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
  // A run that crashed before reporting counts as a failure, not as zero tests.
  if (code !== 0 && fail === 0) fail = 1;
  return { pass, fail, code, failed, seconds, output };
}

const started = performance.now();
interface Run {
  label: string;
  paths: string[];
  env: Record<string, string>;
}
const sqlite = { CREDGATE_TEST_ENGINE: "sqlite" };
const postgres = { CREDGATE_TEST_ENGINE: "postgres" };
// Three lanes on the two cores (e2e suites wait on processes and sockets much of the time), each picking its
// free ports from its own third of the range (test/support/ports.ts): half of the SQLite e2e suites; the other
// half, then the SQLite unit and API tests; the PostgreSQL run.
const lanes: Run[][] = fast
  ? [[{ label: "SQLite, fast tier", paths: FAST_RUN, env: sqlite }]]
  : [
      [{ label: "SQLite", paths: SQLITE_E2E_A, env: { ...sqlite, CREDGATE_TEST_PORT_SLICE: "0/3" } }],
      [
        { label: "SQLite, second lane", paths: SQLITE_E2E_B, env: { ...sqlite, CREDGATE_TEST_PORT_SLICE: "1/3" } },
        { label: "SQLite, unit and API", paths: SQLITE_LAST, env: { ...sqlite, CREDGATE_TEST_PORT_SLICE: "1/3" } },
      ],
      [{ label: "PostgreSQL", paths: POSTGRES_RUN, env: { ...postgres, CREDGATE_TEST_PORT_SLICE: "2/3" } }],
    ];
const laneResults = lanes.map(async (lane, i) => {
  const outcomes: [string, Outcome][] = [];
  for (const r of lane) outcomes.push([r.label, await run(r.label, r.paths, r.env, i === 0)]);
  return outcomes;
});
const results: [string, Outcome][] = [];
for (const pending of laneResults) {
  for (const [label, outcome] of await pending) {
    await print(outcome.output);
    results.push([label, outcome]);
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
// The totals are the last lines CI reads: everything before them has been written whole when they are.
await print(`${lines.join("\n")}\n`);
process.exit(results.every(([, r]) => r.code === 0) ? 0 : 1);
