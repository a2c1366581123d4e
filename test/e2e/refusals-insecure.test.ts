// insecure_transport reaches the client whole on every path where it can occur (docs/agent-errors.md#insecure_transport,
// docs/guards.md#cleartext-rule). It needs plain HTTP whose dialled address is neither loopback nor private, and
// test traffic stays off the network: so test/e2e/refusals-delivered.test.ts runs again inside its own network
// namespace (`unshare -n`, as test/e2e/egress-guard.test.ts), where the documentation address 203.0.113.9 is on
// `lo`, and drives that one refusal through its plain-HTTP paths with the same whole-answer checks.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";

const MATRIX = join(import.meta.dir, "refusals-delivered.test.ts");
const ADDRESS = "203.0.113.9";

test("403 insecure_transport, whole, on every plain-HTTP path (the matrix run in a network namespace)", async () => {
  const setup = `ip link set lo up && ip addr add ${ADDRESS}/32 dev lo`;
  const r = await run(["unshare", "-n", "sh", "-c", `${setup} && exec "$0" test "$1" --timeout 60000`, process.execPath, MATRIX], {
    // A PostgreSQL server outside the namespace is unreachable; the store plays no part here.
    env: { CREDGATE_TEST_ENGINE: "sqlite", CREDGATE_REFUSALS_PUBLIC_ADDRESS: ADDRESS },
    timeoutMs: 120_000,
  });
  const report = r.stdout + r.stderr;
  if (r.code !== 0) throw new Error(`the matrix failed in the namespace (${r.code}):\n${report}`);
  const passed = report.split("\n").filter((l) => l.startsWith("(pass)"));
  // The plain proxy paths (curl ×4, raw ×4, Python, Node) and the plain tunnel: eleven cases, and nothing dialled.
  expect(passed.filter((l) => /> 403 insecure_transport( \[|$)/.test(l)).length).toBe(11);
  expect(passed.some((l) => l.includes("nothing was dialled at the public address"))).toBe(true);
  expect(report).not.toContain("(fail)");
}, 150_000);
