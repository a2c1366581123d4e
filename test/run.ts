// README's test command (`npm test`): the whole suite on the embedded SQLite store, then the suites that
// touch the store through the API or the gateway again on a real PostgreSQL server (test/support/postgres.ts),
// plus the multi-instance suite, which only makes sense there. Prints bun's own output of each run, then the
// failed tests' names (CI keeps only the tail of a log) and the totals in bun's format (` N pass`, ` N fail`) as
// the last lines.
import { spawn } from "bun";

const SQLITE_RUN = ["test/unit", "test/api", "test/e2e"];
const POSTGRES_RUN = [
  "test/api",
  "test/unit/stages",
  "test/e2e/gateway-clients.test.ts",
  "test/e2e/gateway-injection.test.ts",
  "test/e2e/placeholders.test.ts",
  "test/e2e/gateway-lifecycle.test.ts",
  "test/e2e/gateway-streaming.test.ts",
  "test/e2e/gateway-tunnels.test.ts",
  "test/e2e/gateway-http2.test.ts",
  "test/e2e/gateway-grpc.test.ts",
  "test/e2e/gateway-workers.test.ts",
  "test/e2e/policy-gateway.test.ts",
  "test/e2e/approval-store.test.ts",
  "test/e2e/notifications.test.ts",
  "test/e2e/remembered-approvals.test.ts",
  // A decision served by an instance whose clock is past an approval held by another.
  "test/e2e/approval-expiry.test.ts",
  "test/e2e/apps-gateway.test.ts",
  "test/e2e/llm-metering.test.ts",
  "test/e2e/budgets.test.ts",
  "test/e2e/cloud-accounts.test.ts",
  "test/e2e/claim-required.test.ts",
  "test/e2e/partner-orgs.test.ts",
  "test/e2e/cross-tenant.test.ts",
  // OAuth refresh shared by two gateway processes, stored with compare-and-swap.
  "test/e2e/upstream-proxy.test.ts",
  "test/e2e/audit.test.ts",
  // GitHub App tokens minted once for every process and instance (the minted_tokens row and its lease).
  "test/e2e/github-app.test.ts",
  "test/multi",
];

// e2e suites start real processes and TLS servers: each test gets 60 s (bunfig.toml's `timeout` is not read by
// this Bun, whose default is 5 s — too tight for a loaded CI machine).
const extra = ["--timeout", "60000", ...process.argv.slice(2)];

async function run(label: string, paths: string[], env: Record<string, string>): Promise<{ pass: number; fail: number; code: number; failed: string[] }> {
  console.log(`\n── ${label} ──`);
  const proc = spawn([process.execPath, "test", ...paths, ...extra], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  let pass = 0;
  let fail = 0;
  const failed: string[] = [];
  // bun names the file on a line of its own ("test/e2e/x.test.ts:") before that file's results, and prints a
  // failure's error before its "(fail)" line.
  let file = "";
  let error: string[] = [];
  // At the end bun lists the failures again ("N tests failed:"), under no file: those are counted already.
  let summary = false;
  const scan = async (stream: ReadableStream<Uint8Array>, out: NodeJS.WriteStream) => {
    const decoder = new TextDecoder();
    let rest = "";
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      out.write(text);
      const lines = (rest + text).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        if (/^\S.*\.test\.tsx?:$/.test(line)) file = line.slice(0, -1);
        if (/^\d+ tests? failed:$/.test(line)) summary = true;
        // The error's first lines (its message, Expected and Received) are enough to tell what broke.
        if (line.startsWith("error: ") && error.length === 0) error.push(line);
        else if (error.length > 0 && error.length < 5 && line.trim() && !line.startsWith("(")) error.push(line);
        if (line.startsWith("(fail) ") && !summary) failed.push([`${file}: ${line.slice(7)}`, ...error.map((e) => `    ${e.slice(0, 240)}`)].join("\n"));
        if (line.startsWith("(pass) ") || line.startsWith("(fail) ")) error = [];
        const m = /^ *(\d+) (pass|fail)$/.exec(line);
        if (m) m[2] === "pass" ? (pass = Number(m[1])) : (fail = Number(m[1]));
      }
    }
  };
  await Promise.all([scan(proc.stdout, process.stdout), scan(proc.stderr, process.stderr)]);
  const code = await proc.exited;
  // A run that crashed before reporting counts as a failure, not as zero tests.
  if (code !== 0 && fail === 0) fail = 1;
  return { pass, fail, code, failed };
}

const sqlite = await run("SQLite (embedded store)", SQLITE_RUN, { CREDGATE_TEST_ENGINE: "sqlite" });
const postgres = await run("PostgreSQL (shared store)", POSTGRES_RUN, { CREDGATE_TEST_ENGINE: "postgres" });
for (const [label, r] of [["SQLite", sqlite], ["PostgreSQL", postgres]] as const) {
  for (const name of r.failed) console.log(`failed (${label}) ${name}`);
}
console.log(`\nSQLite: ${sqlite.pass} pass, ${sqlite.fail} fail · PostgreSQL: ${postgres.pass} pass, ${postgres.fail} fail`);
console.log(` ${sqlite.pass + postgres.pass} pass`);
console.log(` ${sqlite.fail + postgres.fail} fail`);
process.exit(sqlite.code === 0 && postgres.code === 0 ? 0 : 1);
