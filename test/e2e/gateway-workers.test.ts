// Gateway workers (`--gateway-workers N`, docs/configuration.md#server-settings; issue 13): N processes share the gateway port. The
// kernel spreads connections over them (checked with `ss`: which process holds each tunnel); a change made
// through the API is applied by every worker before the API answers; rate limits, approvals and metrics stay
// exact across processes (and approval decisions sent to the gateway port of any process keep one verifiable
// audit chain); SIGTERM stops them all; a worker that dies is started again, cancelling only the
// approvals it held itself; workers stop when their primary is killed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { eventually, gatewayCa, resolveEntries } from "../support/gateway.ts";
import { sql } from "drizzle-orm";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { openProcessTunnel, tunnelsOnEveryProcess } from "../support/processTunnels.ts";
import { queryStore } from "../support/storeQuery.ts";
import { parseExposition } from "../support/prometheus.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";
import { clearOfWindowEdge, HOUR_MS } from "../support/windowEdge.ts";

const HOST = "api.workers.test";
const PROCESSES = 3;

let cg: RunningCredgate;
let up: TestUpstream;
let ca: { pem: string; file: string };

beforeAll(async () => {
  const pki = makePki([HOST]);
  up = startUpstream(pki);
  cg = await startCredgate({ env: { CREDGATE_GATEWAY_WORKERS: String(PROCESSES), CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], up.port) } });
  ca = await gatewayCa(cg);
}, 40_000);

afterAll(async () => {
  await cg?.stop("SIGKILL");
  for (const pid of childrenOf(cg?.proc.pid ?? -1)) process.kill(pid, "SIGKILL");
  await up?.stop();
});

/** Processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.push(Number(entry));
    } catch {}
  }
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A CONNECT tunnel with TLS inside, and which gateway process took it. */
const tunnel = (token = cg.keys.defaultAgentToken) => openProcessTunnel(cg.gatewayPort, token, ca.pem, HOST, up.port);
/** Tunnels until every gateway process holds at least one. */
const onEveryProcess = () => tunnelsOnEveryProcess(() => tunnel(), PROCESSES);

/**
 * A published rule holding `prefix`* for approval, and a request under it (`prefix` + its index) on a tunnel to
 * every process, each listed pending. The caller closes the tunnels.
 */
async function heldOnEveryProcess(prefix: string) {
  const rule = await cg.api("POST", "/v1/policy/rules", {
    body: { name: `hold ${prefix}`, action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: HOST, pathPattern: `${prefix}*` }] },
  });
  expect(rule.status).toBe(201);
  expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
  const tunnels = await onEveryProcess();
  try {
    const answers = tunnels.map((t, i) => t.get(`${prefix}${i}`).catch(() => null));
    const pending = await eventually(async () => {
      const list = ((await cg.api("GET", "/v1/approvals/pending")).body?.requests ?? []).filter((r: any) => r.path.startsWith(prefix));
      return list.length === tunnels.length ? list : null;
    }, 15_000, 50);
    expect(pending).not.toBeNull();
    return { tunnels, answers, pending };
  } catch (err) {
    for (const t of tunnels) t.close();
    throw err;
  }
}

const seenAuth = (path: string) => up.seen.filter((s) => s.url === path).map((s) => s.headers.authorization);

