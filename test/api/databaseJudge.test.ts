// The database broker's judge (docs/databases.md#statements-reads-and-writes) over the real services on a real
// store (SQLite, or PostgreSQL in the Postgres run): database secrets and policy rules made through the API, the
// agent's view from the real GatewaySnapshot, approvals decided through the API. Every refusal with its SQLSTATE
// and message, reads passing synchronously, the leak guard, policy block / rate limit / approval on the database
// host, readOnly, writes block and approve (approved, denied, expired, cancelled, remembered per agent and
// secret), and the log rows: method SQL, the statement cut at 200 characters with secret values redacted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { StatementJudge, statementJudgeOf, writeApprovalRule, type DbSession, type StatementVerdict } from "../../src/gateway/postgres/judge.ts";
import { logStatement } from "../../src/gateway/postgres/statementLog.ts";
import { GatewaySnapshot } from "../../src/gateway/snapshot.ts";
import { registry } from "../../src/observability/metrics.ts";
import { createTestApi, type TestApi } from "../support/app.ts";
import { until } from "../support/gateway.ts";

const PASSWORD = "pg-password-0123456789-abcdef";
const HTTP_SECRET = "http-api-key-abcdefghijklmnop";
const HOST = "db.judge.test";

let api: TestApi;
let snapshot: GatewaySnapshot;
let judge: StatementJudge;
const never = new AbortController().signal;

