// The runner (src/gateway/pipeline.ts) on stages written here — a Stage is the gateway's extension point, and
// these are stages like any other: request hooks top to bottom until one answers, synchronously until one
// returns a promise; the decision taken from the verdicts; the response hooks of the stages reached, bottom to
// top; a failing hook answered 502 bad_gateway; the connect hooks and the connected hooks of a CONNECT; the
// real list, in the documented order; and the order checked against the stages' contracts when a pipeline is
// built (docs/architecture.md#stage-contracts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { log } from "../../../src/observability/log.ts";
import { errorBody } from "./helpers.ts";
import { checkOrder, gatewayStages, Pipeline, type PipelineDeps } from "../../../src/gateway/pipeline.ts";
import { Reply } from "../../../src/gateway/reply.ts";
import { answer, INJECTIONS, PASS, proceedAs, relay, type ConnectVerdict, type Stage } from "../../../src/gateway/stage.ts";
import { testPipelineDeps, testRequest, testTunnel } from "../../../src/gateway/testing.ts";
import { createTestApi } from "../../support/app.ts";

beforeAll(() => log.setQuiet(true));

const request = () => testRequest({ tunnel: "api.example.test", target: "/x" });

/** A stage that notes each hook call in `calls` and answers with what it is given. */
function noting(name: string, calls: string[], hooks: Partial<Stage> = {}): Stage {
  return {
    name,
    request: hooks.request ?? (() => (calls.push(`request:${name}`), PASS)),
    response: hooks.response ?? ((_rq, reply) => (calls.push(`response:${name}`), reply)),
    ...(hooks.connect ? { connect: hooks.connect } : {}),
    ...(hooks.connected ? { connected: hooks.connected } : {}),
  };
}

const ok = () => relay(new Reply(200, "OK", [["content-type", "text/plain"]], null));

