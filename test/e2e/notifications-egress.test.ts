// Notification channels go through the egress guard (docs/policy.md#notifications, docs/guards.md): credgate runs
// in its own network namespace (test/support/notifyEgressScenario.ts, started with `unshare -n`) where the cloud
// metadata address exists on `lo` with listeners that count connections. A channel URL naming it — literally,
// in hex, or IPv4-mapped — is refused before any connection, both for a test send and for a queued delivery.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";

const SCENARIO = join(import.meta.dir, "../support/notifyEgressScenario.ts");
const REFUSED = "credgate does not connect to 169.254.169.254 (%s): the destination is an internal or reserved address.";

interface Scenario {
  results: Record<string, any>;
  heard: { metadata80: number; metadata443: number };
}

let scenario: Promise<Scenario> | null = null;
function outcome(): Promise<Scenario> {
  scenario ??= (async () => {
    const setup = "ip link set lo up && ip addr add 169.254.169.254/32 dev lo";
    // The engine under test is irrelevant here, and a PostgreSQL server outside the namespace is unreachable.
    const r = await run(["unshare", "-n", "sh", "-c", `${setup} && exec "$0" "$1"`, process.execPath, SCENARIO], { env: { CREDGATE_TEST_ENGINE: "sqlite" }, timeoutMs: 90_000 });
    if (r.code !== 0) throw new Error(`notification egress scenario failed (${r.code}): ${r.stderr}\n${r.stdout}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Scenario;
  })();
  return scenario;
}

describe("notification channels and the egress guard", () => {
  test("an https URL naming the metadata address is accepted as a channel, but a test send is refused before connecting", async () => {
    const { results } = await outcome();
    expect(results["create literal"]).toBe(201);
    expect(results["test literal"]).toEqual({ delivered: false, status: null, error: REFUSED.replace("%s", "169.254.169.254") });
  }, 120_000);

  test("its hex and IPv4-mapped spellings are refused the same way", async () => {
    const { results } = await outcome();
    expect(results["test hex"]).toEqual({ delivered: false, status: null, error: REFUSED.replace("%s", "169.254.169.254") });
    expect(results["test mapped"]).toEqual({ delivered: false, status: null, error: REFUSED.replace("%s", "[::ffff:a9fe:a9fe]") });
  });

  test("a queued delivery (a held request's approval.requested) is refused too, and retried later", async () => {
    const { results } = await outcome();
    expect(results.held).toBe(true);
    expect(results.delivery).toMatchObject({ event: "approval.requested", status: "retrying", attempts: 1, lastStatus: null, lastError: REFUSED.replace("%s", "169.254.169.254") });
  });

  test("plain http to it is not a channel URL at all", async () => {
    const { results } = await outcome();
    expect(results["create http"]).toEqual({ error: "url must be an https:// URL" });
  });

  test("nothing ever connected to the metadata address", async () => {
    const { heard } = await outcome();
    expect(heard).toEqual({ metadata80: 0, metadata443: 0 });
  });
});
