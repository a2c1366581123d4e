// The guidance stage (docs/gateway.md#guidance-rewrite): an uncredentialed request the upstream refuses for lack
// of credentials (401, 403, or a 400 that reads like an auth failure) gets JSON saying what the user has to
// do — access_restricted, app_not_connected or credential_not_found, in that order — with the status kept and
// x-should-retry: false. Credentialed replies and other 400s pass through untouched.
import { describe, expect, test } from "bun:test";
import { gatewayJson } from "../../../src/gateway/errors.ts";
import { Pipeline } from "../../../src/gateway/pipeline.ts";
import { Reply, StreamBody } from "../../../src/gateway/reply.ts";
import type { ProxyRequest } from "../../../src/gateway/request.ts";
import type { AgentCredentials } from "../../../src/gateway/snapshot.ts";
import { answer, INJECTIONS } from "../../../src/gateway/stage.ts";
import { guidanceStage } from "../../../src/gateway/stages/guidance.ts";
import { agentCredentials, agentEntry, compiledSecret, given, replyText, signIn, TestAgentSide, testRequest } from "../../../src/gateway/testing.ts";

const stage = guidanceStage({ publicUrl: "https://credgate.test/" });
const agent = agentEntry({ id: "agent-7", projectId: "project-7", identifier: "coder" });

function request(host: string, path: string, credentials: AgentCredentials = agentCredentials({ agent })): ProxyRequest {
  const rq = testRequest({ tunnel: host, target: path });
  signIn(rq, credentials);
  return rq;
}

function upstream(status: number, body: string): Reply {
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(body));
      c.close();
    },
  });
  const reply = new Reply(status, "", [["content-type", "application/json"]], new StreamBody(stream, body.length));
  reply.fromUpstream = true;
  return reply;
}

async function guided(rq: ProxyRequest, reply: Reply): Promise<{ status: number; retry: string | null; body: unknown }> {
  const out = await stage.response!(rq, reply);
  return { status: out.status, retry: out.header("x-should-retry"), body: JSON.parse(await replyText(out)) };
}

describe("rewrites", () => {
  test("no secret for the host → credential_not_found, status kept", async () => {
    expect(await guided(request("api.unknown.test", "/v1/x?q=1"), upstream(401, '{"error":"nope"}'))).toEqual({
      status: 401,
      retry: "false",
      body: {
        error: "credential_not_found",
        message: "No credentials configured for api.unknown.test in credgate. Ask the user to add a secret: https://credgate.test/p/project-7/secrets?create=generic&host=api.unknown.test",
        hostname: "api.unknown.test",
        path: "/v1/x",
        secret_url: "https://credgate.test/p/project-7/secrets?create=generic&host=api.unknown.test",
      },
    });
  });

  test("a catalog app's host → app_not_connected with the connect link", async () => {
    const { body } = await guided(request("api.github.com", "/user"), upstream(403, "{}"));
    expect(body).toEqual({
      error: "app_not_connected",
      message: `GitHub is not connected in credgate. Ask the user to open this URL to connect it: https://credgate.test/p/project-7/apps?connect=github&agent_name=coder`,
      provider: "github",
      connect_url: "https://credgate.test/p/project-7/apps?connect=github&agent_name=coder",
    });
  });

  test("a secret exists but is not granted to the agent → access_restricted with the agent's page", async () => {
    const secret = compiledSecret({ id: "s-1", name: "Stripe key", hostPattern: "api.stripe.com" });
    const rq = request("api.stripe.com", "/v1/charges", agentCredentials({ agent, visible: [secret], injectable: [] }));
    expect((await guided(rq, upstream(401, "{}"))).body).toEqual({
      error: "access_restricted",
      message: "Stripe key credentials exist in credgate but this agent does not have access. Ask the user to attach them to this agent: https://credgate.test/p/project-7/agents/agent-7",
      provider: "api.stripe.com",
      manage_url: "https://credgate.test/p/project-7/agents/agent-7",
    });
  });

  test("a database secret on the host is no HTTP credential: credential_not_found, not access_restricted (docs/databases.md#the-database-secret)", async () => {
    const db = compiledSecret({ id: "s-db", name: "orders", hostPattern: "db.example.com", injection: { database: { engine: "postgresql", user: "app" } } });
    const rq = request("db.example.com", "/admin", agentCredentials({ agent, visible: [db], injectable: [] }));
    expect((await guided(rq, upstream(401, "{}"))).body).toMatchObject({ error: "credential_not_found", hostname: "db.example.com" });
  });

  test("a 400 whose first bytes read like an auth failure is rewritten", async () => {
    expect((await guided(request("api.unknown.test", "/x"), upstream(400, '{"message":"Invalid API Key provided"}'))).body).toMatchObject({ error: "credential_not_found" });
  });
});

describe("left alone", () => {
  test("a 400 that is not about credentials passes byte for byte", async () => {
    const out = await stage.response!(request("api.unknown.test", "/x"), upstream(400, '{"message":"bad field"}'));
    expect(out.status).toBe(400);
    expect(await replyText(out)).toBe('{"message":"bad field"}');
  });

  test("a credentialed request's 401, a 200, and a reply to a request that was not forwarded", async () => {
    const credentialed = request("api.stripe.com", "/v1/charges");
    credentialed.applyCredential(compiledSecret({ hostPattern: "api.stripe.com" }), "sk_live_x");
    const r401 = upstream(401, "{}");
    expect(await stage.response!(credentialed, r401)).toBe(r401);
    const r200 = upstream(200, "{}");
    expect(await stage.response!(request("api.unknown.test", "/x"), r200)).toBe(r200);
  });

  test("a gRPC call's 401 passes untouched (a gRPC client cannot read JSON); the same call over plain HTTP is guided", async () => {
    const call = (grpc: boolean) => {
      const side = new TestAgentSide("POST", "/pkg.Service/Method", [["content-type", "application/grpc"]]);
      side.grpc = grpc;
      const rq = testRequest({ tunnel: "api.unknown.test", target: "/pkg.Service/Method", side });
      signIn(rq, agentCredentials({ agent }));
      rq.decision = "allowed";
      return rq;
    };
    const r401 = upstream(401, "{}");
    expect(await stage.response!(call(true), r401)).toBe(r401);
    expect((await guided(call(false), upstream(401, "{}"))).body).toMatchObject({ error: "credential_not_found" });
  });

  test("the gateway's own 403 (a request that never went upstream) is not rewritten", async () => {
    const policy = { error: "blocked_by_policy", message: "no" };
    const pipeline = new Pipeline([given("agent", "connection", ...INJECTIONS), stage, { name: "blocks", request: () => answer("blocked", gatewayJson(403, policy)) }]);
    const rq = request("api.unknown.test", "/x");
    const reply = await pipeline.request(rq);
    expect(rq.forwarded).toBe(false);
    expect(JSON.parse(await replyText(reply))).toEqual(policy);
  });
});