describe("request hooks", () => {
  test("run in order until one answers; the response hooks of the stages reached run back, last first", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline([
      noting("a", calls),
      noting("b", calls),
      noting("answers", calls, { request: () => (calls.push("request:answers"), answer("blocked", new Response("no", { status: 403 }))) }),
      noting("never", calls),
    ]);
    const rq = request();
    const reply = pipeline.request(rq);
    // Every hook was synchronous: so is the runner.
    expect(reply).toBeInstanceOf(Reply);
    expect(calls).toEqual(["request:a", "request:b", "request:answers", "response:answers", "response:b", "response:a"]);
    expect((reply as Reply).status).toBe(403);
    expect(rq.decision).toBe("blocked");
  });

  test("a promise pauses the run; the rest goes on from its verdict", async () => {
    const calls: string[] = [];
    const pipeline = new Pipeline([
      noting("sync", calls),
      noting("waits", calls, { request: () => Promise.resolve().then(() => (calls.push("request:waits"), PASS)) }),
      noting("last", calls, { request: () => (calls.push("request:last"), ok()) }),
    ]);
    const pending = pipeline.request(request());
    expect(pending).toBeInstanceOf(Promise);
    expect(calls).toEqual(["request:sync"]);
    const reply = await pending;
    expect(reply.status).toBe(200);
    expect(calls).toEqual(["request:sync", "request:waits", "request:last", "response:last", "response:waits", "response:sync"]);
  });

  test("a relayed reply keeps the decision so far; proceedAs changes it and goes on", async () => {
    const rq = request();
    await new Pipeline([{ name: "approves", request: () => proceedAs("approval_approved") }, { name: "forward", request: ok }]).request(rq);
    expect(rq.decision).toBe("approval_approved");
    expect(rq.forwarded).toBe(true);
    const plain = request();
    await new Pipeline([{ name: "forward", request: ok }]).request(plain);
    expect(plain.decision).toBe("allowed");
  });

  test("a hook that throws or rejects: 502 bad_gateway, decision error; the response hooks before it still run", async () => {
    for (const failing of [
      () => {
        throw new Error("boom");
      },
      () => Promise.reject(new Error("boom")),
    ]) {
      const calls: string[] = [];
      const rq = request();
      const reply = await new Pipeline([noting("first", calls), { name: "fails", request: failing }, noting("never", calls)]).request(rq);
      expect(reply.status).toBe(502);
      expect(await errorBody(reply)).toEqual({ error: "bad_gateway", message: "credgate gateway internal error." });
      expect(rq.decision).toBe("error");
      expect(calls).toEqual(["request:first", "response:first"]);
    }
  });

  test("a response hook may replace the reply (the ones before it get the new one); one that fails is skipped", async () => {
    const seen: number[] = [];
    const reply = await new Pipeline([
      { name: "sees", response: (_rq, r) => (seen.push(r.status), r) },
      {
        name: "replaces",
        response: () => Promise.resolve(Reply.of(new Response("x", { status: 418 }))),
      },
      {
        name: "fails",
        response: () => {
          throw new Error("boom");
        },
      },
      { name: "forward", request: ok },
    ]).request(request());
    expect(reply.status).toBe(418);
    expect(seen).toEqual([418]);
  });

  test("the gateway's own answers carry the request's x-request-id; an upstream's reply is relayed as it is", async () => {
    const rq = testRequest({ tunnel: "api.example.test", target: "/x", headers: { "x-request-id": "req-123" } });
    const own = await new Pipeline([{ name: "answers", request: () => answer("blocked", new Response("no", { status: 403 })) }]).request(rq);
    expect(own.headers.get("x-request-id")).toBe("req-123");
    const upstream = new Reply(200, "OK", [["x-up", "1"]], null);
    upstream.fromUpstream = true;
    const relayed = await new Pipeline([{ name: "forward", request: () => relay(upstream) }]).request(rq);
    expect(relayed.header("x-request-id")).toBeNull();
  });

  test("a list that never answers is a gap: 502, decision error", async () => {
    const rq = request();
    const reply = await new Pipeline([{ name: "passes", request: () => PASS }]).request(rq);
    expect(reply.status).toBe(502);
    expect(rq.decision).toBe("error");
  });
});

describe("connect hooks", () => {
  test("run in order until one answers; PASS when none does; connected hooks hear the answer, last stage first", async () => {
    const calls: string[] = [];
    const stage = (name: string, verdict: ConnectVerdict = PASS): Stage => ({
      name,
      connect: () => (calls.push(`connect:${name}`), verdict),
      connected: (t) => void calls.push(`connected:${name}:${t.status}:${t.decision}`),
    });
    const refused = answer("blocked", { status: 403, body: { error: "egress_denied", message: "no" } });
    const pipeline = new Pipeline([stage("a"), { name: "no connect hook" }, stage("refuses", refused), stage("never")]);
    const tunnel = testTunnel({ authority: "api.example.test:443" });
    const verdict = await pipeline.connect(tunnel);
    expect(verdict).toBe(refused);
    expect(tunnel.decision).toBe("blocked");
    pipeline.connected(tunnel, 403, verdict);
    expect(calls).toEqual(["connect:a", "connect:refuses", "connected:never:403:blocked", "connected:refuses:403:blocked", "connected:a:403:blocked"]);

    const open = testTunnel({ authority: "api.example.test:443" });
    expect(await new Pipeline([stage("x"), { name: "waits", connect: () => Promise.resolve(PASS) }]).connect(open)).toBe(PASS);
  });

  test("a failing connect hook refuses the CONNECT with 502 bad_gateway, decision error", async () => {
    const tunnel = testTunnel({ authority: "api.example.test:443" });
    const verdict = await new Pipeline([{ name: "fails", connect: () => Promise.reject(new Error("boom")) }]).connect(tunnel);
    expect(verdict.response).toEqual({ status: 502, body: { error: "bad_gateway", message: "credgate gateway internal error." } });
    expect(tunnel.decision).toBe("error");
  });
});

