// The database listener's transport rule (docs/databases.md): the agent token is a password, asked only over TLS
// or from a loopback peer. A non-loopback peer needs an address that is not loopback: credgate runs in its own
// network namespace (test/support/databaseNetnsScenario.ts, `unshare -n`) where 10.1.2.3 sits on `lo`, and
// nothing can leave the namespace.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";

const SCENARIO = join(import.meta.dir, "../support/databaseNetnsScenario.ts");
const NEEDS_TLS = "credgate: connect with sslmode=require: the agent token is a password";

interface Outcome {
  plainPsql: string;
  plainPg: { code?: string; message: string };
  plainRaw: { type: string; fields: Record<string, string> };
  tlsWrongToken: { code?: string; message: string };
  tlsPsql: string;
  loopbackPlain: { code?: string; message: string };
  tokenInOutput: boolean;
}

let scenario: Promise<Outcome> | null = null;
function outcome(): Promise<Outcome> {
  scenario ??= (async () => {
    const setup = "ip link set lo up && ip addr add 10.1.2.3/32 dev lo";
    // The engine is irrelevant here, and a PostgreSQL server outside the namespace is unreachable.
    const r = await run(["unshare", "-n", "sh", "-c", `${setup} && exec "$0" "$1"`, process.execPath, SCENARIO], { env: { CREDGATE_TEST_ENGINE: "sqlite" }, timeoutMs: 90_000 });
    if (r.code !== 0) throw new Error(`database netns scenario failed (${r.code}): ${r.stderr}\n${r.stdout}`);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Outcome;
  })();
  return scenario;
}

describe("a peer that is not loopback", () => {
  test("without TLS → FATAL 28000 before any password is asked (raw client, pg, psql)", async () => {
    const o = await outcome();
    // The first answer to the startup is the error itself, not AuthenticationCleartextPassword ('R').
    expect(o.plainRaw).toEqual({ type: "E", fields: expect.objectContaining({ S: "FATAL", V: "FATAL", C: "28000", M: NEEDS_TLS }) });
    expect(o.plainPg).toEqual({ code: "28000", message: NEEDS_TLS });
    expect(o.plainPsql).toContain(`FATAL:  ${NEEDS_TLS}`);
    expect(o.tokenInOutput).toBe(false);
  }, 120_000);

  test("over TLS the token is asked and checked: a wrong one → 28P01; the right one reaches the secret lookup (28000 no credential)", async () => {
    const o = await outcome();
    expect(o.tlsWrongToken).toEqual({ code: "28P01", message: "credgate: invalid agent token" });
    // libpq verify-full: the listener's certificate names the interface address too.
    expect(o.tlsPsql).toContain('FATAL:  credgate: no database credential "db_any" for this agent');
  });

  test("a loopback peer without TLS is asked for the token (the refusal is the secret lookup's, not the transport's)", async () => {
    const o = await outcome();
    expect(o.loopbackPlain).toEqual({ code: "28000", message: 'credgate: no database credential "db_any" for this agent' });
  });
});
