// The egress guard on secret store reads (docs/injection.md#secret-stores, docs/guards.md#egress-guard) through the
// real process, in a network namespace of its own (test/support/storeEgressScenario.ts, started with `unshare -n`):
// the fake Vault and the fake AWS Secrets Manager are put at the cloud metadata address and at a private address by
// relays that count connections and read the TLS server name.
//   - cloud mode: a store pinned (CREDGATE_RESOLVE, CREDGATE_CONNECT_TO) at 169.254.169.254 or 10.1.2.3 is refused
//     before anything is dialled → 502 credential_unavailable naming the secret, the relays hear nothing, the test
//     endpoint says which address was refused; with CREDGATE_EGRESS_ALLOW naming both, the reads succeed.
//   - self-hosted defaults: a store whose name resolves to the metadata address is refused (link-local is refused in
//     every mode); one resolving to a private address is read; the operator's own pin is trusted, even to the
//     metadata address (the guard's rule for pins, not something an agent can choose).
import { expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";

const SCENARIO = join(import.meta.dir, "../support/storeEgressScenario.ts");
const AWS_HOST = "secretsmanager.us-east-1.amazonaws.com";
const RELAYS = ["169.254.169.254:8200", "169.254.169.254:443", "10.1.2.3:8200", "10.1.2.3:443"] as const;

interface Attempt {
  status: number;
  body: any;
  heard: Record<string, (string | null)[]>;
  forwarded: string | null;
  tested: { ok: boolean; message: string };
}
interface Scenario {
  results: Record<string, Attempt>;
  reasons: Record<string, string[]>;
  agentHeard: (string | null)[];
  valueLogged: boolean;
}

let scenario: Promise<Scenario> | null = null;
function outcome(): Promise<Scenario> {
  scenario ??= (async () => {
    const setup = "ip link set lo up && ip addr add 169.254.169.254/32 dev lo && ip addr add 10.1.2.3/32 dev lo && ip addr add 203.0.113.7/32 dev lo";
    // The engine is irrelevant here (store values live in memory), and a PostgreSQL server outside is unreachable.
    const r = await run(["unshare", "-n", "sh", "-c", `${setup} && exec "$0" "$1"`, process.execPath, SCENARIO], { env: { CREDGATE_TEST_ENGINE: "sqlite" }, timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`store egress scenario failed (${r.code}): ${r.stderr}\n${r.stdout}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Scenario;
  })();
  return scenario;
}

/** Refused by the egress guard: 502 naming the secret, nothing forwarded, no relay heard anything, the test endpoint says why. */
async function refused(name: string, address: string, host: string): Promise<void> {
  const a = (await outcome()).results[name]!;
  expect(a.status).toBe(502);
  expect(a.body).toEqual({ error: "credential_unavailable", message: "credgate could not obtain the credential for api.storeegress.test, so the request was not forwarded.", secret_name: name });
  expect(a.forwarded).toBeNull();
  expect(a.heard).toEqual(Object.fromEntries(RELAYS.map((r) => [r, []])));
  expect(a.tested).toEqual({ ok: false, message: `credgate does not connect to ${address} (${host}): the destination is an internal or reserved address (CREDGATE_EGRESS_ALLOW)` });
}

/** Read: the upstream got the value, and only `relay` heard connections, each naming `sni`. */
async function read(name: string, relay: (typeof RELAYS)[number], sni: string): Promise<void> {
  const a = (await outcome()).results[name]!;
  expect(a.status).toBe(200);
  expect(a.forwarded).toBe("the value");
  expect(a.tested.ok).toBe(true);
  for (const r of RELAYS) {
    if (r !== relay) expect(a.heard[r]).toEqual([]);
  }
  expect(a.heard[relay]!.length).toBeGreaterThanOrEqual(1);
  expect(new Set(a.heard[relay])).toEqual(new Set([sni]));
}

test("cloud mode: Vault pinned at the metadata address is refused before any connection", () => refused("cloud-vault", "169.254.169.254", "vault.meta.test"), 150_000);

test("cloud mode: AWS pinned at a private address is refused before any connection", () => refused("cloud-aws", "10.1.2.3", AWS_HOST));

test("cloud mode with CREDGATE_EGRESS_ALLOW naming both addresses: both stores are read, their names kept in TLS", async () => {
  await read("cloud-allowed-vault", "169.254.169.254:8200", "vault.meta.test");
  await read("cloud-allowed-aws", "10.1.2.3:443", AWS_HOST);
});

test("self-hosted: a store whose name resolves to the metadata address is refused (link-local, every mode)", () => refused("self-metadata-vault", "169.254.169.254", "vault.dns-meta.test"));

test("self-hosted: a store resolving to a private address, or pinned at one, is read", async () => {
  await read("self-private-vault", "10.1.2.3:8200", "vault.dns-private.test");
  await read("self-metadata-aws", "10.1.2.3:443", AWS_HOST);
});

test("self-hosted: the operator's own pin (CREDGATE_CONNECT_TO) is trusted, even at the metadata address", () => read("self-private-aws", "169.254.169.254:443", AWS_HOST));

test("each refusal is logged as egress_denied; no value is ever logged", async () => {
  const { reasons, valueLogged } = await outcome();
  expect(reasons).toEqual({ cloud: ["egress_denied", "egress_denied"], "cloud-allowed": [], "self-metadata": ["egress_denied"], "self-private": [] });
  expect(valueLogged).toBe(false);
});