describe("the gateway's list", () => {
  let deps: PipelineDeps;
  beforeAll(async () => {
    const api = await createTestApi();
    deps = await testPipelineDeps(api.core.config, api.core.services);
  });
  afterAll(() => deps.upstreams.close());

  test("every stage in the documented order, the forward stage last", () => {
    const names = gatewayStages(deps).map((s) => s.name);
    expect(names).toEqual([
      "log",
      "auth",
      "target",
      "cloud-placeholders",
      "egress",
      "passthrough",
      "intercept",
      "connection",
      "policy",
      "resources",
      "leak-guard",
      "inject-connection",
      "inject",
      "mcp",
      "github-app",
      "cloud-token",
      "aws-check",
      "cleartext",
      "claim",
      "echo-guard",
      "budget",
      "approval",
      "mcp-tools",
      "placeholder",
      "websocket-frames",
      "guidance",
      "aws-sign",
      "forward",
    ]);
  });

  test("every stage declares what it reads and provides, and the list's order keeps every contract", () => {
    const stages = gatewayStages(deps);
    for (const stage of stages) {
      expect({ stage: stage.name, reads: Array.isArray(stage.reads), provides: Array.isArray(stage.provides) }).toEqual({ stage: stage.name, reads: true, provides: true });
    }
    expect(() => checkOrder(stages)).not.toThrow();
    expect(() => new Pipeline(stages)).not.toThrow();
  });

  test("budget moved before inject: the pipeline refuses to be built, naming the stage and the key", () => {
    const stages = gatewayStages(deps);
    const budget = stages.findIndex((s) => s.name === "budget");
    const [moved] = stages.splice(budget, 1);
    stages.splice(stages.findIndex((s) => s.name === "inject"), 0, moved!);
    expect(() => new Pipeline(stages)).toThrow('gateway pipeline: stage "budget" reads "secrets", which no earlier stage provides (stage "inject" provides it, later in the list)');
  });

  test("a stage before auth that reads the agent, and a key no stage provides, fail the same way", () => {
    const stages = gatewayStages(deps);
    const policy = stages.splice(stages.findIndex((s) => s.name === "policy"), 1)[0]!;
    expect(() => checkOrder([policy, ...stages])).toThrow('stage "policy" reads "agent", which no earlier stage provides (stage "auth" provides it, later in the list)');
    const withoutEgress = gatewayStages(deps).filter((s) => s.name !== "egress");
    expect(() => checkOrder(withoutEgress)).toThrow('stage "cleartext" reads "dial", which no earlier stage provides (no stage in the list provides it)');
  });

  test("docs/gateway.md's stage table shows every stage's contract as declared", () => {
    const table = new Map<string, string>();
    for (const m of readFileSync(join(import.meta.dir, "../../../docs/gateway.md"), "utf8").matchAll(/^\| `([a-z-]+)` \| [^|]+ \| ([^|]+) \|/gm)) table.set(m[1]!, m[2]!.trim());
    const shown = (keys: readonly string[]) => keys.join(", ").replace(INJECTIONS.join(", "), "INJECTIONS");
    for (const stage of gatewayStages(deps)) {
      const reads = shown(stage.reads!);
      const provides = shown(stage.provides!);
      const cell = reads === "" && provides === "" ? "—" : `${reads} → ${provides}`.trim();
      expect({ stage: stage.name, contract: table.get(stage.name)?.replace(/`/g, "") }).toEqual({ stage: stage.name, contract: cell });
    }
  });

  test("two stages that provide the same key are refused", () => {
    const second: Stage = { name: "second-auth", reads: [], provides: ["agent"] };
    expect(() => checkOrder([...gatewayStages(deps), second])).toThrow('gateway pipeline: stages "auth" and "second-auth" both provide "agent"; each key has one provider');
  });
});