async function createDatabaseSecret(t: TestApi, name: string, host: string, config: Record<string, unknown> = {}): Promise<string> {
  const res = await t.call("POST", "/v1/secrets", {
    body: { name, type: "generic", value: PASSWORD, hostPattern: host, injectionConfig: { database: { engine: "postgresql", user: "app", ...config } } },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function rule(t: TestApi, body: Record<string, unknown>): Promise<void> {
  expect((await t.call("POST", "/v1/policy/rules", { body })).status).toBe(201);
}

/** The default agent's session on database credential `name`, from the real snapshot. */
async function sessionOn(s: GatewaySnapshot, t: TestApi, name: string, port = 5432): Promise<DbSession> {
  const agent = (await s.agentForToken(t.core.bootstrap.defaultAgentToken))!;
  const credentials = await s.credentials(agent);
  const credential = credentials.databases.get(name);
  if (!credential) throw new Error(`no database credential ${name}`);
  return { agent, credential, host: port === 5432 ? credential.host : `${credential.host}:${port}`, database: "app", credentials };
}

beforeAll(async () => {
  api = await createTestApi();
  expect((await api.call("POST", "/v1/secrets", { body: { name: "http-key", type: "generic", value: HTTP_SECRET, hostPattern: "api.example.com", injectionConfig: { headerName: "x-api-key" } } })).status).toBe(201);
  await createDatabaseSecret(api, "rw", HOST);
  await createDatabaseSecret(api, "ro", HOST, { readOnly: true });
  await createDatabaseSecret(api, "blk", HOST, { writes: "block" });
  await createDatabaseSecret(api, "apv", HOST, { writes: "approve" });
  await createDatabaseSecret(api, "ro-apv", HOST, { readOnly: true, writes: "approve" });
  await createDatabaseSecret(api, "apv2", HOST, { writes: "approve" });
  await createDatabaseSecret(api, "apv-log", HOST, { writes: "approve" });
  await createDatabaseSecret(api, "blocked", "blocked.db.test");
  await createDatabaseSecret(api, "limited", "limited.db.test");
  await createDatabaseSecret(api, "held", "held.db.test");
  await createDatabaseSecret(api, "held-apv", "held.db.test", { writes: "approve" });
  await createDatabaseSecret(api, "drops", "drops.db.test");
  await createDatabaseSecret(api, "sql-method", "sqlmethod.db.test");
  const bySecret = await createDatabaseSecret(api, "by-secret", "secret.db.test");
  await rule(api, { name: "Not this credential", action: "block", targets: [{ kind: "secret", secretId: bySecret }] });
  await rule(api, { name: "No statements to blocked", action: "block", targets: [{ kind: "network", hostPattern: "blocked.db.test" }] });
  await rule(api, { name: "Two a minute", action: "allow", rateLimit: 2, rateLimitWindow: "minute", targets: [{ kind: "network", hostPattern: "limited.db.test" }] });
  await rule(api, { name: "Ask for held", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: "held.db.test" }] });
  await rule(api, { name: "No drops", action: "block", conditions: [{ target: "body", operator: "contains", value: "drop table" }], targets: [{ kind: "network", hostPattern: "drops.db.test" }] });
  await rule(api, { name: "No SQL to sqlmethod", action: "block", targets: [{ kind: "network", hostPattern: "sqlmethod.db.test", method: "SQL" }] });
  // An HTTP-only rule (method POST) never matches a statement (method SQL).
  await rule(api, { name: "HTTP posts only", action: "block", targets: [{ kind: "network", hostPattern: HOST, method: "POST" }] });
  expect((await api.call("POST", "/v1/policy/publish")).status).toBe(200);
  snapshot = await GatewaySnapshot.create(api.core.services);
  judge = statementJudgeOf(api.core.services, snapshot, api.core.config);
});

afterAll(async () => {
  await api.core.close();
});

/** A verdict that must have been given synchronously. */
function sync(v: StatementVerdict | Promise<StatementVerdict>): StatementVerdict {
  expect(v).not.toBeInstanceOf(Promise);
  return v as StatementVerdict;
}

/** The approval a held statement waits on, once it exists. */
async function pendingApproval(t: TestApi, path: string): Promise<{ id: string; method: string; host: string; path: string; summary: unknown; bodyPreview: string }> {
  return until(async () => {
    const [found] = await t.core.store.query<{ id: string }>(sql`SELECT id FROM approvals WHERE path = ${path} AND status = 'pending'`);
    if (!found) throw new Error("not held yet");
    return (await t.call("GET", `/v1/approvals/${found.id}`)).body;
  });
}

async function decide(t: TestApi, id: string, body: Record<string, unknown>): Promise<void> {
  expect((await t.call("POST", `/v1/approvals/${id}/decision`, { body })).status).toBe(200);
}

describe("reads and writes by credential", () => {
  test("writes: allow — reads and writes pass synchronously, decision allowed", async () => {
    const s = await sessionOn(snapshot, api, "rw");
    expect(sync(judge.judge(s, "SELECT 1", never))).toEqual({ ok: true, decision: "allowed" });
    expect(sync(judge.judge(s, "DELETE FROM items", never))).toEqual({ ok: true, decision: "allowed" });
  });

  test("readOnly — reads pass; writes and every lift → 25006, the session's next read passes", async () => {
    const s = await sessionOn(snapshot, api, "ro");
    const readOnly: StatementVerdict = { ok: false, decision: "blocked", code: "25006", message: "credgate: this database credential is read-only" };
    for (const statement of [
      "INSERT INTO items VALUES (1)",
      "WITH x AS (DELETE FROM items RETURNING *) SELECT * FROM x",
      "SET default_transaction_read_only = off",
      'SET "transaction_read_only" TO off',
      "RESET ALL",
      "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
      "BEGIN ISOLATION LEVEL SERIALIZABLE, READ WRITE",
      "SELECT set_config('transaction_read_only', 'off', false)",
      "SELECT * FROM items WHERE set_config('default_transaction_read_only', 'off', false) = 'off'",
      "EXPLAIN ANALYZE DELETE FROM items",
      "COPY items FROM STDIN",
      "SELECT * INTO copy_of_items FROM items",
    ]) {
      expect(sync(judge.judge(s, statement, never))).toEqual(readOnly);
    }
    for (const statement of ["SELECT * FROM items", "BEGIN READ ONLY", "COPY items TO STDOUT", "SHOW transaction_read_only", "COMMIT"]) {
      expect(sync(judge.judge(s, statement, never))).toEqual({ ok: true, decision: "allowed" });
    }
  });

  test("readOnly wins over writes: approve — a write is refused, never held", async () => {
    const s = await sessionOn(snapshot, api, "ro-apv");
    expect(sync(judge.judge(s, "UPDATE items SET name = 'x'", never))).toMatchObject({ ok: false, code: "25006" });
  });

  test("writes: block — writes and lifts → 42501 writes are blocked; reads pass", async () => {
    const s = await sessionOn(snapshot, api, "blk");
    const blocked: StatementVerdict = { ok: false, decision: "blocked", code: "42501", message: "credgate: writes are blocked for this database credential" };
    expect(sync(judge.judge(s, "DROP TABLE items", never))).toEqual(blocked);
    expect(sync(judge.judge(s, "SELECT set_config('transaction_read_only', 'off', false)", never))).toEqual(blocked);
    expect(sync(judge.judge(s, "START TRANSACTION READ WRITE", never))).toEqual(blocked);
    expect(sync(judge.judge(s, "SELECT * FROM items FOR UPDATE", never))).toEqual(blocked);
    expect(sync(judge.judge(s, "TABLE items", never))).toEqual({ ok: true, decision: "allowed" });
  });
});

describe("the leak guard", () => {
  const leak: StatementVerdict = { ok: false, decision: "blocked", code: "42501", message: "credgate: the statement carries a credgate secret" };

  test("any credgate secret's value in a statement → 42501, whatever the host; the credential's own password too", async () => {
    const s = await sessionOn(snapshot, api, "rw");
    expect(sync(judge.judge(s, `INSERT INTO notes VALUES ('${HTTP_SECRET}')`, never))).toEqual(leak);
    expect(sync(judge.judge(s, `SELECT '${PASSWORD}'`, never))).toEqual(leak);
    // Its base64 form and a non-ASCII neighbour hide nothing.
    expect(sync(judge.judge(s, `SELECT '${Buffer.from(HTTP_SECRET).toString("base64")}'`, never))).toEqual(leak);
    expect(sync(judge.judge(s, `SELECT 'é ${PASSWORD} é'`, never))).toEqual(leak);
    // Checked before anything else: a read-only credential's read with a secret is a leak, not a read.
    expect(sync(judge.judge(await sessionOn(snapshot, api, "ro"), `SELECT '${PASSWORD}'`, never))).toEqual(leak);
  });

  test("CREDGATE_LEAK_GUARD=off turns it off", async () => {
    const off = new StatementJudge({ approvals: api.core.services.approvals, requestLogs: api.core.services.requestLogs, rateLimits: api.core.services.rateLimits, remembered: snapshot.remembered, leakGuard: false });
    expect(sync(off.judge(await sessionOn(snapshot, api, "rw"), `SELECT '${PASSWORD}'`, never))).toEqual({ ok: true, decision: "allowed" });
  });
});

describe("policy rules on the database host (method SQL, path /)", () => {
  test("block → 42501 naming the rule and the host; decision blocked with the rule", async () => {
    const s = await sessionOn(snapshot, api, "blocked");
    expect(sync(judge.judge(s, "SELECT 1", never))).toEqual({
      ok: false,
      decision: "blocked",
      code: "42501",
      message: 'credgate: policy rule "No statements to blocked" blocks statements to host "blocked.db.test"',
      rule: { logicalId: expect.any(String), name: "No statements to blocked" },
    });
  });

  test("a rule's body conditions read the statement", async () => {
    const s = await sessionOn(snapshot, api, "drops");
    expect(sync(judge.judge(s, "DROP TABLE items", never))).toMatchObject({ ok: false, code: "42501", message: 'credgate: policy rule "No drops" blocks statements to host "drops.db.test"' });
    expect(sync(judge.judge(s, "SELECT 1", never))).toMatchObject({ ok: true, decision: "allowed" });
  });

  test("a rule on the database secret itself applies to its statements", async () => {
    expect(sync(judge.judge(await sessionOn(snapshot, api, "by-secret"), "SELECT 1", never))).toMatchObject({
      ok: false,
      code: "42501",
      message: 'credgate: policy rule "Not this credential" blocks statements to host "secret.db.test"',
    });
  });

  test("a rule naming the method SQL applies to statements", async () => {
    expect(sync(judge.judge(await sessionOn(snapshot, api, "sql-method"), "SELECT 1", never))).toMatchObject({
      ok: false,
      code: "42501",
      message: 'credgate: policy rule "No SQL to sqlmethod" blocks statements to host "sqlmethod.db.test"',
    });
  });

  test("a rule for another method (POST) does not apply to statements", async () => {
    expect(sync(judge.judge(await sessionOn(snapshot, api, "rw"), "SELECT 1", never))).toEqual({ ok: true, decision: "allowed" });
  });

  test("rate_limit → counted in the store; past the limit 53400 rate limit reached, decision rate_limited", async () => {
    const s = await sessionOn(snapshot, api, "limited");
    const first = judge.judge(s, "SELECT 1", never);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toMatchObject({ ok: true, decision: "allowed" });
    expect(await judge.judge(s, "SELECT 2", never)).toMatchObject({ ok: true, decision: "allowed" });
    expect(await judge.judge(s, "SELECT 3", never)).toEqual({
      ok: false,
      decision: "rate_limited",
      code: "53400",
      message: "credgate: rate limit reached",
      rule: { logicalId: expect.any(String), name: "Two a minute" },
    });
  });

  test("approval → held (SQL, host, the statement as path); approved passes; denied → 42501 the statement was not approved", async () => {
    const s = await sessionOn(snapshot, api, "held", 6543);
    const statement = "SELECT count(*) FROM items WHERE data ? 'k'";
    const verdict = judge.judge(s, statement, never);
    expect(verdict).toBeInstanceOf(Promise);
    const held = await pendingApproval(api, statement);
    expect(held).toMatchObject({ method: "SQL", host: "held.db.test:6543", path: statement });
    expect(held.bodyPreview).toContain(`Statement: ${statement}`);
    await decide(api, held.id, { decision: "approve" });
    expect(await verdict).toEqual({ ok: true, decision: "approval_approved", approvalId: held.id, rule: { logicalId: expect.any(String), name: "Ask for held" } });

    const denied = judge.judge(s, "SELECT 2", never);
    const second = await pendingApproval(api, "SELECT 2");
    await decide(api, second.id, { decision: "deny" });
    expect(await denied).toMatchObject({ ok: false, decision: "approval_denied", code: "42501", message: "credgate: the statement was not approved", approvalId: second.id });
  });

  test("a rule's approval and a write's approval: one hold at a time, each remembered on its own", async () => {
    const s = await sessionOn(snapshot, api, "held-apv");
    const statement = "UPDATE items SET name = 'both'";
    const first = judge.judge(s, statement, never);
    const byRule = await pendingApproval(api, statement);
    await decide(api, byRule.id, { decision: "approve", remember: { minutes: 5 } });
    expect(await first).toMatchObject({ ok: true, decision: "approval_approved" });
    // The rule is remembered now; the write still needs its own approval.
    const second = judge.judge(s, statement, never);
    const byWrite = await pendingApproval(api, statement);
    const [row] = await api.core.store.query<{ rule_id: string }>(sql`SELECT rule_id FROM approvals WHERE id = ${byWrite.id}`);
    expect(row?.rule_id).toBe(writeApprovalRule(s.credential).logicalId);
    await decide(api, byWrite.id, { decision: "approve", remember: { minutes: 5 } });
    expect(await second).toMatchObject({ ok: true, decision: "approval_approved" });
    await until(() => {
      const v = sync(judge.judge(s, statement, never));
      if (v.decision !== "approved_by_memory") throw new Error(`still ${v.decision}`);
      return v;
    });
  });
});

describe("writes: approve", () => {
  test("a client_encoding that could hide a quote from the judge is refused, never asked; a safe one is held like any SET", async () => {
    const s = await sessionOn(snapshot, api, "apv");
    const refused: StatementVerdict = { ok: false, decision: "blocked", code: "42501", message: "credgate: this client_encoding cannot be used through credgate; use UTF8" };
    expect(sync(judge.judge(s, "SET client_encoding = 'SJIS'", never))).toEqual(refused);
    // A read to the classifier, a change of encoding to the server.
    expect(sync(judge.judge(s, "SELECT set_config('client_encoding', 'BIG5', false)", never))).toEqual(refused);
    const safe = judge.judge(s, "SET client_encoding = 'UTF8'", never);
    expect(safe).toBeInstanceOf(Promise);
    const held = await pendingApproval(api, "SET client_encoding = 'UTF8'");
    await decide(api, held.id, { decision: "deny" });
    expect(await safe).toMatchObject({ decision: "approval_denied" });
  });

  test("a read passes at once; a write is held until approved, then passes as approval_approved", async () => {
    const s = await sessionOn(snapshot, api, "apv");
    expect(sync(judge.judge(s, "SELECT * FROM items", never))).toEqual({ ok: true, decision: "allowed" });
    const statement = "INSERT INTO items (name) VALUES ('approved')";
    const verdict = judge.judge(s, statement, never);
    const held = await pendingApproval(api, statement);
    expect(held).toMatchObject({ method: "SQL", host: HOST, path: statement, summary: { action: "SQL statement" } });
    await decide(api, held.id, { decision: "approve" });
    expect(await verdict).toEqual({ ok: true, decision: "approval_approved", approvalId: held.id });
  });

  test("denied → 42501 the write was not approved, with the approval id", async () => {
    const s = await sessionOn(snapshot, api, "apv");
    const verdict = judge.judge(s, "DELETE FROM items WHERE name = 'denied'", never);
    const held = await pendingApproval(api, "DELETE FROM items WHERE name = 'denied'");
    await decide(api, held.id, { decision: "deny" });
    expect(await verdict).toEqual({ ok: false, decision: "approval_denied", code: "42501", message: "credgate: the write was not approved", approvalId: held.id });
  });

  test("the path of a long statement is its first 1,000 characters", async () => {
    const s = await sessionOn(snapshot, api, "apv");
    const statement = `INSERT INTO items (name) VALUES ('${"x".repeat(1500)}')`;
    const verdict = judge.judge(s, statement, never);
    const held = await pendingApproval(api, statement.slice(0, 1000));
    expect(held.path.length).toBe(1000);
    await decide(api, held.id, { decision: "deny" });
    expect(await verdict).toMatchObject({ decision: "approval_denied" });
  });

  test("the session goes away while held: the approval is cancelled, decision approval_cancelled", async () => {
    const s = await sessionOn(snapshot, api, "apv");
    const gone = new AbortController();
    const verdict = judge.judge(s, "DELETE FROM items WHERE name = 'gone'", gone.signal);
    const held = await pendingApproval(api, "DELETE FROM items WHERE name = 'gone'");
    gone.abort();
    expect(await verdict).toMatchObject({ ok: false, decision: "approval_cancelled", code: "57P01", approvalId: held.id });
    expect((await api.call("GET", `/v1/approvals/${held.id}`)).body.status).toBe("cancelled");
  });

  test("remembered per agent and secret: approved with remember, the next write passes synchronously as approved_by_memory; revoked, it is held again", async () => {
    const s = await sessionOn(snapshot, api, "apv");
    const statement = "UPDATE items SET name = 'remembered'";
    const first = judge.judge(s, statement, never);
    const held = await pendingApproval(api, statement);
    await decide(api, held.id, { decision: "approve", remember: { minutes: 15 } });
    expect(await first).toMatchObject({ ok: true, decision: "approval_approved" });
    expect(sync(judge.judge(s, "DELETE FROM items WHERE false", never))).toEqual({ ok: true, decision: "approved_by_memory" });
    // Another database credential of the same agent is not remembered.
    const other = judge.judge(await sessionOn(snapshot, api, "apv2"), "DELETE FROM items WHERE 1 = 2", never);
    expect(other).toBeInstanceOf(Promise);
    const otherHeld = await pendingApproval(api, "DELETE FROM items WHERE 1 = 2");
    await decide(api, otherHeld.id, { decision: "deny" });
    await other;
    const remembered = (await api.call("GET", "/v1/approvals/remembered")).body as { id: string; ruleId: string; ruleName: string }[];
    const mine = remembered.find((r) => r.ruleId === writeApprovalRule(s.credential).logicalId)!;
    expect(mine.ruleName).toBe('Writes with the database credential "apv"');
    expect((await api.call("DELETE", `/v1/approvals/remembered/${mine.id}`)).status).toBe(204);
    const again = await until(() => {
      const v = judge.judge(s, "DELETE FROM items WHERE 1 = 3", never);
      if (!(v instanceof Promise)) throw new Error("still remembered");
      return { v };
    });
    const heldAgain = await pendingApproval(api, "DELETE FROM items WHERE 1 = 3");
    await decide(api, heldAgain.id, { decision: "deny" });
    expect(await again.v).toMatchObject({ decision: "approval_denied" });
  });
});

describe("expiry, shutdown and a store that cannot hold", () => {
  test("not decided in time → 42501 the write was not approved, decision approval_expired", async () => {
    const short = await createTestApi({ CREDGATE_APPROVAL_TIMEOUT_SECONDS: "1" });
    try {
      await createDatabaseSecret(short, "apv", HOST, { writes: "approve" });
      const s2 = await GatewaySnapshot.create(short.core.services);
      const j = statementJudgeOf(short.core.services, s2, short.core.config);
      const verdict = await j.judge(await sessionOn(s2, short, "apv"), "DELETE FROM items", never);
      expect(verdict).toMatchObject({ ok: false, decision: "approval_expired", code: "42501", message: "credgate: the write was not approved", approvalId: expect.any(String) });
    } finally {
      await short.core.close();
    }
  });

  test("gateway shutdown releases a held write: 57P01, decision approval_cancelled", async () => {
    const own = await createTestApi();
    try {
      await createDatabaseSecret(own, "apv", HOST, { writes: "approve" });
      const s2 = await GatewaySnapshot.create(own.core.services);
      const j = statementJudgeOf(own.core.services, s2, own.core.config);
      const verdict = j.judge(await sessionOn(s2, own, "apv"), "DELETE FROM items", never);
      await pendingApproval(own, "DELETE FROM items");
      await own.core.services.approvals.releaseAll();
      expect(await verdict).toMatchObject({
        ok: false,
        decision: "approval_cancelled",
        code: "57P01",
        message: "credgate: the gateway is restarting and released this statement before it was reviewed; retry it",
      });
    } finally {
      await own.core.close();
    }
  });

  test("an approval store that cannot hold → 58000, decision error", async () => {
    const closed = await createTestApi();
    await createDatabaseSecret(closed, "apv", HOST, { writes: "approve" });
    const s2 = await GatewaySnapshot.create(closed.core.services);
    const session = await sessionOn(s2, closed, "apv");
    const j = statementJudgeOf(closed.core.services, s2, closed.core.config);
    await closed.core.close();
    expect(await j.judge(session, "DELETE FROM items", never)).toEqual({
      ok: false,
      decision: "error",
      code: "58000",
      message: "credgate: the approval service is temporarily unavailable; try again",
    });
  });
});

describe("log rows and metrics", () => {
  async function rowsOf(host: string) {
    await api.core.services.requestLogs.flush();
    return (await api.call("GET", `/v1/logs?host=${encodeURIComponent(host)}&limit=100`)).body.data as { id: string; method: string; host: string; path: string; status: number; decision: string; latencyMs: number; approvalId: string | null }[];
  }

  test("one row per statement: method SQL, the host, the statement cut at 200 characters with every secret value redacted", async () => {
    const s = await sessionOn(snapshot, api, "rw", 6000);
    // A value that starts before the cut and ends after it is redacted whole, not half shown.
    const statement = `SELECT '${"a".repeat(190)}${PASSWORD}', '${HTTP_SECRET}'`;
    logStatement(api.core.services.requestLogs, s, { statement, decision: "blocked", status: 403, latencyMs: 3 });
    logStatement(api.core.services.requestLogs, s, { statement: `SELECT 'é${HTTP_SECRET}'`, decision: "blocked", status: 403, latencyMs: 1 });
    const rows = await rowsOf(`${HOST}:6000`);
    const long = rows.find((r) => r.path.startsWith("SELECT 'aaa"))!;
    expect(long).toMatchObject({ method: "SQL", host: `${HOST}:6000`, status: 403, decision: "blocked", latencyMs: 3 });
    expect(long.path).toBe(`SELECT '${"a".repeat(190)}credgate-redacted`.slice(0, 200));
    expect(long.path).not.toContain(PASSWORD.slice(0, 2));
    expect(rows.find((r) => r.path.startsWith("SELECT 'é"))!.path).toBe("SELECT 'écredgate-redacted'");
  });

  test("a held statement's row is written at once (202 approval_pending) and completed by logStatement", async () => {
    const s = await sessionOn(snapshot, api, "apv-log", 6001);
    const statement = "INSERT INTO items (name) VALUES ('logged')";
    const verdict = judge.judge(s, statement, never);
    const held = await pendingApproval(api, statement);
    expect((await rowsOf(`${HOST}:6001`)).filter((r) => r.approvalId === held.id)).toEqual([expect.objectContaining({ status: 202, decision: "approval_pending", method: "SQL", path: statement })]);
    await decide(api, held.id, { decision: "approve" });
    const v = await verdict;
    logStatement(api.core.services.requestLogs, s, { statement, decision: v.decision, status: 200, latencyMs: 12, approvalId: v.approvalId });
    expect((await rowsOf(`${HOST}:6001`)).filter((r) => r.approvalId === held.id)).toEqual([expect.objectContaining({ status: 200, decision: "approval_approved", latencyMs: 12 })]);
  });

  test("credgate_db_statements_total counts statements by decision", async () => {
    const count = async () => {
      const text = await registry.metrics();
      return Number(/credgate_db_statements_total\{decision="rate_limited"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await count();
    logStatement(api.core.services.requestLogs, await sessionOn(snapshot, api, "limited"), { statement: "SELECT 1", decision: "rate_limited", status: 403, latencyMs: 0 });
    expect(await count()).toBe(before + 1);
    expect(await registry.metrics()).toContain("# TYPE credgate_db_connections gauge");
  });
});
