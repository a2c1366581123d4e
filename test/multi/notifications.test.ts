// Notifications with two credgate instances on one PostgreSQL database (docs/policy.md#notifications,
// docs/operations.md): requests held at either instance's gateway, decided through either one's API, raise
// events that both instances' senders race for. A receiver of our own counts what arrives: every delivery
// arrives once on its first attempt (answered 503 on purpose) and once on its retry — never a third time,
// which a second instance sending it too would cause.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { curlThroughGateway } from "../support/curl.ts";
import { gatewayCa, until, untilTrue } from "../support/gateway.ts";
import { signatureValid } from "../support/notifyReceivers.ts";
import { freshDatabase, TEST_MASTER_KEY } from "../support/postgres.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const UP = "held.multi-notify.test";
const HOOK = "hooks.multi-notify.test";
const CALLS = 10;

let up: TestUpstream;
let receiver: Server<unknown>;
let a: RunningCredgate;
let b: RunningCredgate;
let caFile: string;
let secret = "";
const arrivals: { delivery: string; event: string; approvalId: string; status: number; verified: boolean }[] = [];

beforeAll(async () => {
  const pki = makePki([UP, HOOK]);
  up = startUpstream(pki);
  const seen = new Set<string>();
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
    async fetch(req) {
      const body = await req.text();
      const delivery = req.headers.get("x-credgate-delivery") ?? "";
      const json = JSON.parse(body);
      // The first attempt of each delivery fails: its retry is a second race between the instances.
      const status = seen.has(delivery) ? 204 : 503;
      seen.add(delivery);
      arrivals.push({ delivery, event: json.event, approvalId: json.data.approvalId, status, verified: signatureValid(secret, req.headers.get("x-credgate-signature") ?? "", body) });
      return new Response(null, { status });
    },
  });
  const env = {
    CREDGATE_DATABASE_URL: await freshDatabase(),
    CREDGATE_MASTER_KEY: TEST_MASTER_KEY,
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: `${UP}:${up.port}:127.0.0.1,${HOOK}:${receiver.port}:127.0.0.1`,
    CREDGATE_APPROVAL_POLL_SECONDS: "1",
  };
  [a, b] = await Promise.all([startCredgate({ env }), startCredgate({ env })]);
  caFile = (await gatewayCa(a)).file;
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await up?.stop();
  await receiver?.stop(true);
});

test("each event is delivered by one instance, once (and retried once after its first attempt failed)", async () => {
  const rule = await a.api("POST", "/v1/policy/rules", { body: { name: "ask", action: "allow", requireApproval: true, targets: [{ kind: "network", hostPattern: UP }] } });
  expect(rule.status).toBe(201);
  expect((await a.api("POST", "/v1/policy/publish")).status).toBe(200);
  const channel = await b.api("POST", "/v1/notifications/channels", { body: { kind: "webhook", url: `https://${HOOK}:${receiver.port}/count` } });
  expect(channel.status).toBe(201);
  secret = channel.body.signingSecret;

  // Held at both gateways (both instances share the gateway CA).
  const calls = Array.from({ length: CALLS }, (_, i) => {
    const at = i % 2 === 0 ? a : b;
    return { at, path: `/call-${i}`, done: curlThroughGateway(at, `https://${UP}:${up.port}/call-${i}`, { caFile, method: "POST", data: "{}", maxTime: 90 }) };
  });
  const approvals = await until(async () => {
    const pending = (await a.api("GET", "/v1/approvals/pending")).body.requests;
    if (pending.length < CALLS) throw new Error(`${pending.length} held so far`);
    return pending as any[];
  }, 30_000);
  // Each request's notification arrives (after its retry) while it is still pending: retries end with the approval.
  const delivered = (event: string) => arrivals.filter((x) => x.event === event && x.status === 204).length;
  await untilTrue(() => delivered("approval.requested") >= CALLS, 40_000);
  // Decided through the other instance's API than the one holding each.
  for (const [i, approval] of approvals.entries()) {
    const via = i % 2 === 0 ? b : a;
    expect((await via.api("POST", `/v1/approvals/${approval.id}/decision`, { body: { decision: "approve" } })).status).toBe(200);
  }
  for (const c of calls) expect((await c.done).status).toBe(200);

  const events = CALLS * 2;
  await untilTrue(() => delivered("approval.decided") >= CALLS, 40_000);
  // Past another retry's backoff and a sweep: nothing more arrives.
  await Bun.sleep(3000);
  expect(arrivals.every((x) => x.verified)).toBe(true);
  const byDelivery = Map.groupBy(arrivals, (x) => x.delivery);
  expect(byDelivery.size).toBe(events);
  for (const tries of byDelivery.values()) expect(tries.map((t) => t.status)).toEqual([503, 204]);
  for (const approval of approvals) {
    const delivered = arrivals.filter((x) => x.approvalId === approval.id && x.status === 204).map((x) => x.event).sort();
    expect(delivered).toEqual(["approval.decided", "approval.requested"]);
  }
  // Both instances sent some (each logs the attempts it made that failed).
  for (const c of [a, b]) expect(c.output()).toContain('"msg":"notification not delivered"');
  const log = (await a.api("GET", "/v1/notifications/deliveries?limit=100")).body.data;
  expect(log).toHaveLength(events);
  expect(log.every((d: any) => d.status === "delivered" && d.attempts === 2 && d.lastStatus === 204)).toBe(true);
}, 120_000);