describe("gateway workers", () => {
  test(`${PROCESSES} processes share the gateway port: the primary and its workers each take connections`, async () => {
    const workers = childrenOf(cg.proc.pid);
    expect(workers.length).toBe(PROCESSES - 1);
    const tunnels = await onEveryProcess();
    expect(new Set(tunnels.map((t) => t.pid))).toEqual(new Set([cg.proc.pid, ...workers]));
    for (const t of tunnels) t.close();
    expect(cg.output().match(/"msg":"gateway worker started"/g)?.length).toBe(PROCESSES - 1);
  });

  test("a secret created, then changed, through the API is injected by every process on the next request", async () => {
    const tunnels = await onEveryProcess();
    try {
      const created = await cg.api("POST", "/v1/secrets", {
        body: { name: "workers", type: "generic", value: "first-value", hostPattern: HOST, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
      });
      expect(created.status).toBe(201);
      // No waiting: the API answered once every worker had applied the change.
      for (const [i, t] of tunnels.entries()) expect((await t.get(`/created/${i}`)).status).toBe(200);
      for (const i of tunnels.keys()) expect(seenAuth(`/created/${i}`)).toEqual(["Bearer first-value"]);

      expect((await cg.api("PATCH", `/v1/secrets/${created.body.id}`, { body: { value: "second-value" } })).status).toBe(200);
      for (const [i, t] of tunnels.entries()) expect((await t.get(`/changed/${i}`)).status).toBe(200);
      for (const i of tunnels.keys()) expect(seenAuth(`/changed/${i}`)).toEqual(["Bearer second-value"]);
    } finally {
      for (const t of tunnels) t.close();
    }
  });

  test("a rate limit counts across processes: 3 per hour admits exactly 3 of 12 requests spread over all of them", async () => {
    await clearOfWindowEdge(HOUR_MS);
    const rule = await cg.api("POST", "/v1/policy/rules", {
      body: { name: "3 an hour", action: "allow", rateLimit: 3, rateLimitWindow: "hour", targets: [{ kind: "network", hostPattern: HOST, pathPattern: "/limited/*" }] },
    });
    expect(rule.status).toBe(201);
    expect((await cg.api("POST", "/v1/policy/publish")).status).toBe(200);
    const statuses: number[] = [];
    const pids = new Set<number | null>();
    for (let i = 0; i < 12; i++) {
      const t = await tunnel();
      pids.add(t.pid);
      statuses.push((await t.get(`/limited/${i}`)).status);
      t.close();
    }
    expect(pids.size).toBeGreaterThan(1);
    expect(statuses.filter((s) => s === 200).length).toBe(3);
    expect(statuses.filter((s) => s === 429).length).toBe(9);
  }, 60_000);

  test("requests held for approval on any process are listed, decided through the API, and complete", async () => {
    const { tunnels, answers, pending } = await heldOnEveryProcess("/held/");
    try {
      for (const p of pending) expect((await cg.api("POST", `/v1/approvals/${p.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
      expect((await Promise.all(answers)).map((a) => a?.status)).toEqual(tunnels.map(() => 200));
    } finally {
      for (const t of tunnels) t.close();
    }
  });

  test("approvals decided through the gateway port (any process): one audit event each, and the chain with its checkpoint verifies", async () => {
    const { tunnels, answers, pending } = await heldOnEveryProcess("/audited/");
    try {
      for (const p of pending) {
        // A new connection each time: the kernel hands them to the primary and the workers alike.
        const res = await fetch(`${cg.gatewayUrl}/v1/approvals/${p.id}/decision`, {
          method: "POST",
          headers: { authorization: `Bearer ${cg.keys.projectApiKey}`, "content-type": "application/json", connection: "close" },
          body: JSON.stringify({ decision: "approve" }),
        });
        expect(res.status).toBe(200);
      }
      expect((await Promise.all(answers)).map((a) => a?.status)).toEqual(tunnels.map(() => 200));
    } finally {
      for (const t of tunnels) t.close();
    }
    const events = await queryStore<{ target_id: string; address: string | null }>(cg, sql`SELECT target_id, address FROM audit_events WHERE action = 'POST /v1/approvals/{approvalId}/decision'`);
    for (const p of pending) expect(events.filter((e) => e.target_id === p.id)).toEqual([{ target_id: p.id, address: null }]);
    const verified = await runCli(["audit", "verify", "--data-dir", cg.dataDir], cg.env);
    expect(verified.stdout).toMatch(/^audit chain intact: \d+ events\n$/);
    expect(verified.code).toBe(0);
  });

  test("a worker killed while holding requests cancels only its own when it starts again: the others' stay held and complete", async () => {
    const { tunnels, answers, pending } = await heldOnEveryProcess("/survives/");
    try {
      const idOf = (i: number) => pending.find((p: any) => p.path === `/survives/${i}`).id as string;
      const victim = tunnels.find((t) => t.pid !== null && t.pid !== cg.proc.pid)!.pid!;
      const killed = tunnels.flatMap((t, i) => (t.pid === victim ? [i] : []));
      const others = tunnels.flatMap((t, i) => (t.pid !== victim ? [i] : []));
      const starts = cg.output().split('"msg":"gateway worker started"').length;
      process.kill(victim, "SIGKILL");
      // Started again: what the dead worker held is cancelled by its next life (docs/policy.md#approvals).
      await eventually(() => (cg.output().split('"msg":"gateway worker started"').length > starts ? true : null), 20_000, 50);
      for (const i of killed) expect((await cg.api("GET", `/v1/approvals/${idOf(i)}`)).body.status).toBe("cancelled");
      // Everything the primary and the other worker hold is still pending, and goes on once approved.
      for (const i of others) {
        expect((await cg.api("GET", `/v1/approvals/${idOf(i)}`)).body.status).toBe("pending");
        expect((await cg.api("POST", `/v1/approvals/${idOf(i)}/decision`, { body: { decision: "approve" } })).status).toBe(200);
      }
      expect((await Promise.all(others.map((i) => answers[i]))).map((a) => a?.status)).toEqual(others.map(() => 200));
    } finally {
      for (const t of tunnels) t.close();
    }
  }, 60_000);

  test("GET /metrics counts the requests of every process", async () => {
    const total = async () => {
      const family = parseExposition(await (await fetch(`${cg.apiUrl}/metrics`)).text()).get("credgate_gateway_requests_total");
      return (family?.metrics ?? []).reduce((n, m) => n + Number(m.value), 0);
    };
    const before = await total();
    const tunnels = await onEveryProcess();
    for (const [i, t] of tunnels.entries()) expect((await t.get(`/counted/${i}`)).status).toBe(200);
    for (const t of tunnels) t.close();
    // One per proxied request, whichever process answered it.
    expect(await total()).toBe(before + tunnels.length);
  });

  test("a worker that dies is started again; the port keeps serving meanwhile", async () => {
    const [victim] = childrenOf(cg.proc.pid);
    process.kill(victim!, "SIGKILL");
    // Connections the kernel had queued on the dead worker's socket are reset with it; new ones go to the others.
    await eventually(() => (alive(victim!) ? null : true), 5_000, 20);
    const t = await tunnel();
    expect((await t.get("/while-restarting")).status).toBe(200);
    t.close();
    await eventually(() => (childrenOf(cg.proc.pid).filter((p) => p !== victim).length === PROCESSES - 1 ? true : null), 10_000, 100);
    expect(cg.output()).toContain('"msg":"gateway worker exited: starting it again"');
    await onEveryProcess().then((ts) => ts.forEach((x) => x.close()));
  });
});

describe("stopping", () => {
  test("SIGTERM stops the primary and every worker, exit 0", async () => {
    const other = await startCredgate({ env: { CREDGATE_GATEWAY_WORKERS: "2" } });
    const workers = childrenOf(other.proc.pid);
    expect(workers.length).toBe(1);
    expect(await other.stop("SIGTERM")).toBe(0);
    await eventually(() => (workers.every((p) => !alive(p)) ? true : null), 10_000, 50);
  }, 30_000);

  test("workers stop when their primary is killed", async () => {
    const other = await startCredgate({ env: { CREDGATE_GATEWAY_WORKERS: "2" } });
    const workers = childrenOf(other.proc.pid);
    expect(workers.length).toBe(1);
    await other.stop("SIGKILL");
    await eventually(() => (workers.every((p) => !alive(p)) ? true : null), 10_000, 50);
  }, 30_000);
});
