// The egress guard and the cleartext rule (docs/guards.md#egress-guard, docs/guards.md#cleartext-rule) through the real process. credgate runs in its own
// network namespace (test/support/egressScenario.ts, started with `unshare -n`) where the cloud metadata address,
// a private and a public-looking address exist on `lo` with listeners that count connections: every refused
// attempt is answered 403 before any connection, and the listeners prove nothing was dialled.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";

const SCENARIO = join(import.meta.dir, "../support/egressScenario.ts");

interface Scenario {
  results: Record<string, { status: number; error: string | null }>;
  heard: { metadata80: number; metadata443: number; metadataHeads: string[]; private: number; publicBeforeAllowing: string[]; publicAll: string[] };
  dnsQueries: { metadata: number; rebind: number };
}

let scenario: Promise<Scenario> | null = null;
function outcome(): Promise<Scenario> {
  scenario ??= (async () => {
    const setup = "ip link set lo up && ip addr add 169.254.169.254/32 dev lo && ip addr add 10.1.2.3/32 dev lo && ip addr add 203.0.113.7/32 dev lo";
    // The engine under test is irrelevant here, and a PostgreSQL server outside the namespace is unreachable.
    const r = await run(["unshare", "-n", "sh", "-c", `${setup} && exec "$0" "$1"`, process.execPath, SCENARIO], { env: { CREDGATE_TEST_ENGINE: "sqlite" }, timeoutMs: 90_000 });
    if (r.code !== 0) throw new Error(`egress scenario failed (${r.code}): ${r.stderr}\n${r.stdout}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Scenario;
  })();
  return scenario;
}

const refused = async (name: string) => {
  const { results } = await outcome();
  expect(results[name]).toEqual({ status: 403, error: "egress_denied" });
};

describe("egress guard (docs/guards.md#egress-guard), self-hosted defaults", () => {
  test("CONNECT to the cloud metadata address → 403 egress_denied before the tunnel opens", () => refused("connect metadata"), 120_000);
  test("CONNECT with a hex-dotted or IPv4-mapped IPv6 form of it → 403", async () => {
    await refused("connect metadata hex");
    await refused("connect metadata mapped");
  });
  test("self-hosted trusts the operator's own pin: a passthrough host pinned to the metadata address is tunnelled", async () => {
    const { results, heard } = await outcome();
    expect(results["connect passthrough pinned"]).toEqual({ status: 200, error: null });
    expect(heard.metadata443).toBe(1);
  });
  test("absolute-form to it, also as decimal, octal, hex and IPv4-mapped IPv6 → 403", async () => {
    for (const name of ["absolute metadata", "absolute decimal", "absolute octal", "absolute hex", "absolute mapped hex"]) await refused(name);
  });
  test("IPv6 link-local and the unspecified address → 403", async () => {
    await refused("absolute link-local v6");
    await refused("absolute unspecified");
  });
  test("credgate's own API and gateway ports → 403", async () => {
    await refused("own api port");
    await refused("own gateway port");
  });
  test("CREDGATE_EGRESS_DENY refuses a private address self-hosted mode would allow", () => refused("explicit deny (private)"));
  test("nothing refused ever reached a listener", async () => {
    const { heard } = await outcome();
    // Port 80's one connection is the explicitly allowed request below; 443's the operator's pinned passthrough.
    expect(heard.metadata80).toBe(1);
    expect(heard.metadata443).toBe(1);
    expect(heard.metadataHeads[0]!.split("\r\n")[0]).toBe("GET /allowed HTTP/1.1");
    expect(heard.private).toBe(0);
  });
  test("CREDGATE_EGRESS_ALLOW opens an address the defaults refuse", async () => {
    const { results } = await outcome();
    expect(results["explicit allow"]).toEqual({ status: 200, error: null });
  });
});

describe("cleartext rule (docs/guards.md#cleartext-rule)", () => {
  test("plain http:// to a public address with a credential to inject → 403 insecure_transport, nothing sent", async () => {
    const { results, heard } = await outcome();
    expect(results["cleartext with a credential"]).toEqual({ status: 403, error: "insecure_transport" });
    expect(heard.publicBeforeAllowing.some((h) => h.startsWith("GET /x "))).toBe(false);
  });
  test("the same without a credential passes unchanged", async () => {
    const { results, heard } = await outcome();
    expect(results["cleartext without a credential"]).toEqual({ status: 200, error: null });
    expect(heard.publicBeforeAllowing.some((h) => h.startsWith("GET /y "))).toBe(true);
  });
  test("a host in CREDGATE_PLAINTEXT_HOSTS gets its credential over plain HTTP", async () => {
    const { results, heard } = await outcome();
    expect(results["plaintext host listed"]).toEqual({ status: 200, error: null });
    const head = heard.publicAll.find((h) => h.startsWith("GET /listed "))!;
    expect(head).toContain("authorization: Bearer S3CR3T-egress-0123456789");
  });
});

describe("egress guard, cloud mode", () => {
  test("loopback and private addresses are refused; a pin to a private address is not trusted", async () => {
    await refused("cloud loopback");
    await refused("cloud private");
    await refused("cloud pinned private");
  });
  test("a passthrough host pinned to the metadata address is refused (passthrough is guarded too)", () => refused("cloud passthrough pinned to metadata"));
  test("a public address is reached", async () => {
    const { results, heard } = await outcome();
    expect(results["cloud public"]).toEqual({ status: 200, error: null });
    expect(heard.publicAll.some((h) => h.startsWith("GET /cloud-public "))).toBe(true);
  });
});

describe("egress guard on names resolved through DNS (docs/operations.md#dns)", () => {
  test("a name whose DNS answer is the metadata address → 403 egress_denied (absolute-form and CONNECT), nothing dialled", async () => {
    await refused("dns metadata absolute");
    await refused("dns metadata connect");
    await refused("dns metadata again");
    const { heard, dnsQueries } = await outcome();
    // The listeners' only connections are the allowed and pinned ones counted above.
    expect(heard.metadata80).toBe(1);
    expect(heard.metadata443).toBe(1);
    // Three requests, one query: the verdict is kept with the answer.
    expect(dnsQueries.metadata).toBe(1);
  });
  test("a name with a public answer is reached", async () => {
    const { results, heard } = await outcome();
    expect(results["dns public"]).toEqual({ status: 200, error: null });
    expect(heard.publicAll.some((h) => h.startsWith("GET /dns-public "))).toBe(true);
  });
  test("a name that changes to the metadata address after its TTL is judged again and refused", async () => {
    const { results, heard, dnsQueries } = await outcome();
    expect(results["rebind before"]).toEqual({ status: 200, error: null });
    expect(heard.publicAll.some((h) => h.startsWith("GET /rebind-1 "))).toBe(true);
    await refused("rebind after");
    expect(heard.metadataHeads.some((h) => h.includes("rebind"))).toBe(false);
    expect(dnsQueries.rebind).toBe(2);
  });
});
